"""An uninterrupted run under a budget and a quota: calls in flight count at their estimated
cost, so the budget is not overrun (``budget_usd: 0.006`` recorded $0.0117), and the run
says which limit stopped it and what is left."""

from __future__ import annotations

import pytest
from coeval.storage.call_ledger import read_ledger

from .pipeline_support import folder, make_config, meta, mock_model, run, task


def test_the_budget_holds_with_many_calls_in_flight(tmp_path) -> None:
    models = [mock_model(n, latency_ms=[20, 60], seed=i, cost_per_call_usd=0.001) for i, n in enumerate(("a", "b"))]
    cfg = make_config(tmp_path, models, [task(total=20)], budget_usd=0.006)
    result = run(cfg)
    assert result.exit_code == 3, result.message
    m = meta(folder(cfg))
    assert sum(m["spend_usd"].values()) == pytest.approx(0.006)
    assert sum(m["calls"].values()) == 6
    ledger = read_ledger(folder(cfg).root / "calls.jsonl")
    assert dict(ledger.calls) == m["calls"] and ledger.open == {}
    assert result.message.startswith("stopped by the budget (budget_usd $0.0060, $0.0060 spent): ")
    assert "raise experiment.budget_usd and run with --continue" in result.message


def test_a_quota_says_which_model_and_what_is_left(tmp_path) -> None:
    models = [mock_model("a", latency_ms=[5, 20], seed=1), mock_model("b", latency_ms=[5, 20], seed=2)]
    cfg = make_config(tmp_path, models, [task(total=4)], quota={"b": {"max_calls": 5}})
    result = run(cfg)
    assert result.exit_code == 3, result.message
    assert meta(folder(cfg))["calls"]["b"] == 5
    left = sum(r.skip_causes["quota"] for r in result.phases.values())
    assert result.message.startswith(f"stopped by the quota of b (max_calls 5, all made): {left} items left")
    assert "raise experiment.quota.b.max_calls and run with --continue" in result.message
