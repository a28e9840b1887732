"""The ``--continue`` estimate (printed before every ``coeval run --continue``): it counts
exactly the calls left, reads no complete phase, and measures token sizes from a sample."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from coeval.planning.cost import estimate_cost, history

from tests.core.pipeline_support import folder, make_config, meta, mock_model, run, task


def _left(estimate: object, phase: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for cell in estimate.cells:  # type: ignore[attr-defined]
        if cell.phase == phase and cell.calls:
            out[cell.model] = out.get(cell.model, 0) + cell.calls
    return out


@pytest.fixture
def finished(tmp_path: Path):  # type: ignore[no-untyped-def]
    config = make_config(tmp_path, [mock_model("a", seed=1), mock_model("b", seed=2)], [task(total=3)])
    assert run(config).exit_code == 0
    return config


def test_a_finished_run_has_nothing_left_and_its_records_are_not_read(finished, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    read: list[str] = []
    monkeypatch.setattr(history, "scan_phase", lambda run, phase, reduce: read.append(phase) or {})
    estimate = estimate_cost(finished, samples=0, continue_run=True)
    assert estimate.total["calls"] == 0
    assert read == []


def test_cut_records_are_counted_as_left_for_their_judge_only(finished) -> None:  # type: ignore[no-untyped-def]
    rf = folder(finished)
    data = meta(rf)
    data["phases_completed"] = [p for p in data["phases_completed"] if p != "evaluation"]
    rf.meta_path.write_text(json.dumps(data))
    path = next(p for p in rf.jsonl_files("evaluation") if p.name.endswith(".a.evaluations.jsonl"))
    kept = path.read_text().splitlines(keepends=True)
    assert len(kept) == 6  # 3 datapoints x 2 students of one teacher, judged by a
    path.write_text("".join(kept[:1]))

    estimate = estimate_cost(finished, samples=0, continue_run=True)
    assert _left(estimate, "evaluation") == {"a": 5}
    assert estimate.total["calls"] == 5


def test_calls_of_any_evaluator_that_names_a_model_count_as_done(finished) -> None:  # type: ignore[no-untyped-def]
    """A plugin evaluator's call (its record names the judge model) is a call made; a
    model-free evaluator's record (``label``) is not."""
    rf = folder(finished)
    before = history.done_calls(rf, finished)[("qa", "evaluation", "a")]
    path = next(p for p in rf.jsonl_files("evaluation") if p.name.endswith(".a.evaluations.jsonl"))
    base = json.loads(path.read_text().splitlines()[0])
    extra = [
        {**base, "id": base["response_id"] + "__pairwise__a", "evaluator": "pairwise", "judge_model_id": "a"},
        {**base, "id": base["response_id"] + "__label", "evaluator": "label", "judge_model_id": "label"},
    ]
    with path.open("a") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in extra)
    assert history.done_calls(rf, finished)[("qa", "evaluation", "a")] == before + 1


def test_token_sizes_come_from_a_bounded_sample_of_each_file(finished, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    rf = folder(finished)
    monkeypatch.setattr(history, "HISTORY_SAMPLE_PER_FILE", 2)
    measured = history.measured_history(rf, finished, phases={"evaluation"})
    # judge a has one evaluations file per teacher (a, b): 2 records read from each
    assert measured[("evaluation", "a")].calls == 4
    assert {phase for phase, _ in measured} == {"evaluation"}
    monkeypatch.setattr(history, "HISTORY_SAMPLE_PER_FILE", 1000)
    assert history.measured_history(rf, finished)[("evaluation", "a")].calls == 12


def test_the_mock_per_call_price_is_in_the_estimate_and_matches_the_spend(tmp_path: Path) -> None:
    config = make_config(tmp_path, [mock_model("a", seed=1, cost_per_call_usd=0.5)], [task(total=3)])
    estimate = estimate_cost(config, samples=0)
    calls = estimate.total["calls"]
    assert calls == 3 + 3 + 3  # datapoints, answers, judgments (one model in every role)
    assert estimate.total_cost_usd == pytest.approx(0.5 * calls)
    assert run(config).exit_code == 0
    assert meta(folder(config))["spend_usd"]["a"] == pytest.approx(0.5 * calls)
