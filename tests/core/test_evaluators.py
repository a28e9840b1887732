"""The phase-5 evaluator contract: the registered evaluators, 0.1 evaluators adapted, rubric
factors routed to an evaluator by name (config rule V-47 and phase 5)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from coeval.config import ConfigError
from coeval.config.model import ModelConfig, TaskConfig
from coeval.config.validate import judged_factors
from coeval.evaluators.base import (
    EvaluationFailed,
    EvaluationRequest,
    Scorer,
    Scoring,
    as_evaluator,
)
from coeval.evaluators.calls import calls_per_response
from coeval.plugins.config_loading import load_config
from coeval.plugins.manager import Evaluator, collect_registries, get_plugin_manager
from coeval.run.options import RunOptions
from coeval.run.runner import arun_experiment
from coeval.storage.run_folder import iter_jsonl

from .pipeline_support import make_config, mock_model, task

TASK = TaskConfig(name="qa", description="Answer.")


class Loud:
    """A 0.1 evaluator: synchronous ``evaluate(task, rubric, datapoint, responses)``."""

    name = kind = "loud"

    def factors(self, task: TaskConfig, rubric: Mapping[str, Any], datapoint: Mapping[str, Any]) -> list[str]:
        return ["loud"]

    def evaluate(self, task: Any, rubric: Any, datapoint: Mapping[str, Any], responses: list[Any]) -> list[dict[str, float]]:
        if datapoint.get("broken"):
            raise RuntimeError("no reference")
        return [{"loud": 1.0 if str(r["response"]).isupper() else 0.0} for r in responses]


def _scoring(dp_id: str, answer: str, datapoint: Mapping[str, Any]) -> Scoring:
    response = {"id": f"{dp_id}__s", "datapoint_id": dp_id, "response": answer}
    return Scoring(f"{dp_id}__s__loud", Scorer("loud", ("loud",)), TASK, {}, datapoint, response)


async def _no_calls(scorings: Sequence[Scoring], build: Any) -> None:
    raise AssertionError("a model-free evaluator made a call")


def test_registered_evaluators_follow_the_contract() -> None:
    regs = collect_registries(get_plugin_manager())
    assert {"llm_judge", "label", "metric"} <= set(regs.evaluators.names())
    for entry in regs.evaluators:
        assert isinstance(entry.value, Evaluator)
        assert asyncio.iscoroutinefunction(entry.value.evaluate)


def test_a_synchronous_evaluator_is_adapted_and_fails_per_datapoint() -> None:
    ev = as_evaluator(Loud())
    assert isinstance(ev, Evaluator) and (ev.name, ev.kind) == ("loud", "loud")
    assert ev.scorers(TASK, ["loud"], []) == [Scorer("loud", ("loud",))]
    scorings = [_scoring("d1", "YES", {"id": "d1"}), _scoring("d2", "no", {"id": "d2", "broken": True}),
                _scoring("d1", "quiet", {"id": "d1"})]
    results = asyncio.run(ev.evaluate(EvaluationRequest(scorings), _no_calls))
    assert results == [{"loud": 1.0}, EvaluationFailed("RuntimeError: no reference"), {"loud": 0.0}]


def test_an_object_without_evaluate_is_refused_by_name() -> None:
    class Nothing:
        name = "nothing"

    with pytest.raises(TypeError, match="evaluator 'nothing' has no evaluate/factors methods"):
        as_evaluator(Nothing())


def test_a_synchronous_plugin_evaluator_writes_its_records_in_a_run(tmp_path: Path) -> None:
    regs = collect_registries(get_plugin_manager())
    regs.evaluators.add("loud", Loud(), "legacy-plugin")
    config = make_config(tmp_path, [mock_model("mock-a")], [task(total=2)])
    result = asyncio.run(arun_experiment(config, RunOptions(progress=False), registries=regs))
    assert result.exit_code == 0, result.message
    records = [r for path in sorted((result.run_folder / "phase5_evaluations").glob("*.loud.*")) for r in iter_jsonl(path)]
    responses = [r for path in (result.run_folder / "phase4_responses").glob("*.jsonl") for r in iter_jsonl(path)]
    assert sorted(r["id"] for r in records) == sorted(f"{r['id']}__loud" for r in responses)
    assert all(r["evaluator"] == "loud" and r["status"] == "ok" and r["attempts"] == 0 for r in records)


def test_a_factor_may_name_the_llm_judge_explicitly(tmp_path: Path) -> None:
    rubric = {"correctness": {"description": "The answer is right.", "evaluator": "llm_judge"},
              "clarity": "The answer is clear."}
    config = make_config(tmp_path, [mock_model("mock-a")], [task(total=2, rubric=rubric)])
    result = asyncio.run(arun_experiment(config, RunOptions(progress=False)))
    assert result.exit_code == 0, result.message
    records = [r for path in (result.run_folder / "phase5_evaluations").glob("*.jsonl") for r in iter_jsonl(path)]
    assert records and all(set(r["scores"]) == {"correctness", "clarity"} for r in records)


def _raw(tmp_path: Path, evaluator: str) -> dict[str, Any]:
    rubric = {"correctness": "Right.", "preference": {"description": "Preferred.", "evaluator": evaluator}}
    return {"models": [mock_model("mock-a")], "tasks": [task(rubric=rubric)],
            "experiment": {"id": "e", "storage_folder": str(tmp_path / "runs")}}


def test_an_unknown_factor_evaluator_is_rule_v47_with_a_suggestion(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(_raw(tmp_path, "llm_juge"), check_filesystem=False)
    issues = [i for i in caught.value.issues if i.rule == "V-47"]
    assert [(i.path, i.message) for i in issues] == [
        ("tasks[0].rubric.preference.evaluator",
         "unknown evaluator 'llm_juge' (no installed plugin registers it) (did you mean 'llm_judge'?)")]


def test_the_cli_exits_2_with_one_line_for_an_unknown_factor_evaluator(tmp_path: Path) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(_raw(tmp_path, "pairwize")))
    done = subprocess.run([sys.executable, "-m", "coeval.cli.main", "run", "--config", str(path), "--dry-run"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 2
    assert "V-47" in done.stderr + done.stdout and "Traceback" not in done.stderr
    assert "unknown evaluator 'pairwize'" in done.stderr + done.stdout


def test_a_factor_routed_to_another_evaluator_is_not_judged(tmp_path: Path) -> None:
    assert judged_factors(_raw(tmp_path, "pairwise")["tasks"][0]) == ["correctness"]
    assert judged_factors(_raw(tmp_path, "llm_judge")["tasks"][0]) == ["correctness", "preference"]


def test_calls_per_response_count_every_evaluator_that_calls_a_model() -> None:
    judges = [ModelConfig(name="judge-a", interface="mock", roles=("judge",)),
              ModelConfig(name="judge-b", interface="mock", roles=("judge",))]
    rubric = {"correctness": "Right.", "clarity": "Clear.", "overlap": {"metric": "bleu"},
              "preference": {"description": "Preferred.", "evaluator": "twice"}}

    class Twice:
        """Two calls per response, on the first judge, for factors routed to it."""

        name = kind = "twice"

        def factors(self, task: TaskConfig, rubric: Mapping[str, Any], datapoint: Mapping[str, Any]) -> list[str]:
            return [f for f, spec in rubric.items() if isinstance(spec, dict) and spec.get("evaluator") == "twice"]

        def scorers(self, task: TaskConfig, factors: Sequence[str], judges: Sequence[ModelConfig]) -> list[Scorer]:
            return [Scorer(f"twice:{n}", tuple(factors), None, judges[0]) for n in range(2)]

        async def evaluate(self, request: EvaluationRequest, submit: Any) -> list[Any]:
            return []

    regs = collect_registries(get_plugin_manager())
    evaluators = [*(e.value for e in regs.evaluators), Twice()]
    single = TaskConfig(name="qa", description="Answer.")
    per_factor = TaskConfig(name="qa", description="Answer.", evaluation_mode="per_factor")
    assert calls_per_response(evaluators, single, rubric, judges) == {"judge-a": 3, "judge-b": 1}
    assert calls_per_response(evaluators, per_factor, rubric, judges) == {"judge-a": 4, "judge-b": 2}


def test_an_evaluator_that_raises_stops_the_phase_with_its_name(tmp_path: Path) -> None:
    class Boom:
        name = kind = "boom"

        def factors(self, task: TaskConfig, rubric: Mapping[str, Any], datapoint: Mapping[str, Any]) -> list[str]:
            return ["boom"]

        def scorers(self, task: TaskConfig, factors: Sequence[str], judges: Sequence[ModelConfig]) -> list[Scorer]:
            return [Scorer(self.name, tuple(factors))]

        async def evaluate(self, request: EvaluationRequest, submit: Any) -> list[Any]:
            raise RuntimeError("kaput")

    regs = collect_registries(get_plugin_manager())
    regs.evaluators.add("boom", Boom(), "broken-plugin")
    config = make_config(tmp_path, [mock_model("mock-a")], [task(total=1)])
    result = asyncio.run(arun_experiment(config, RunOptions(progress=False), registries=regs))
    assert (result.exit_code, result.message) == (1, "evaluator 'boom' failed: RuntimeError: kaput")
