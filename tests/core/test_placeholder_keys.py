"""A teacher reply that uses the template's example name as a JSON key is rejected
(``template_echo``), even where the parser would drop that key and keep the rest: the reply
copied the instructions' example, as a value that repeats it does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.core.pipeline_support import folder, make_config, meta, mock_model, run, task

_MAP_PROMPT = "Name the dimensions along which"
_RUBRIC_PROMPT = "Propose three to six criteria"
_ITEM_PROMPT = "Write one test item"


def _run(tmp_path: Path, replies: dict[str, str], **task_settings: Any) -> tuple[Any, dict[str, Any]]:
    config = make_config(
        tmp_path,
        [mock_model("t", ["teacher"], replies=replies), mock_model("s", ["student", "judge"])],
        [task(sampling={"target": [1, 1], "nuance": [0, 0], "total": 2}, **task_settings)],
    )
    run(config)
    return folder(config), meta(folder(config))


def test_an_attribute_map_reply_with_the_example_name_as_an_extra_key_is_rejected(tmp_path: Path) -> None:
    reply = json.dumps({"attributes": [{"name": "difficulty", "values": ["easy", "hard"]}],
                        "dimension_name": ["value_a", "value_b"]})
    run_folder, info = _run(tmp_path, {_MAP_PROMPT: reply}, target_attributes="auto", nuanced_attributes={})
    assert info["item_quality"]["rejected"] == {"t": {"template_echo": 3}}  # the call and its two retries
    assert not run_folder.target_attrs_path("qa").exists()


def test_an_attribute_map_reply_keyed_by_the_example_name_is_rejected(tmp_path: Path) -> None:
    reply = json.dumps({"dimension_name": ["easy", "hard"]})
    _run_folder, info = _run(tmp_path, {_MAP_PROMPT: reply}, target_attributes="auto", nuanced_attributes={})
    assert info["item_quality"]["rejected"] == {"t": {"template_echo": 3}}


def test_a_rubric_reply_with_the_example_name_as_an_extra_key_is_rejected(tmp_path: Path) -> None:
    reply = json.dumps({"factors": [{"name": "accuracy", "description": "The answer is right."}],
                        "dimension_name": "The answer is right."})
    run_folder, info = _run(tmp_path, {_RUBRIC_PROMPT: reply}, rubric="auto")
    assert info["item_quality"]["rejected"] == {"t": {"template_echo": 3}}
    assert not run_folder.rubric_path("qa").exists()


def test_a_datapoint_reply_with_the_example_name_as_a_key_is_rejected(tmp_path: Path) -> None:
    reply = json.dumps({"prompt": "Which river flows through Cairo?", "response": "The Nile flows through Cairo.",
                        "dimension_name": "geography"})
    run_folder, info = _run(tmp_path, {_ITEM_PROMPT: reply})
    assert info["item_quality"]["rejected"] == {"t": {"template_echo": 6}}  # 2 datapoints, 3 tries each
    assert _ok_datapoints(run_folder) == []


def _ok_datapoints(run_folder: Any) -> list[dict[str, Any]]:
    return [r for r in (json.loads(line) for p in run_folder.jsonl_files("data_generation")
                        for line in p.read_text().splitlines()) if r.get("status") == "ok"]


def test_a_clean_reply_with_an_unrelated_extra_key_is_kept(tmp_path: Path) -> None:
    reply = json.dumps({"attributes": [{"name": "difficulty", "values": ["easy", "hard"]}], "notes": "two levels"})
    run_folder, info = _run(tmp_path, {_MAP_PROMPT: reply}, target_attributes="auto", nuanced_attributes={})
    assert "item_quality" not in info or not info["item_quality"].get("rejected")
    assert json.loads(run_folder.target_attrs_path("qa").read_text()) == {"difficulty": ["easy", "hard"]}


_OWN_SAMPLE = ("Write one test item for this task: {task_description}\n"
               "It must have: {target_attributes}\n"
               "Reply with JSON only, in this form:\n"
               '{{"prompt": "...", "response": "...", "topic": "topic_name"}}\n')


def test_a_key_a_prompt_library_example_has_is_schema_and_its_example_value_is_not(tmp_path: Path) -> None:
    kept = json.dumps({"prompt": "Which river flows through Cairo?", "response": "The Nile flows through Cairo.",
                       "topic": "geography"})
    run_folder, info = _run(tmp_path / "kept", {_ITEM_PROMPT: kept}, prompt_library={"sample": _OWN_SAMPLE})
    assert not (info.get("item_quality") or {}).get("rejected")
    assert len(_ok_datapoints(run_folder)) == 2
    echoed = json.dumps({"prompt": "Which river flows through Cairo?", "response": "The Nile flows through Cairo.",
                         "topic_name": "geography"})
    _run_folder, info = _run(tmp_path / "echoed", {_ITEM_PROMPT: echoed}, prompt_library={"sample": _OWN_SAMPLE})
    assert info["item_quality"]["rejected"] == {"t": {"template_echo": 6}}
