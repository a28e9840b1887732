"""A call whose record cannot be written (a full disk, a read-only file) was still paid:
``meta.json`` counts it, so quotas and budgets hold, and the phase says how many records
were lost and why."""

from __future__ import annotations

import errno
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from coeval.plugins.manager import Entry, registries
from coeval.storage import run_folder

from tests.core.pipeline_support import RecordingMock, folder, make_config, meta, mock_model, run, task


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> type[RecordingMock]:
    entries = registries().interfaces._entries
    monkeypatch.setitem(entries, "mock", Entry("mock", RecordingMock, "core", dict(entries["mock"].options)))
    RecordingMock.requests = []
    return RecordingMock


def _fail_writes_after(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    real = run_folder.JsonlWriter.write
    count = {"n": 0}

    def write(self: Any, record: dict[str, Any]) -> None:
        count["n"] += 1
        if count["n"] > n:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
        real(self, record)

    monkeypatch.setattr(run_folder.JsonlWriter, "write", write)


def test_calls_whose_records_were_lost_are_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   recorded: type[RecordingMock]) -> None:
    models = [mock_model("a", seed=1, latency_ms=5, cost_per_call_usd=0.01),
              mock_model("b", seed=2, latency_ms=5, cost_per_call_usd=0.01)]
    config = make_config(tmp_path, models, [task(total=20)])
    _fail_writes_after(monkeypatch, 30)
    result = run(config)
    assert result.exit_code == 2
    made = Counter(name for name, _ in recorded.requests)
    assert sum(made.values()) > 30  # calls in flight finished after the first failed write
    counted = meta(folder(config))
    assert counted["calls"] == dict(made)
    assert sum(counted["spend_usd"].values()) == pytest.approx(0.01 * sum(made.values()))
    phase = result.phases["data_generation"]
    assert phase.unwritten == sum(made.values()) - 30
    assert phase.calls == sum(made.values())


def test_the_phase_summary_counts_only_written_records_and_names_the_write_error(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import re

    import yaml
    from click.testing import CliRunner
    from coeval.cli.main import cli

    raw = {"models": [mock_model("a", seed=1, latency_ms=5), mock_model("b", seed=2, latency_ms=5)],
           "tasks": [task(total=20)],
           "experiment": {"id": "full", "storage_folder": "runs", "probe_mode": "disable"}}
    (work / "c.yaml").write_text(yaml.safe_dump(raw))
    _fail_writes_after(monkeypatch, 30)
    result = CliRunner().invoke(cli, ["run", "c.yaml"])
    assert result.exit_code == 2, result.output
    summary = next(line for line in result.output.splitlines() if line.startswith("data_generation: "))
    done = re.match(r"data_generation: (\d+)/40 done", summary)
    assert done is not None and int(done.group(1)) == 30, summary
    assert "Ctrl-C" not in result.output
    assert "record not written" in summary
    assert re.search(r"\. \d+ calls made by this run, each counted in calls\.jsonl \(quotas and the budget hold\); "
                     r"\d+ of them finished but their records could not be written", result.output), result.output
