"""``tasks[].data`` that cannot be read as written: a misspelt key, a file that starts with a
byte-order mark (as spreadsheets save CSV), a file that is not UTF-8. Each is one problem
naming the file, the field and the rule (exit code 2, no traceback), found while validating,
before any call; a byte-order mark is read as such."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli


def _config(folder: Path, data: dict[str, Any]) -> Path:
    raw = {
        "models": [
            {"name": "student", "interface": "mock", "roles": ["student"]},
            {"name": "judge", "interface": "mock", "roles": ["judge"]},
        ],
        "tasks": [{"name": "qa", "description": "Answer the question.", "data": data,
                   "rubric": {"right": "The answer is right."}}],
        "experiment": {"id": "qa-run", "storage_folder": "runs", "probe_mode": "disable"},
    }
    path = folder / "qa.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


def _jsonl(path: Path, rows: list[dict[str, str]], *, bom: bool = False) -> None:
    text = "".join(json.dumps(r) + "\n" for r in rows)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))


ROWS = [{"question": "What is 2 + 2?", "answer": "4"}, {"question": "The capital of France?", "answer": "Paris"}]


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def _problems(output: str, config: Path) -> list[str]:
    """The problem lines of a validation report (``file:line: V-nn path: message``), each
    checked to name the config file and a line, then given without them."""
    lines = [line for line in output.splitlines() if ": V-" in line]
    assert all(re.match(rf"{re.escape(str(config))}:\d+: V-", line) for line in lines), lines
    return [line.split(": ", 1)[1] for line in lines]


@pytest.mark.parametrize("mode", [["--dry-run"], []], ids=["dry-run", "run"])
def test_a_misspelt_required_data_key_is_one_problem_with_a_did_you_mean(work: Path, mode: list[str]) -> None:
    _jsonl(work / "qa.jsonl", ROWS)
    config = _config(work, {"file": "qa.jsonl", "promt": "question"})
    result = _invoke("run", str(config), *mode)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert _problems(result.output, config) == [
        "V-18 tasks[0].data.promt: unknown key 'promt' (did you mean 'prompt'?)"]
    assert "rename 'promt' to 'prompt'" in result.output
    assert not (work / "runs").exists()  # found while validating: nothing was written


def test_a_misspelt_optional_data_key_gets_a_did_you_mean_too(work: Path) -> None:
    _jsonl(work / "qa.jsonl", ROWS)
    config = _config(work, {"file": "qa.jsonl", "prompt": "question", "refrence": "answer"})
    result = _invoke("run", str(config), "--dry-run")
    assert result.exit_code == 2, result.output
    assert _problems(result.output, config) == [
        "V-18 tasks[0].data.refrence: unknown key 'refrence' (did you mean 'reference'?)"]


def test_a_missing_prompt_key_without_a_look_alike_is_one_problem(work: Path) -> None:
    _jsonl(work / "qa.jsonl", ROWS)
    config = _config(work, {"file": "qa.jsonl"})
    result = _invoke("run", str(config), "--dry-run")
    assert result.exit_code == 2, result.output
    assert _problems(result.output, config) == ["V-19 tasks[0].data.prompt: required key 'prompt' is missing"]


def _datapoints(work: Path) -> list[dict[str, Any]]:
    path = work / "runs" / "qa-run" / "phase3_datapoints" / "qa.qa-data.datapoints.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_csv_with_a_byte_order_mark_is_read_as_utf8(work: Path) -> None:
    text = "question,answer\r\nWhat is 2 + 2?,4\r\nThe capital of France?,Paris\r\n"
    (work / "qa.csv").write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    config = _config(work, {"file": "qa.csv", "prompt": "question", "reference": "answer"})
    result = _invoke("run", str(config))
    assert result.exit_code == 0, result.output
    dps = _datapoints(work)
    assert [d["prompt"] for d in dps] == ["What is 2 + 2?", "The capital of France?"]
    assert [d["reference_response"] for d in dps] == ["4", "Paris"]


def test_a_jsonl_with_a_byte_order_mark_is_read_as_utf8(work: Path) -> None:
    _jsonl(work / "qa.jsonl", ROWS, bom=True)
    config = _config(work, {"file": "qa.jsonl", "prompt": "question", "reference": "answer"})
    result = _invoke("run", str(config))
    assert result.exit_code == 0, result.output
    assert [d["prompt"] for d in _datapoints(work)] == ["What is 2 + 2?", "The capital of France?"]


@pytest.mark.parametrize(("name", "content", "where"), [
    ("qa.csv", "question,answer\nWhat is 2 + 2?,4\nCaf\xe9 au lait?,yes\n", "line 3"),
    ("qa.jsonl", '{"question": "What is 2 + 2?", "answer": "4"}\n{"question": "Caf\xe9?", "answer": "yes"}\n',
     "line 2"),
], ids=["csv", "jsonl"])
def test_a_latin1_file_is_one_problem_asking_to_resave_it_as_utf8(work: Path, name: str, content: str,
                                                                 where: str) -> None:
    (work / name).write_bytes(content.encode("latin-1"))
    config = _config(work, {"file": name, "prompt": "question"})
    result = _invoke("run", str(config), "--dry-run")
    assert result.exit_code == 2, result.output
    problems = _problems(result.output, config)
    assert len(problems) == 1, result.output
    line = " ".join(result.output.split())
    assert problems[0].startswith("V-61 tasks[0].data.file: ")
    assert f"{work / name}: {where} (byte " in line and "is not UTF-8" in line
    assert "re-save it as UTF-8" in line
    assert not (work / "runs").exists()


def test_a_utf16_csv_is_named_as_such(work: Path) -> None:
    (work / "qa.csv").write_bytes("question,answer\r\nWhat is 2 + 2?,4\r\n".encode("utf-16"))
    config = _config(work, {"file": "qa.csv", "prompt": "question"})
    result = _invoke("run", str(config), "--dry-run")
    assert result.exit_code == 2, result.output
    line = " ".join(result.output.split())
    assert len(_problems(result.output, config)) == 1
    assert f"{work / 'qa.csv'}: line 1 (byte 0) is not UTF-8" in line
    assert "it starts with a UTF-16 byte-order mark); re-save it as UTF-8" in line
