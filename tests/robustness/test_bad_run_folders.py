"""Damaged run folders and storage that fails: clear errors, exit 2, nothing corrupted.

A run folder damaged between runs (a cut-off line, garbage, duplicates, a foreign or broken
``meta.json``) either resumes to exactly the records an undisturbed run writes, or is
refused with exit code 2 and left as it was. Storage that cannot be written (read-only, a
file where a folder should be, a full disk) stops the run with exit code 2 and a message
naming the cause; what was written stays intact and ``--continue`` finishes the job.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from ._support import assert_clean_failure, base_config, invoke, no_traceback, write_config

PHASES = ("phase3_datapoints", "phase4_responses", "phase5_evaluations")


def record_ids(run: Path) -> dict[str, Counter[str]]:
    """Record ids per phase (a Counter, so duplicates show)."""
    out: dict[str, Counter[str]] = {}
    for phase in PHASES:
        ids: Counter[str] = Counter()
        for f in sorted((run / phase).glob("*.jsonl")):
            for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict) and isinstance(rec.get("id"), str) and rec.get("status", "ok") == "ok":
                    ids[rec["id"]] += 1
        out[phase] = ids
    return out


def tree_digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.startswith(".")
    }


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[str, Counter[str]]:
    """The records of an undisturbed run of the base config."""
    tmp = tmp_path_factory.mktemp("reference")
    config = write_config(tmp / "exp.yaml", base_config(tmp / "runs"))
    result = invoke(["run", "--config", str(config)])
    assert result.exit_code == 0, result.output
    ids = record_ids(tmp / "runs" / "robust")
    assert [sum(c.values()) for c in ids.values()] == [4, 8, 16]
    return ids


@pytest.fixture
def finished(tmp_path: Path) -> tuple[Path, Path]:
    """(config file, run folder) of a completed run."""
    config = write_config(tmp_path / "exp.yaml", base_config(tmp_path / "runs"))
    result = invoke(["run", "--config", str(config)])
    assert result.exit_code == 0, result.output
    return config, tmp_path / "runs" / "robust"


def resume(config: Path):
    result = invoke(["run", "--config", str(config), "--continue"])
    no_traceback(result)
    return result


def first_file(run: Path, phase: str) -> Path:
    return sorted((run / phase).glob("*.jsonl"))[0]


# ------------------------------------------------------------------ damage that --continue heals


def _cut_last_line(path: Path) -> None:
    data = path.read_bytes().rstrip(b"\n")
    last = data.rfind(b"\n")
    path.write_bytes(data[: last + 1 + (len(data) - last) // 2])


def _garbage_in_the_middle(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines.insert(1, "{this is not json\n")
    path.write_text("".join(lines), encoding="utf-8")


def _duplicate_a_line(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join([*lines, lines[0]]), encoding="utf-8")


def _odd_json_values(path: Path) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write('[1, 2, 3]\n42\n"text"\nnull\n{"id": 7, "status": ["ok"]}\n{}\n')


def _binary_junk(path: Path) -> None:
    with path.open("ab") as fh:
        fh.write(b"\xff\xfe\x00junk\x80\n")


def _drop_last_record(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:-1]), encoding="utf-8")


def _empty_file(path: Path) -> None:
    path.write_bytes(b"")


HEALABLE = [
    ("truncated-last-evaluation", "phase5_evaluations", _cut_last_line),
    ("truncated-last-response", "phase4_responses", _cut_last_line),
    ("garbage-line-in-responses", "phase4_responses", _garbage_in_the_middle),
    ("duplicate-evaluation-line", "phase5_evaluations", _duplicate_a_line),
    ("odd-json-values-in-evaluations", "phase5_evaluations", _odd_json_values),
    ("binary-junk-in-datapoints", "phase3_datapoints", _binary_junk),
    ("missing-last-evaluation", "phase5_evaluations", _drop_last_record),
    ("emptied-response-file", "phase4_responses", _empty_file),
]


@pytest.mark.parametrize(("name", "phase", "damage"), HEALABLE, ids=[c[0] for c in HEALABLE])
def test_continue_heals_a_damaged_run(name, phase, damage, finished, reference):
    config, run = finished
    target = first_file(run, phase)
    damage(target)
    intact_before = {
        p: [ln for ln in p.read_text(encoding="utf-8", errors="replace").splitlines() if _is_record(ln)]
        for phase_dir in PHASES
        for p in (run / phase_dir).glob("*.jsonl")
    }
    result = resume(config)
    assert result.exit_code == 0, result.output
    after = record_ids(run)
    for phase_name in PHASES:
        assert set(after[phase_name]) == set(reference[phase_name]), phase_name
    if name != "duplicate-evaluation-line":  # the damage itself added that duplicate
        assert all(n == 1 for c in after.values() for n in c.values()), {p: [k for k, n in c.items() if n > 1] for p, c in after.items()}
    # every complete record that was there before is still there, unchanged, unless it was
    # stale: a judgment of a lost answer made again is scored again and replaces its old line
    # (whether it is stale depends on the second the answer was remade in)
    for path, lines in intact_before.items():
        now = path.read_text(encoding="utf-8", errors="replace").splitlines()
        gone = [line for line in lines if line not in now]
        assert all(_replaced_by_a_newer_record(line, now) for line in gone), (path, gone)


def _replaced_by_a_newer_record(line: str, now: list[str]) -> bool:
    old = json.loads(line)
    if old.get("status") != "ok" or ("response_hash" not in old and "datapoint_hash" not in old):
        return False
    newer = [json.loads(n) for n in now if _is_record(n) and json.loads(n).get("id") == old["id"]]
    return len(newer) == 1 and newer[0] != old


def _is_record(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


# ------------------------------------------------------------------ damage that is refused


def _foreign_meta(run: Path) -> None:
    meta = json.loads((run / "meta.json").read_text(encoding="utf-8"))
    meta["experiment_id"] = "someone-else"
    (run / "meta.json").write_text(json.dumps(meta), encoding="utf-8")


REFUSED = [
    ("meta-from-another-experiment", _foreign_meta, ("V-14", "someone-else")),
    ("meta-not-json", lambda run: (run / "meta.json").write_text("{oops", encoding="utf-8"), ("V-14", "meta.json")),
    ("meta-a-list", lambda run: (run / "meta.json").write_text("[1, 2]", encoding="utf-8"), ("V-14", "meta.json")),
    ("meta-binary", lambda run: (run / "meta.json").write_bytes(b"\x00\xff" * 50), ("V-14", "meta.json")),
    ("meta-missing", lambda run: (run / "meta.json").unlink(), ("V-14",)),
]


@pytest.mark.parametrize(("name", "damage", "fragments"), REFUSED, ids=[c[0] for c in REFUSED])
def test_continue_refuses_a_run_it_cannot_trust_and_changes_nothing(name, damage, fragments, finished):
    config, run = finished
    damage(run)
    before = tree_digest(run)
    result = resume(config)
    assert_clean_failure(result, *fragments)
    assert tree_digest(run) == before


def test_a_folder_with_records_but_no_meta_is_not_overwritten_by_a_new_run(finished):
    config, run = finished
    (run / "meta.json").unlink()
    before = tree_digest(run)
    result = invoke(["run", "--config", str(config)])
    no_traceback(result)
    assert result.exit_code == 2, result.output
    assert tree_digest(run) == before


# ------------------------------------------------------------------ storage that fails


def test_storage_folder_that_is_a_file(tmp_path: Path):
    blocker = tmp_path / "runs"
    blocker.write_text("not a folder", encoding="utf-8")
    config = write_config(tmp_path / "exp.yaml", base_config(blocker))
    result = invoke(["run", "--config", str(config)])
    assert_clean_failure(result, "runs")
    assert blocker.read_text(encoding="utf-8") == "not a folder"


@pytest.fixture
def read_only_folder(tmp_path: Path, monkeypatch):
    """A folder nothing can be written in. Root ignores permission bits, so as root a
    read-only bind mount is used; where mounting is not allowed either, writes under the
    folder are made to fail with EROFS, as a read-only file system does."""
    folder = tmp_path / "ro"
    folder.mkdir()
    mounted = False
    if os.geteuid() != 0:
        folder.chmod(0o555)
    else:
        ok = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True).returncode == 0
        if ok:
            mounted = True
            if subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], capture_output=True).returncode != 0:
                subprocess.run(["umount", str(folder)], capture_output=True)
                mounted = False
        if not mounted:
            _simulate_read_only(folder, monkeypatch)
    yield folder
    if mounted:
        subprocess.run(["umount", str(folder)], capture_output=True)
    else:
        folder.chmod(0o755)


def _simulate_read_only(folder: Path, monkeypatch) -> None:
    root = str(folder)

    def inside(path) -> bool:
        try:
            return os.path.abspath(os.fspath(path)).startswith(root)
        except TypeError:
            return False

    def refuse(path):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fspath(path))

    real_open, real_mkdir, real_builtin_open = os.open, os.mkdir, open

    def fake_os_open(path, flags, *args, **kwargs):
        if inside(path) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            refuse(path)
        return real_open(path, flags, *args, **kwargs)

    def fake_mkdir(path, *args, **kwargs):
        if inside(path):
            refuse(path)
        return real_mkdir(path, *args, **kwargs)

    def fake_builtin_open(file, mode="r", *args, **kwargs):
        if inside(file) and any(c in mode for c in "wax+"):
            refuse(file)
        return real_builtin_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_os_open)
    monkeypatch.setattr(os, "mkdir", fake_mkdir)
    monkeypatch.setattr("builtins.open", fake_builtin_open)
    monkeypatch.setattr("io.open", fake_builtin_open)


def test_read_only_storage_folder(read_only_folder: Path, tmp_path: Path):
    config = write_config(tmp_path / "exp.yaml", base_config(read_only_folder))
    result = invoke(["run", "--config", str(config)])
    assert_clean_failure(result, str(read_only_folder))
    assert list(read_only_folder.iterdir()) == []


def test_disk_full_while_writing_records_then_continue_finishes(tmp_path: Path, monkeypatch, reference):
    from coeval.storage import run_folder

    real_write = run_folder.JsonlWriter.write
    written = {"n": 0}

    def write(self, record):
        written["n"] += 1
        if written["n"] > 11:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
        return real_write(self, record)

    config = write_config(tmp_path / "exp.yaml", base_config(tmp_path / "runs"))
    monkeypatch.setattr(run_folder.JsonlWriter, "write", write)
    result = invoke(["run", "--config", str(config)])
    assert_clean_failure(result, "No space left on device", "--continue")
    run = tmp_path / "runs" / "robust"
    kept = record_ids(run)
    assert sum(sum(c.values()) for c in kept.values()) == 11
    meta = json.loads((run / "meta.json").read_text(encoding="utf-8"))
    assert "evaluation" not in meta["phases_completed"]

    monkeypatch.setattr(run_folder.JsonlWriter, "write", real_write)  # space freed
    result = resume(config)
    assert result.exit_code == 0, result.output
    assert record_ids(run) == reference


def test_disk_full_while_writing_meta_keeps_the_old_meta(finished, monkeypatch):
    config, run = finished
    from coeval.storage import run_folder

    before = (run / "meta.json").read_text(encoding="utf-8")
    _drop_last_record(first_file(run, "phase5_evaluations"))
    real = run_folder.atomic_write_text

    def full(path, text):
        if Path(path).name == "meta.json":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return real(path, text)

    monkeypatch.setattr(run_folder, "atomic_write_text", full)
    result = resume(config)
    assert_clean_failure(result, "No space left on device")
    assert (run / "meta.json").read_text(encoding="utf-8") == before
    json.loads(before)


@pytest.mark.slow
def test_file_size_limit_in_a_real_process_then_continue(tmp_path: Path, reference):
    """A real OS write error (the file-size limit: EFBIG on write) in a real ``coeval``
    process, part-way through a record: exit 2, a message, no traceback; then --continue."""
    config = write_config(tmp_path / "exp.yaml", base_config(tmp_path / "runs"))

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2500, 2500))

    cmd = [sys.executable, "-m", "coeval.cli.main", "run", "--config", str(config)]
    if shutil.which("coeval") is not None and Path(sys.executable).parent.joinpath("coeval").exists():
        cmd = [str(Path(sys.executable).parent / "coeval"), "run", "--config", str(config)]
    proc = subprocess.run(cmd, preexec_fn=limit, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert "File too large" in proc.stderr
    proc = subprocess.run([*cmd, "--continue"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert record_ids(tmp_path / "runs" / "robust") == reference


def test_a_run_folder_busy_with_another_process(finished):
    config, run = finished
    _drop_last_record(first_file(run, "phase5_evaluations"))
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from coeval.storage.lock import RunLock
            lock = RunLock({str(run)!r}, shared=False)
            lock.acquire()
            print("held", flush=True)
            time.sleep(60)
        """)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        before = tree_digest(run)
        result = resume(config)
        assert_clean_failure(result, str(run))
        assert tree_digest(run) == before
    finally:
        holder.kill()
        holder.wait()
