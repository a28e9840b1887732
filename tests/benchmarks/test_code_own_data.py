"""A config's own code task (``tasks[].data`` with ``checker: python_tests``) runs the program
``coeval ingest -b humaneval`` would: the prompt's code (or a ``data.code_prefix`` column)
before a body-only reply, as HumanEval's harness does, and the record keeps the program that
ran. Without bubblewrap, ``coeval run`` refuses as documented: every code record ``failed``
with the reason, the run's exit code, and the flag that runs it anyway."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval.cli.run_cmd import ALLOW_UNSANDBOXED_ENV as CORE_NAME
from coeval_benchmarks.sandbox.policy import ALLOW_UNSANDBOXED_ENV

ADD = 'def add(a, b):\n    """The sum of a and b."""\n'
ROWS = [
    # HumanEval's shape: the prompt is the code to complete
    {"prompt": ADD, "tests": "def check(f):\n    assert f(2, 3) == 5\n", "entry": "add", "prefix": ADD},
    # prose prompt: the code to complete is in its own column
    {"prompt": "Write neg(x), which returns minus x.", "tests": "def check(f):\n    assert f(4) == -4\n",
     "entry": "neg", "prefix": "def neg(x):\n"},
]
BODIES = {"def add": "```python\n    return a + b\n```", "Write neg": "```python\n    return -x\n```"}


def _config(folder: Path, data: dict[str, Any]) -> Path:
    (folder / "code.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    raw = {
        "models": [{"name": "bodies", "interface": "mock", "roles": ["student"], "parameters": {"replies": BODIES}}],
        "tasks": [{"name": "code", "description": "Write the function.", "checker": "python_tests",
                   "data": {"file": "code.jsonl", "prompt": "prompt", "tests": "tests", "entry_point": "entry", **data},
                   "rubric": {"pass@1": {"evaluator": "python_tests", "params": {"workers": 2, "timeout_s": 3}}}}],
        "experiment": {"id": "own-code", "storage_folder": str(folder / "runs"), "probe_mode": "disable"},
    }
    path = folder / "code.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def _checks(folder: Path) -> dict[str, dict[str, Any]]:
    records = [json.loads(line) for p in sorted((folder / "runs" / "own-code" / "phase5_evaluations").glob("*.jsonl"))
               for line in p.read_text(encoding="utf-8").splitlines()]
    return {r["datapoint_id"]: r for r in records if r["judge_model_id"] == "python_tests"}


@pytest.mark.slow
def test_body_only_replies_get_the_prompts_code_or_the_code_prefix_column(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["run", str(_config(tmp_path, {"code_prefix": "prefix"}))])
    assert result.exit_code == 0, result.output
    checks = _checks(tmp_path)
    assert {dp: r["scores"] for dp, r in checks.items()} == {
        "code__code-data__row000001": {"pass@1": 1.0}, "code__code-data__row000002": {"pass@1": 1.0}}
    first = checks["code__code-data__row000001"]["execution"]
    assert first["program"] == ADD + "    return a + b\ndef check(f):\n    assert f(2, 3) == 5\n\ncheck(add)\n"
    assert first["status"] == "passed" and first["sandbox"] == "bubblewrap" and first["error"] == ""
    assert set(first) == {"status", "error", "duration_s", "sandbox", "network_isolated", "stdout_bytes",
                          "stderr_bytes", "program", "program_sha256"}


@pytest.mark.slow
def test_without_the_column_a_prose_prompt_is_not_code_to_complete(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["run", str(_config(tmp_path, {}))])
    assert result.exit_code == 0, result.output
    checks = _checks(tmp_path)
    assert checks["code__code-data__row000001"]["scores"] == {"pass@1": 1.0}  # the prompt is the prefix
    second = checks["code__code-data__row000002"]
    assert second["scores"] == {"pass@1": 0.0}
    assert second["execution"]["program"].startswith("    return -x\n")
    assert "IndentationError" in second["execution"]["error"]


@pytest.mark.slow
def test_without_bubblewrap_the_run_refuses_and_says_how_to_go_on(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    assert CORE_NAME == ALLOW_UNSANDBOXED_ENV
    monkeypatch.delenv(ALLOW_UNSANDBOXED_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "no-bwrap-here"))
    config = _config(tmp_path, {"code_prefix": "prefix"})
    result = CliRunner().invoke(cli, ["run", str(config)])
    assert result.exit_code == 1, result.output  # a run with failed items, for --continue to retry
    assert "run incomplete" in result.output and "2 items failed" in result.output
    checks = _checks(tmp_path)
    assert len(checks) == 2
    for record in checks.values():
        assert record["status"] == "failed" and record["scores"] == {} and record["error_kind"] == "evaluator"
        assert record["error"].startswith("evaluator: bubblewrap (bwrap) is not installed")
        assert "install the bubblewrap package" in record["error"] and "--allow-unsandboxed-code" in record["error"]
        assert "execution" not in record
    assert "bubblewrap (bwrap) is not installed" in result.output
    # the documented way on: --allow-unsandboxed-code runs them, and the records say so
    result = CliRunner().invoke(cli, ["run", str(config), "--continue", "--allow-unsandboxed-code"])
    assert result.exit_code == 0, result.output
    checks = _checks(tmp_path)
    assert {r["status"] for r in checks.values()} == {"ok"}
    assert {r["execution"]["sandbox"] for r in checks.values()} == {"none"}
    assert {r["execution"]["network_isolated"] for r in checks.values()} == {False}


def test_bad_python_tests_params_stop_validation(tmp_path: Path) -> None:
    config = _config(tmp_path, {})
    raw = yaml.safe_load(config.read_text(encoding="utf-8"))
    for params, message in [({"workers": 0}, "workers must be a whole number from 1 to 256; got 0"),
                            ({"timeout_s": -1}, "timeout_s must be a number of seconds above 0, at most 600; got -1"),
                            ({"memory": 1}, "only workers and timeout_s can be set")]:
        raw["tasks"][0]["rubric"]["pass@1"]["params"] = params
        config.write_text(yaml.safe_dump(raw), encoding="utf-8")
        result = CliRunner().invoke(cli, ["plan", str(config)])
        assert result.exit_code == 2, result.output
        out = " ".join(result.output.split())
        assert "code.yaml:" in out and "V-60 tasks[0].rubric['pass@1'].params:" in out and message in out, out
    raw["tasks"][0]["rubric"]["pass@1"]["params"] = {"workers": 4, "timeout_s": 1.5}
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    assert CliRunner().invoke(cli, ["plan", str(config)]).exit_code == 0
