"""A full disk mid-run: one count of the calls made, the same in the run's message, in
``--json`` and (once it can be written) in ``meta.json``, and after ``--continue``; the
error names the write that failed; no phase is said to be complete or stopped by Ctrl-C.

The disk fills at the writer: every ``os.write`` to a file of the run folder, and every
whole-file write (``meta.json``), fails with ENOSPC once the folder has taken its bytes."""

from __future__ import annotations

import errno
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from coeval.cli.run_summary import run_summary
from coeval.interfaces.mock import MockInterface
from coeval.storage import run_folder as run_folder_module
from coeval.storage.call_ledger import read_ledger

from .pipeline_support import folder, make_config, meta, mock_model, run, task


class Disk:
    """The run folder's disk: ``room`` bytes, then ENOSPC (until :meth:`free`)."""

    def __init__(self, root: Path, room: int) -> None:
        self.root = str(root)
        self.room = room
        self.full = False

    def _ours(self, fd: int) -> bool:
        try:
            return os.readlink(f"/proc/self/fd/{fd}").startswith(self.root)
        except OSError:
            return False

    def take(self, size: int) -> None:
        if self.room < size:
            self.full = True
            raise OSError(errno.ENOSPC, "No space left on device")
        self.room -= size

    def free(self) -> None:
        self.room = 10**9


@pytest.fixture
def disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Disk]:
    d = Disk(tmp_path / "runs", room=60_000)
    real_write = os.write
    real_atomic = run_folder_module.atomic_write_bytes

    def write(fd: int, data: Any) -> int:
        if d._ours(fd):
            d.take(len(data))
        return real_write(fd, data)

    def atomic(path: Path, data: bytes) -> None:
        if str(path).startswith(d.root):
            d.take(len(data))
        real_atomic(path, data)

    monkeypatch.setattr(os, "write", write)
    monkeypatch.setattr(run_folder_module, "atomic_write_bytes", atomic)
    yield d


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """The calls the mock models received from the run, per model (not the free sample
    calls of the estimate a new run writes: those measure the mock, and are no run's)."""
    import coeval.run.runner as runner

    monkeypatch.setattr(runner, "record_estimate", lambda *a, **k: None)
    seen: Counter[str] = Counter()
    real = MockInterface.generate

    async def generate(self: MockInterface, request: Any) -> Any:
        seen[self.model.name] += 1
        return await real(self, request)

    monkeypatch.setattr(MockInterface, "generate", generate)
    return seen


def _made(message: str) -> int:
    return int(message.split(" calls made by this run")[0].rsplit(" ", 1)[-1])


def test_a_full_disk_gives_one_count_of_the_calls_made(tmp_path: Path, disk: Disk, served: Counter[str]) -> None:
    models = [mock_model(n, latency_ms=[1, 8], seed=i, cost_per_call_usd=0.001) for i, n in enumerate(("a", "b"))]
    cfg = make_config(tmp_path, models, [task(total=30)])
    first = run(cfg)
    assert disk.full and first.exit_code == 2
    assert "Ctrl-C" not in first.message and "interrupted" not in first.message
    assert first.message.startswith("cannot write ") and "No space left on device" in first.message
    failed_write = first.message.split("cannot write ", 1)[1].split(":", 1)[0]
    assert failed_write.startswith(str(tmp_path / "runs")) and not failed_write.endswith("meta.json")
    made = _made(first.message)
    ledger = read_ledger(folder(cfg).root / "calls.jsonl")
    assert sum(ledger.calls.values()) == made == sum(served.values())
    assert dict(ledger.calls) == dict(served)
    summary = run_summary(first)
    assert sum(summary["calls"].values()) == made
    assert [p for p, r in first.phases.items() if r.status == "completed" and r.written] == []
    disk.free()
    second = run(cfg, continue_run=True)
    assert second.exit_code == 0, second.message
    after = read_ledger(folder(cfg).root / "calls.jsonl")
    assert dict(after.calls) == dict(served)
    assert meta(folder(cfg))["calls"] == dict(served)
    assert sum(run_summary(second)["calls"].values()) == sum(served.values())
