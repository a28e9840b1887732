"""A stale record redone replaces its old line when the phase's writers close: the file
keeps one record per id, failed records (paid calls the ledger counts) and lines of other
ids stay, and a shard, which shares files with other processes, rewrites nothing."""

from __future__ import annotations

import json
from pathlib import Path

from coeval.phases.base import WriterPool
from coeval.storage.superseded import drop_superseded


def _seed(path: Path) -> None:
    records = [{"id": "a", "status": "ok", "v": 1}, {"id": "b", "status": "failed", "v": 1},
               {"id": "c", "status": "ok", "v": 1}]
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + "not json\n", encoding="utf-8")


def test_a_replacing_record_drops_the_stale_line_at_close(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    _seed(path)
    pool = WriterPool()
    pool.write(path, {"id": "a", "status": "ok", "v": 2}, replaces=True)
    pool.write(path, {"id": "b", "status": "ok", "v": 2})  # a retried failure: the failed line stays
    assert [r["id"] for r in map(json.loads, path.read_text().splitlines()[:3])] == ["a", "b", "c"]
    pool.close()
    text = path.read_text(encoding="utf-8").splitlines()
    assert text[2] == "not json"  # a line that is no record is never touched
    kept = [json.loads(line) for line in text if line != "not json"]
    assert kept == [{"id": "b", "status": "failed", "v": 1}, {"id": "c", "status": "ok", "v": 1},
                    {"id": "a", "status": "ok", "v": 2}, {"id": "b", "status": "ok", "v": 2}]


def test_a_shard_rewrites_no_shared_file(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    _seed(path)
    pool = WriterPool(exclusive=False)
    pool.write(path, {"id": "a", "status": "ok", "v": 2}, replaces=True)
    pool.close()
    assert [r["id"] for r in _lines_ok(path)] == ["a", "b", "c", "a"]


def _lines_ok(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("{")]


def test_only_the_named_ids_and_only_earlier_ok_lines_go(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [
        {"id": "x\"q", "status": "ok", "v": 1}, {"id": "y", "status": "ok", "v": 1},
        {"id": "x\"q", "status": "ok", "v": 2}, {"id": "y", "status": "ok", "v": 2}]), encoding="utf-8")
    assert drop_superseded(path, {'x"q'}) == 1
    assert [(r["id"], r["v"]) for r in _lines_ok(path)] == [("y", 1), ('x"q', 2), ("y", 2)]
    assert drop_superseded(path, {'x"q'}) == 0  # nothing left to drop: the file is not rewritten
    assert drop_superseded(tmp_path / "absent.jsonl", {"a"}) == 0
