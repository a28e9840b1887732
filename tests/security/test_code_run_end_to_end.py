"""``coeval run`` with hostile students on a code task: the run finishes (exit code 0), every
program gets a verdict, only the honest one passes, nothing is written outside the sandbox
(the run's own files included), no secret reaches the run folder, and no process a program
started outlives its check."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli

from tests.security.test_code_sandbox_attacks import _left, _mark

ROWS = [
    {"prompt": 'def add(a, b):\n    """The sum of a and b."""\n', "tests": "def check(f):\n    assert f(2, 3) == 5\n",
     "entry": "add"},
    {"prompt": 'def neg(x):\n    """Minus x."""\n', "tests": "def check(f):\n    assert f(4) == -4\n", "entry": "neg"},
]


def _fenced(code: str) -> str:
    return f"```python\n{code}```"


def _students(run: Path, outside: Path, marker: str) -> dict[str, dict[str, str]]:
    """Each student's replies: the honest one answers with the body only (HumanEval's format)."""
    wrong = {"def add": "def add(a, b):\n    return a - b\n", "def neg": "def neg(x):\n    return x\n"}

    def hostile(attack: str) -> dict[str, str]:
        return {key: _fenced(code + attack) for key, code in wrong.items()}

    return {
        "honest": {"def add": _fenced("    return a + b\n"), "def neg": _fenced("    return -x\n")},
        "exiter": hostile("import sys\nsys.exit(0)\n"),
        "killer": hostile("import os, signal\nsignal.pidfd_send_signal(os.pidfd_open(os.getppid()), signal.SIGKILL)\n"
                          "os.kill(-1, signal.SIGKILL)\n"),
        "writer": hostile(
            "import glob, os\n"
            f"for name in glob.glob({str(run) + '/*/*.jsonl'!r}):\n"
            "    open(name, 'a').write('{\"id\": \"forged\"}\\n')\n"
            f"fd = os.open({str(outside)!r}, os.O_RDONLY)\n"
            "os.close(os.open('planted', os.O_CREAT | os.O_WRONLY, dir_fd=fd))\n"),
        "reader": hostile("import os\nprint(open(os.path.expanduser('~/.coeval/keys.yaml')).read())\n"
                          "print(dict(os.environ))\n"),
        "bomber": hostile("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"),
        "lingerer": hostile("import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
                            f"        {_mark(marker).strip()}\n        os.close(2)\n        time.sleep(60)\n"
                            "    os._exit(0)\n"),
    }


@pytest.mark.slow
def test_coeval_run_with_hostile_students(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-e2e-" + secrets.token_hex(16)
    home = tmp_path / "home"
    (home / ".coeval").mkdir(parents=True)
    (home / ".coeval" / "keys.yaml").write_text(f"providers:\n  openai:\n    api_key: {key}\n", encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.delenv("COEVAL_ALLOW_UNSANDBOXED_CODE", raising=False)
    project = tmp_path / "project"
    project.mkdir()
    (project / "code.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    run = tmp_path / "runs" / "e2e"
    marker = "cv-e2e-" + secrets.token_hex(3)
    students = _students(run, outside, marker)
    raw: dict[str, Any] = {
        "models": [{"name": name, "interface": "mock", "roles": ["student"], "parameters": {"replies": replies}}
                   for name, replies in students.items()],
        "tasks": [{"name": "code", "description": "Write the function.", "checker": "python_tests",
                   "data": {"file": "code.jsonl", "prompt": "prompt", "tests": "tests", "entry_point": "entry"},
                   "rubric": {"pass@1": {"evaluator": "python_tests", "params": {"workers": 2, "timeout_s": 2}}}}],
        "experiment": {"id": "e2e", "storage_folder": str(tmp_path / "runs"), "probe_mode": "disable"},
    }
    config = project / "code.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")

    result = CliRunner().invoke(cli, ["run", str(config)])

    assert result.exit_code == 0, result.output
    records = [json.loads(line) for p in sorted((run / "phase5_evaluations").glob("*.jsonl"))
               for line in p.read_text(encoding="utf-8").splitlines()]
    checks = {(r["student_model_id"], r["datapoint_id"]): r for r in records if r["judge_model_id"] == "python_tests"}
    assert len(checks) == len(students) * len(ROWS)
    assert all(r["status"] == "ok" and r["execution"]["sandbox"] == "bubblewrap" for r in checks.values())
    passed = {student for (student, _dp), r in checks.items() if r["scores"] == {"pass@1": 1.0}}
    assert passed == {"honest"}
    assert all(r["scores"] == {"pass@1": 0.0} for (s, _dp), r in checks.items() if s != "honest")
    assert {r["execution"]["status"] for (s, _dp), r in checks.items() if s == "bomber"} == {"timeout"}
    honest = checks[("honest", "code__code-data__row000001")]["execution"]
    assert honest["program"].startswith(ROWS[0]["prompt"] + "    return a + b\n")  # the prefix, then the body
    # nothing written outside: not the run's own files, not the folder the program knew of
    assert list(outside.iterdir()) == []
    for path in run.rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            assert '{"id": "forged"}\n' not in text.replace(" ", "").replace('{"id":"forged"}', '{"id": "forged"}'), path
            assert key not in text and key[:12] not in text, path
    assert _left(marker) == []
