"""A lone UTF-16 surrogate (a cut-off emoji escape) never stops a run: a model reply that
has one is stored with it replaced (U+FFFD) and the record says so; a record on disk that
has one (written by another tool) is read the same way, so --continue goes on."""

from __future__ import annotations

import json
from pathlib import Path

from coeval.storage.run_folder import JsonlWriter, iter_jsonl

from tests.core.pipeline_support import folder, lines, make_config, mock_model, run, task


def test_a_reply_with_a_lone_surrogate_is_stored_replaced_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    with JsonlWriter(path) as writer:
        writer.write({"id": "r1", "response": "smile \ud83d then", "status": "ok"})
    (rec,) = list(iter_jsonl(path))
    assert rec["response"] == "smile \ufffd then"
    assert rec["text_replaced"] == "lone UTF-16 surrogates replaced by U+FFFD"


def test_continue_goes_on_over_a_record_with_an_escaped_lone_surrogate(tmp_path: Path) -> None:
    config = make_config(tmp_path, [mock_model("a", seed=1)], [task(total=3)])
    assert run(config).exit_code == 0
    rf = folder(config)
    (datapoints,) = rf.jsonl_files("data_generation")
    first, *rest = datapoints.read_text().splitlines(keepends=True)
    rec = json.loads(first)
    rec["prompt"] = rec["prompt"] + " \ud83d"
    datapoints.write_text(json.dumps(rec) + "\n" + "".join(rest))  # ensure_ascii: written as \\ud83d
    for path in rf.jsonl_files("response_collection"):
        path.write_text("")  # the answers are made again from the datapoints
    result = run(config, continue_run=True)
    assert result.exit_code == 0, result.message
    answered = [r for r in lines(rf, "response_collection") if r["datapoint_id"] == rec["id"]]
    assert answered and answered[0]["input"].endswith(" \ufffd")
