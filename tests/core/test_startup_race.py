"""Two new runs of one experiment started together: the one that loses the race for the
folder (its start-up outlasted the other's whole run) stops with exit code 2 and leaves the
winner's run as it was: its meta.json, phases and config.yaml."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from coeval.run import startup

from tests.core.pipeline_support import folder, make_config, mock_model, run, task


def test_the_loser_of_a_start_up_race_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    winner = make_config(tmp_path, [mock_model("a", seed=1)], [task(total=2)])
    loser = make_config(tmp_path, [mock_model("a", seed=1), mock_model("b", seed=2)], [task(total=2)])
    rf = folder(winner)
    real_probe = startup.probe
    won: list[Any] = []

    async def slow_probe(state: Any) -> None:
        if state.config is loser or state.config.models == loser.models:
            # while this one starts up, the other run goes from start to end
            thread = threading.Thread(target=lambda: won.append(run(winner)))
            thread.start()
            thread.join()
        await real_probe(state)

    monkeypatch.setattr(startup, "probe", slow_probe)
    lost = run(loser)
    assert won[0].exit_code == 0
    assert lost.exit_code == 2
    assert "already exists" in lost.message
    meta = json.loads(rf.meta_path.read_text())
    assert meta["status"] == "completed"
    assert meta["phases_completed"][-1] == "evaluation"
    assert set(meta["settings"]["models"]) == {"a"}
    assert "name: b" not in rf.config_path.read_text()
