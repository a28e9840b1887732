"""Text from a run (a model's error message, model and experiment ids someone edited) is
shown on the console as text: no control sequence reaches the terminal (window title,
clear screen, OSC 8 links) and no rich markup is interpreted or crashes the command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from coeval_testing.synthetic import SyntheticSpec, write_synthetic_run

HOSTILE_ERROR = ("boom \x1b]0;pwned-title\x07\x1b[2J\x1b]8;;https://evil.example\x07click\x1b]8;;\x07"
                 "\x9b31m\u202eevil\x00end")
MARKUP_STUDENT = "evil[/x]"


def _coeval(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "coeval.cli.main", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=240, check=False)


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("console")
    spec = SyntheticSpec(students={"evil-x": 0.7, "stu-b": 0.5}, judges={"judge-1": 0.1, "judge-2": 0.1},
                         random_judges=(), datapoints_per_teacher=3)
    run = write_synthetic_run(root / "run", spec)
    for path in (p for p in run.rglob("*") if p.is_file()):  # ids edited inside the files, not their names
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("evil-x", MARKUP_STUDENT).replace("judge-2", "judge-[bold]2"), encoding="utf-8")
    evals = sorted((run / "phase5_evaluations").glob("*.jsonl"))[0]
    lines = evals.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first.update(status="failed", scores={}, error=HOSTILE_ERROR)
    evals.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    meta = json.loads((run / "meta.json").read_text(encoding="utf-8"))
    meta["experiment_id"] = "exp[/bold]\x1b[2J"
    (run / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return run


def _clean(text: str) -> None:
    for bad in ("\x1b", "\x07", "\x9b", "\x00", "\u202e"):
        assert bad not in text, repr(bad)


@pytest.mark.slow
def test_status_prints_hostile_text_as_text(hostile_run: Path) -> None:
    done = _coeval("status", "--run", str(hostile_run), cwd=hostile_run.parent)
    assert "Traceback" not in done.stderr and "MarkupError" not in done.stderr, done.stderr
    assert done.returncode in (0, 1), done.stderr
    _clean(done.stdout + done.stderr)
    assert "pwned-title" in done.stdout  # the text is shown, without its escape codes
    assert MARKUP_STUDENT in done.stdout


@pytest.mark.slow
def test_analyze_prints_hostile_names_as_text(hostile_run: Path, tmp_path: Path) -> None:
    done = _coeval("analyze", "--run", str(hostile_run), "--out", str(tmp_path / "a"), "--bootstrap", "0",
                   cwd=tmp_path)
    assert "Traceback" not in done.stderr and "MarkupError" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    _clean(done.stdout + done.stderr)
    assert MARKUP_STUDENT in done.stdout


@pytest.mark.slow
def test_status_json_prints_no_c1_or_bidi_character(hostile_run: Path) -> None:
    """``status --json`` is read on a terminal too: C0 characters are JSON escapes already;
    C1 (``\\x9b`` opens a CSI sequence) and bidi overrides from run data are dropped."""
    done = _coeval("status", "--run", str(hostile_run), "--json", cwd=hostile_run.parent)
    assert done.returncode in (0, 1), done.stderr
    _clean(done.stdout + done.stderr)
    status = json.loads(done.stdout)
    assert [e["error"] for e in status["recent_errors"]] == [HOSTILE_ERROR.replace("\x9b", "").replace("\u202e", "")]


def test_scheduler_console_lines_are_plain_text() -> None:
    """A lane's console line (its URL comes from the config, its error from the server) is
    printed without control characters."""
    import io

    from coeval.console.progress import ProgressReporter
    from coeval.scheduler import Scheduler
    from rich.console import Console

    from tests.core.scheduler_helpers import ScriptedInterface

    out = io.StringIO()
    reporter = ProgressReporter(console=Console(file=out, force_terminal=False, width=200))
    scheduler = Scheduler({"m": ScriptedInterface(name="m")}, progress=reporter)
    scheduler.say("http://x\x1b]0;pwned\x07\x9b2J\u202e: cannot connect")
    _clean(out.getvalue())
    assert out.getvalue().strip() == "http://x]0;pwned2J: cannot connect"
