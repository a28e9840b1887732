"""Pipelined phases (``coeval run --pipeline``): a datapoint is answered as soon as it
exists and an answer judged as soon as it exists, with the same records as phases run
one by one."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from coeval.storage import run_folder
from coeval.storage.run_folder import RunFolder

from .pipeline_support import folder, make_config, meta, mock_model, run, task

PHASE_OF_DIR = {"phase3_datapoints": 3, "phase4_responses": 4, "phase5_evaluations": 5}
#: Fields that differ between two runs of the same config (wall time, input versions).
VOLATILE = {"generated_at", "evaluated_at", "latency_ms", "datapoint_hash", "response_hash"}


def _models() -> list[dict[str, Any]]:
    return [mock_model("alpha", latency_ms=[20, 150], seed=1), mock_model("beta", latency_ms=[20, 150], seed=2)]


def _writes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The phase (3, 4 or 5) of every record written, in the order written."""
    order: list[int] = []
    original = run_folder.JsonlWriter.write

    def noting(self: run_folder.JsonlWriter, record: dict[str, Any]) -> None:
        phase = PHASE_OF_DIR.get(self.path.parent.name)
        if phase is not None:
            order.append(phase)
        original(self, record)

    monkeypatch.setattr(run_folder.JsonlWriter, "write", noting)
    return order


def _records(rf: RunFolder) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for phase in ("data_generation", "response_collection", "evaluation"):
        for path in rf.jsonl_files(phase):
            for line in path.read_text().splitlines():
                rec = json.loads(line)
                assert rec["id"] not in out, f"{rec['id']} written twice"
                out[rec["id"]] = {k: v for k, v in rec.items() if k not in VOLATILE}
    return out


def _overlaps(order: list[int], downstream: int) -> bool:
    """Whether a record of phase ``downstream`` was written before the last of the phase before it."""
    last_upstream = max(i for i, p in enumerate(order) if p == downstream - 1)
    return any(p == downstream for p in order[:last_upstream])


def test_pipelined_phases_answer_and_judge_before_the_phase_before_them_ends(tmp_path: Path, monkeypatch) -> None:
    order = _writes(monkeypatch)
    cfg = make_config(tmp_path, _models(), [task(total=40)])
    result = run(cfg, pipeline=True)
    assert result.exit_code == 0, result.message
    assert _overlaps(order, 4) and _overlaps(order, 5)
    assert meta(folder(cfg))["phases_completed"][-3:] == ["data_generation", "response_collection", "evaluation"]


def test_phases_run_one_by_one_without_pipeline(tmp_path: Path, monkeypatch) -> None:
    order = _writes(monkeypatch)
    cfg = make_config(tmp_path, _models(), [task(total=40)])
    assert run(cfg, pipeline=False).exit_code == 0
    assert not _overlaps(order, 4) and not _overlaps(order, 5)


def test_pipelined_records_equal_those_of_phases_run_one_by_one(tmp_path: Path) -> None:
    one_by_one = make_config(tmp_path, _models(), [task(total=40)], exp_id="one-by-one")
    pipelined = make_config(tmp_path, _models(), [task(total=40)], exp_id="pipelined")
    assert run(one_by_one, pipeline=False).exit_code == 0
    result = run(pipelined, pipeline=True)
    assert result.exit_code == 0
    expected = _records(folder(one_by_one))
    assert len(expected) == 2 * 40 * (1 + 2 + 2 * 2)
    assert _records(folder(pipelined)) == expected
    counts = result.counts()
    assert [counts[p]["written"] for p in ("data_generation", "response_collection", "evaluation")] == [80, 160, 320]


def test_a_quota_stops_a_pipelined_run_as_it_stops_one_run_phase_by_phase(tmp_path: Path) -> None:
    models = [mock_model("capped", ["student"], latency_ms=[5, 30]), mock_model("free", latency_ms=[5, 30])]
    cfg = make_config(tmp_path, models, [task(total=6)], quota={"capped": {"max_calls": 4}})
    result = run(cfg, pipeline=True)
    assert result.exit_code == 3
    rf = folder(cfg)
    assert meta(rf)["calls"]["capped"] == 4
    answers = _records(rf)
    assert sum(1 for r in answers.values() if r.get("student_model_id") == "capped" and "response" in r) == 4
    # raised, --continue fills exactly the gaps
    cfg2 = make_config(tmp_path, models, [task(total=6)], quota={"capped": {"max_calls": 100}})
    assert run(cfg2, continue_run=True, pipeline=True).exit_code == 0
    assert sum(1 for r in _records(rf).values() if r.get("student_model_id") == "capped" and "response" in r) == 6


