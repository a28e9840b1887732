"""A run folder someone shared may hold a FIFO (which would hang a reader), a link to
``/dev/zero`` (which would fill memory) or links to files elsewhere on the machine. Every
command that reads a run refuses such a file with one error line naming it and the rule,
exit code 2: never a hang, never a read of what the link points to."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from coeval.storage.safe_files import UnsafeRunFile, check_run_file, open_regular
from coeval_testing.synthetic import SyntheticSpec, write_synthetic_run

from tests.robustness._support import base_config, write_config

pytestmark = pytest.mark.slow
OUTSIDE_SECRET = "outside-secret-text-7f3a"
#: every reader of a run: the analysis, status, the viewer's database, the label sheet, repair
COMMANDS = {
    "analyze": ["analyze", "--run", "{run}", "--out", "{tmp}/a", "--bootstrap", "0", "--quiet"],
    "status": ["status", "--run", "{run}"],
    "export": ["export", "--run", "{run}", "--format", "csv", "--out", "{tmp}/j.csv"],
    "label": ["label", "--run", "{run}", "--export", "{tmp}/next.csv"],
    "repair": ["repair", "--run", "{run}"],
}


def _coeval(args: list[str], tmp: Path, run: Path) -> subprocess.CompletedProcess[str]:
    argv = [a.format(run=run, tmp=tmp) for a in args]
    env = {**os.environ, "COEVAL_VIEW_CACHE": str(tmp / "cache")}
    return subprocess.run([sys.executable, "-m", "coeval.cli.main", *argv], cwd=tmp, env=env, capture_output=True,
                          text=True, timeout=60, check=False)  # a hang fails the test, it does not hold it


def _refused(done: subprocess.CompletedProcess[str], name: str, rule: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and name in errors[0] and rule in errors[0], done.stderr
    assert OUTSIDE_SECRET not in done.stdout + done.stderr


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_synthetic_run(tmp_path / "run", SyntheticSpec(datapoints_per_teacher=2, students={"stu-a": 0.7,
                                                                                                   "stu-b": 0.4}))


def _replace(path: Path, make: str, target: Path | None = None) -> None:
    path.unlink()
    if make == "fifo":
        os.mkfifo(path)
    else:
        assert target is not None
        os.symlink(target, path)


def _outside(tmp_path: Path, like: Path) -> Path:
    """A copy of a record file outside the run, with a record no run of ours holds."""
    outside = tmp_path / "elsewhere" / like.name
    outside.parent.mkdir(exist_ok=True)
    rec = json.loads(like.read_text(encoding="utf-8").splitlines()[0])
    rec["response" if "response" in rec else "prompt"] = OUTSIDE_SECRET
    outside.write_text(like.read_text(encoding="utf-8") + json.dumps(rec) + "\n", encoding="utf-8")
    return outside


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_fifo_among_the_records_is_refused_at_once(run: Path, tmp_path: Path, command: str) -> None:
    victim = sorted((run / "phase5_evaluations").glob("*.jsonl"))[0]
    if command == "label":  # the label sheet reads answers and datapoints
        victim = sorted((run / "phase4_responses").glob("*.jsonl"))[0]
    _replace(victim, "fifo")
    _refused(_coeval(COMMANDS[command], tmp_path, run), victim.name, "is a FIFO (named pipe), not a regular file")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_link_to_dev_zero_is_refused(run: Path, tmp_path: Path, command: str) -> None:
    victim = sorted((run / "phase4_responses").glob("*.jsonl"))[0]
    _replace(victim, "link", Path("/dev/zero"))
    _refused(_coeval(COMMANDS[command], tmp_path, run), victim.name, "outside the run folder")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_record_file_linked_from_outside_is_not_read(run: Path, tmp_path: Path, command: str) -> None:
    victim = sorted((run / "phase4_responses").glob("*.jsonl"))[0]
    _replace(victim, "link", _outside(tmp_path, victim))
    _refused(_coeval(COMMANDS[command], tmp_path, run), victim.name, "outside the run folder")


def test_a_phase_folder_linked_from_outside_is_not_read(run: Path, tmp_path: Path) -> None:
    folder = run / "phase3_datapoints"
    moved = tmp_path / "elsewhere-phase3"
    folder.rename(moved)
    os.symlink(moved, folder)
    for command in ("analyze", "status"):
        _refused(_coeval(COMMANDS[command], tmp_path, run), "phase3_datapoints", "outside the run folder")


def test_meta_and_config_linked_from_outside_are_refused(run: Path, tmp_path: Path) -> None:
    for name in ("meta.json", "config.yaml"):
        outside = tmp_path / f"outside-{name}"
        outside.write_bytes((run / name).read_bytes())
        _replace(run / name, "link", outside)
    for command in ("analyze", "status", "repair"):
        done = _coeval(COMMANDS[command], tmp_path, run)
        _refused(done, "run/", "outside the run folder")


def test_repair_refuses_a_fifo_as_meta_json(run: Path, tmp_path: Path) -> None:
    _replace(run / "meta.json", "fifo")
    _refused(_coeval(COMMANDS["repair"], tmp_path, run), "meta.json", "is a FIFO (named pipe), not a regular file")


def test_continue_refuses_a_fifo_among_the_records(tmp_path: Path) -> None:
    config = base_config(tmp_path / "runs")
    config["experiment"]["probe_mode"] = "disable"
    path = write_config(tmp_path / "exp.yaml", config)
    assert _coeval(["run", "--config", str(path)], tmp_path, tmp_path).returncode == 0
    run = tmp_path / "runs" / "robust"
    victim = sorted((run / "phase4_responses").glob("*.jsonl"))[0]
    _replace(victim, "fifo")
    done = _coeval(["run", "--config", str(path), "--continue"], tmp_path, run)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    errors = [line.rstrip(".") for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: {victim}: is a FIFO (named pipe), not a regular file; CoEval reads only regular "
                      "files in a run folder (replace it by a regular file, or remove it)"], done.stderr


def test_continue_and_status_refuse_a_fifo_as_the_call_ledger(tmp_path: Path) -> None:
    config = base_config(tmp_path / "runs")
    config["experiment"]["probe_mode"] = "disable"
    path = write_config(tmp_path / "exp.yaml", config)
    assert _coeval(["run", "--config", str(path)], tmp_path, tmp_path).returncode == 0
    run = tmp_path / "runs" / "robust"
    ledger = run / "calls.jsonl"
    assert ledger.is_file()
    _replace(ledger, "fifo")
    for args in (["run", "--config", str(path), "--continue"], ["status", "--run", str(run)]):
        done = _coeval(args, tmp_path, run)
        assert done.returncode == 2, (args, done.stderr)
        errors = [line.rstrip(".") for line in done.stderr.splitlines() if line.startswith("error:")]
        assert errors == [f"error: {ledger}: is a FIFO (named pipe), not a regular file; CoEval reads only regular "
                          "files in a run folder (replace it by a regular file, or remove it)"], (args, done.stderr)


def test_a_link_inside_the_run_folder_is_read(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "phase4_responses").mkdir(parents=True)
    real = run / "phase4_responses" / "a.jsonl"
    real.write_text('{"id": "x"}\n', encoding="utf-8")
    link = run / "phase4_responses" / "b.jsonl"
    os.symlink("a.jsonl", link)
    check_run_file(link, run)
    with open_regular(link) as fh:
        assert fh.read() == b'{"id": "x"}\n'
    os.mkfifo(run / "pipe")
    with pytest.raises(UnsafeRunFile, match="pipe: is a FIFO"):
        open_regular(run / "pipe")  # opened without waiting for a writer, then refused


def test_the_analysis_reader_refuses_a_fifo_it_is_handed(tmp_path: Path) -> None:
    """``read_records`` (DuckDB, which would wait on a FIFO for ever) checks each file too."""
    from coeval_analysis.loading.jsonl import TEXT, read_records

    good = tmp_path / "a.jsonl"
    good.write_text('{"id": "x"}\n', encoding="utf-8")
    os.mkfifo(tmp_path / "b.jsonl")
    with pytest.raises(UnsafeRunFile, match=r"b\.jsonl: is a FIFO"):
        read_records([good, tmp_path / "b.jsonl"], {"id": TEXT})
    assert read_records([good], {"id": TEXT})[0].column("id").to_pylist() == ["x"]
