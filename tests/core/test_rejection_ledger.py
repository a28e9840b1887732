"""Rejection counts reach meta.json at most once a second while a teacher keeps writing
junk, and all of them when the phase ends: each write rereads, rewrites and syncs the file
on the event loop every call waits on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from coeval.quality.ledger import RejectionLedger, rejections
from coeval.storage.run_folder import RunFolder


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _counted(run: RunFolder) -> dict[str, dict[str, int]]:
    return rejections(json.loads(run.meta_path.read_text())) if run.meta_path.exists() else {}


def test_counts_are_written_once_a_second_and_on_flush(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = RunFolder(tmp_path / "run")
    writes: list[int] = []
    update = run.update_meta
    monkeypatch.setattr(run, "update_meta", lambda change: writes.append(1) or update(change))
    clock = _Clock()
    ledger = RejectionLedger(run, every_s=1.0, clock=clock)
    for _ in range(50):  # 50 rejections within half a second: held
        ledger.add("t1", "reference_empty")
        clock.now += 0.01
    assert writes == [] and _counted(run) == {}
    clock.now += 0.5  # a second since the ledger began: the next rejection writes them all at once
    ledger.add("t2", "near_duplicate")
    assert len(writes) == 1
    assert _counted(run) == {"t1": {"reference_empty": 50}, "t2": {"near_duplicate": 1}}
    ledger.add("t1", "reference_empty")
    ledger.add("t1", "template_echo")
    assert len(writes) == 1  # within the second after that write
    ledger.flush()  # the phase's end
    assert len(writes) == 2
    assert _counted(run) == {"t1": {"reference_empty": 51, "template_echo": 1}, "t2": {"near_duplicate": 1}}
    ledger.flush()  # nothing held: no write
    assert len(writes) == 2


def test_counts_add_to_those_of_earlier_runs(tmp_path: Path) -> None:
    run = RunFolder(tmp_path / "run")
    run.update_meta(lambda m: m.update({"item_quality": {"rejected": {"t1": {"reference_empty": 3}}}}))
    ledger = RejectionLedger(run)
    ledger.add("t1", "reference_empty")
    ledger.flush()
    assert _counted(run) == {"t1": {"reference_empty": 4}}
