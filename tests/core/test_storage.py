"""Run-folder storage: what survives a crash, and what readers tolerate."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

from coeval.storage import JsonlWriter, RunFolder, atomic_write_json, iter_jsonl


def test_appended_records_are_readable_immediately(tmp_path: Path):
    path = tmp_path / "x.jsonl"
    w = JsonlWriter(path)
    w.write({"id": "a"})
    # read before close: each write is flushed
    assert [r["id"] for r in iter_jsonl(path)] == ["a"]
    w.close()


def test_truncated_last_line_is_skipped_and_next_write_starts_clean(tmp_path: Path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"id": "a"}\n{"id": "b", "resp')  # crash mid-write
    bad: list[int] = []
    assert [r["id"] for r in iter_jsonl(path, on_bad_line=lambda n, _: bad.append(n))] == ["a"]
    assert bad == [2]
    with JsonlWriter(path) as w:
        w.write({"id": "c"})
    assert [r["id"] for r in iter_jsonl(path)] == ["a", "c"]


def test_atomic_write_leaves_no_temp_files(tmp_path: Path):
    target = tmp_path / "meta.json"
    atomic_write_json(target, {"k": 1})
    atomic_write_json(target, {"k": 2})
    assert json.loads(target.read_text()) == {"k": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["meta.json"]


def _bump(root: str, n: int) -> None:
    rf = RunFolder(root)
    for _ in range(n):
        rf.update_meta(lambda m: m.__setitem__("count", m.get("count", 0) + 1))


def test_meta_updates_from_several_processes_are_not_lost(tmp_path: Path):
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_bump, args=(str(tmp_path), 25)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert RunFolder(tmp_path).read_meta()["count"] == 75


def test_paths_follow_the_documented_layout(tmp_path: Path):
    rf = RunFolder.for_experiment(tmp_path, "exp")
    assert rf.datapoints_path("t", "gpt-3.5-turbo").relative_to(tmp_path).as_posix() == (
        "exp/phase3_datapoints/t.gpt-3.5-turbo.datapoints.jsonl"
    )
    assert rf.evaluations_path("t", "a", "b").name == "t.a.b.evaluations.jsonl"
    assert rf.target_attrs_path("t").name == "t.target_attrs.json"


def test_record_stamps_are_the_current_utc_second_and_follow_the_clock(monkeypatch) -> None:
    import time

    from coeval.storage import run_folder

    clock = [1_796_000_000.2]
    monkeypatch.setattr(run_folder.time, "time", lambda: clock[0])
    assert run_folder.utc_now() == "2026-11-30T00:53:20Z"
    clock[0] += 0.7  # the same second
    assert run_folder.utc_now() == "2026-11-30T00:53:20Z"
    clock[0] += 0.2  # the next one
    assert run_folder.utc_now() == "2026-11-30T00:53:21Z"
    clock[0] += 86_400
    assert run_folder.utc_now() == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(clock[0])))
