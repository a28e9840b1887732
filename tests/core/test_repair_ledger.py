"""``coeval repair`` after meta.json is lost rebuilds the ledger (calls and spend per model,
from the records) and the recorded settings (from the config snapshot), so a quota does not
restart from zero and drift protection stays on."""

from __future__ import annotations

from pathlib import Path

import attrs
from coeval.plugins.manager import registries
from coeval.run.drift import find_drift
from coeval.run.repair import repair_run

from tests.core.pipeline_support import folder, make_config, meta, mock_model, run, task


def test_a_rebuilt_meta_keeps_the_quota_and_the_settings(tmp_path: Path) -> None:
    models = [mock_model("a", seed=1, cost_per_call_usd=0.25), mock_model("b", seed=2)]
    config = make_config(tmp_path, models, [task(total=4)], quota={"a": {"max_calls": 10}})
    assert run(config).exit_code == 3  # stopped by a's quota
    rf = folder(config)
    before = meta(rf)
    assert before["calls"]["a"] == 10
    rf.meta_path.unlink()

    report = repair_run(rf, registries=registries())
    assert report.meta_rebuilt
    rebuilt = meta(rf)
    assert rebuilt["calls"] == before["calls"]
    assert rebuilt["spend_usd"]["a"] == before["spend_usd"]["a"] == 2.5
    assert rebuilt["settings"] == before["settings"]

    again = run(config, continue_run=True)
    assert again.exit_code == 3  # still at its quota: no call for a
    assert meta(rf)["calls"]["a"] == 10

    hotter = attrs.evolve(config, models=(attrs.evolve(config.models[0], parameters={
        **config.models[0].parameters, "temperature": 0.9}), config.models[1]))
    changes = find_drift(meta(rf).get("settings"), hotter)  # drift protection is on
    assert sorted((c.name, c.setting) for c in changes) == [("a", "judge.temperature"), ("a", "student.temperature"),
                                                             ("a", "teacher.temperature")]