def test_a_pipelined_phases_lane_figures_add_up_its_passes(tmp_path: Path) -> None:
    from coeval.run.lane_figures import read_lanes

    cfg = make_config(tmp_path, _models(), [task(total=40)])
    assert run(cfg, pipeline=True).exit_code == 0
    phases = read_lanes(folder(cfg).root)["phases"]
    calls = {phase: sum(row["calls"] for row in phases[phase]["lanes"])
             for phase in ("data_generation", "response_collection", "evaluation")}
    assert calls == {"data_generation": 80, "response_collection": 160, "evaluation": 320}


def test_a_pipelined_pass_builds_only_the_items_no_pass_took(tmp_path: Path, monkeypatch) -> None:
    """Each pass lists everything its upstream has written so far; the items earlier passes
    took are skipped before their prompts are rendered, so each answer and judgment is built
    once (before, a pass rendered every prompt afresh and dropped the taken ones)."""
    from coeval.phases.evaluation import EvaluationPhase
    from coeval.phases.responses import ResponseCollectionPhase

    built: dict[str, list[str]] = {"responses": [], "judgments": []}
    make_answer, make_judgment = ResponseCollectionPhase._item, EvaluationPhase._item

    def answer(self: Any, ctx: Any, ask: Any) -> Any:
        item = make_answer(self, ctx, ask)
        built["responses"].append(item.key)
        return item

    def judgment(self: Any, ctx: Any, ev: Any, scoring: Any, call: Any, replacing: Any) -> Any:
        item = make_judgment(self, ctx, ev, scoring, call, replacing)
        built["judgments"].append(item.key)
        return item

    monkeypatch.setattr(ResponseCollectionPhase, "_item", answer)
    monkeypatch.setattr(EvaluationPhase, "_item", judgment)
    cfg = make_config(tmp_path, _models(), [task(total=40)])
    assert run(cfg, pipeline=True).exit_code == 0
    rf = folder(cfg)
    for kind, phase in (("responses", "response_collection"), ("judgments", "evaluation")):
        keys = built[kind]
        assert len(keys) == len(set(keys)), f"{kind}: {len(keys) - len(set(keys))} built again"
        written = sum(len(path.read_text().splitlines()) for path in rf.jsonl_files(phase))
        assert len(keys) == written



@pytest.mark.slow
def test_one_slow_judgment_does_not_hold_back_the_judging_of_later_answers(tmp_path: Path, monkeypatch) -> None:
    """Under heavy-tailed latency one call can take many times the others. A pass whose
    items are all handed out waits only for its calls in flight: the passes after it go on
    judging the answers written meanwhile. Before, at most two passes ran at once, so the
    third waited for the slow call while the connection's slots ran dry."""
    from coeval.interfaces.mock import MockInterface
    from coeval.planning.cost.samples import in_estimate_sample

    order = _writes(monkeypatch)
    original = MockInterface.generate
    judged_meanwhile: list[int] = []

    async def one_slow_judgment(self: MockInterface, request: Any) -> Any:
        if request.role == "judge" and not judged_meanwhile and not in_estimate_sample():
            judged_meanwhile.append(-1)
            await asyncio.sleep(2.0)
            judged_meanwhile[0] = order.count(5)
        return await original(self, request)

    monkeypatch.setattr(MockInterface, "generate", one_slow_judgment)
    cfg = make_config(tmp_path, _models(), [task(total=40)])
    assert run(cfg, pipeline=True).exit_code == 0
    assert order.count(5) == 2 * 40 * 2 * 2
    assert judged_meanwhile == [order.count(5) - 1]  # every other judgment, while the slow one ran
