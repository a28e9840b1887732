"""Deterministic checks as rubric factors: exact pass counts per check, parameter validation
(V-60), records written like other evaluator records, and no call in the plan."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from coeval.config import ConfigError
from coeval.config.model import TaskConfig
from coeval.evaluators.base import EvaluationRequest, Scorer, Scoring
from coeval.evaluators.checks import CHECK_NAMES, CheckEvaluator
from coeval.planning import plan_experiment
from coeval.plugins.config_loading import load_config
from coeval.plugins.manager import _collect as collect_registries
from coeval.plugins.manager import get_plugin_manager

from .pipeline_support import folder, make_config, mock_model, ok_records, run, task

TASK = TaskConfig(name="qa", description="Answer.")

#: The same eight answers go through every check; each check has its own exact pass count.
ANSWERS = [
    "Your refund is on its way.",
    "REFUND approved, order #123456.",
    "Sorry, no refund.",
    '{"id": 7, "status": "ok"}',
    '```json\n{"id": "x"}\n```',
    "[1, 2, 3]",
    "  Paris. ",
    "one two three four five six seven eight nine ten eleven",
]
DATAPOINT = {"id": "d1", "prompt": "?", "reference_response": "paris"}

CASES: list[tuple[str, dict[str, Any], list[int]]] = [
    ("contains", {"value": "refund"}, [0, 1, 2]),
    ("contains", {"value": "refund", "case_sensitive": True}, [0, 2]),
    ("not_contains", {"value": "sorry"}, [0, 1, 3, 4, 5, 6, 7]),
    ("regex", {"pattern": r"#\d{6}"}, [1]),
    ("regex", {"pattern": "^your", "ignore_case": True}, [0]),
    ("equals", {}, [6]),  # against the reference answer, normalised
    ("equals", {"value": "[1, 2, 3]"}, [5]),
    ("json_valid", {}, [3, 4, 5]),
    ("json_schema", {"schema": {"type": "object", "required": ["id"],
                                "properties": {"id": {"type": "integer"}}}}, [3]),
    ("max_words", {"limit": 4}, [1, 2, 3, 4, 5, 6]),
    ("python", {"function": "my_checks:mentions_order"}, [1]),
]


async def _no_calls(scorings: Sequence[Scoring], build: Any) -> None:
    raise AssertionError("a check made a model call")


def _score(name: str, params: dict[str, Any]) -> list[float]:
    ev = CheckEvaluator(name)
    rubric = {"f": {"evaluator": name, "params": params}}
    assert ev.factors(TASK, rubric, DATAPOINT) == ["f"]
    scorings = [
        Scoring(f"r{i}__{name}", Scorer(name, ("f",)), TASK, rubric, DATAPOINT,
                {"id": f"r{i}", "datapoint_id": "d1", "response": a})
        for i, a in enumerate(ANSWERS)
    ]
    results = asyncio.run(ev.evaluate(EvaluationRequest(scorings), _no_calls))
    return [r["f"] for r in results]  # type: ignore[index]


@pytest.fixture
def user_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "my_checks.py").write_text(
        "def mentions_order(answer, datapoint):\n    return '#' in answer\n"
        "def broken(answer, datapoint):\n    return 3\n"
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(("name", "params", "passing"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_check_passes_exactly_the_expected_answers(
    user_checks: Path, name: str, params: dict[str, Any], passing: list[int]
) -> None:
    scores = _score(name, params)
    assert [i for i, s in enumerate(scores) if s == 1.0] == passing
    assert all(s in (0.0, 1.0) for s in scores)


def test_every_check_is_covered_and_registered() -> None:
    assert {c[0] for c in CASES} == set(CHECK_NAMES)
    regs = collect_registries(get_plugin_manager())
    assert set(CHECK_NAMES) <= set(regs.evaluators.names())


def test_a_python_check_returning_a_bad_value_fails_the_records(user_checks: Path) -> None:
    ev = CheckEvaluator("python")
    rubric = {"f": {"evaluator": "python", "params": {"function": "my_checks:broken"}}}
    scoring = Scoring("r__python", Scorer("python", ("f",)), TASK, rubric, DATAPOINT, {"id": "r", "datapoint_id": "d1",
                                                                                      "response": "x"})
    [result] = asyncio.run(ev.evaluate(EvaluationRequest([scoring]), _no_calls))
    assert "must return a bool or a number in [0, 1]" in str(result)


def _raw(tmp_path: Path, rubric: dict[str, Any]) -> dict[str, Any]:
    return {
        "models": [mock_model("m")],
        "tasks": [task(rubric=rubric)],
        "experiment": {"id": "e", "storage_folder": str(tmp_path / "runs")},
    }


def test_bad_check_parameters_are_all_reported_by_v60(tmp_path: Path) -> None:
    rubric = {
        "a": {"evaluator": "regex", "params": {"pattern": "("}},
        "b": {"evaluator": "contains", "params": {"valeu": "x"}},
        "c": {"evaluator": "max_words", "params": {"limit": 0}},
        "d": {"evaluator": "json_schema", "params": {"schema": {"type": "objekt"}}},
        "e": {"evaluator": "python", "params": {"function": "nowhere:check"}},
        "f": {"evaluator": "contains"},
        "ok": "The answer is right.",
    }
    path = tmp_path / "c.yaml"
    import yaml

    path.write_text(yaml.safe_dump(_raw(tmp_path, rubric)))
    with pytest.raises(ConfigError) as err:
        load_config(path, check_filesystem=False)
    v60 = {i.path: i.message for i in err.value.issues if i.rule == "V-60"}
    assert set(v60) == {f"tasks[0].rubric.{f}.params" for f in "abcdef"}
    assert "not a valid regular expression" in v60["tasks[0].rubric.a.params"]
    assert "does not take valeu (it takes: value, case_sensitive)" in v60["tasks[0].rubric.b.params"]
    assert "limit must be a whole number >= 1" in v60["tasks[0].rubric.c.params"]
    assert "not a valid JSON Schema" in v60["tasks[0].rubric.d.params"]
    assert "module 'nowhere'" in v60["tasks[0].rubric.e.params"] and str(tmp_path) in v60["tasks[0].rubric.e.params"]
    assert v60["tasks[0].rubric.f.params"] == "contains needs params.value"
    issue = next(i for i in err.value.issues if i.rule == "V-60")
    assert issue.line is not None and issue.source == str(path)


def test_checks_run_in_the_pipeline_without_calls(work: Path) -> None:
    (work / "my_checks.py").write_text("def short(answer, datapoint):\n    return len(answer) < 10_000\n")
    rubric = {
        "correctness": "The answer is right.",
        "has_text": {"evaluator": "regex", "params": {"pattern": r"\w"}},
        "never": {"evaluator": "contains", "params": {"value": "zzzz-not-there"}},
        "short": {"evaluator": "python", "params": {"function": "my_checks:short"}},
    }
    only_checks = {k: v for k, v in rubric.items() if k != "correctness"}
    config = make_config(work, [mock_model("m")], [task(rubric=rubric), task("checks_only", rubric=only_checks)])
    plan = plan_experiment(config)
    phase5 = next(p for p in plan.phases if p.phase == "evaluation")
    assert phase5.calls == 3  # one judge call per response of qa: the checks cost nothing
    assert {t.name: t.calls.get("evaluation", 0) for t in plan.tasks} == {"qa": 3, "checks_only": 0}
    result = run(config)
    assert result.exit_code == 0
    evals = ok_records(folder(config), "evaluation")
    by_check = {}
    for rec in evals.values():
        by_check.setdefault(rec["judge_model_id"], []).append(rec)
    assert len(by_check["regex"]) == 6 and len(by_check["contains"]) == 6 and len(by_check["python"]) == 6
    assert all(r["scores"] == {"has_text": 1.0} for r in by_check["regex"])
    assert all(r["scores"] == {"never": 0.0} for r in by_check["contains"])
    assert all(r["scores"] == {"short": 1.0} for r in by_check["python"])
    rec = by_check["contains"][0]
    assert rec["evaluator"] == "contains" and rec["cost_usd"] == 0.0
    assert rec["checks"] == {"never": {"check": "contains", "params": {"value": "zzzz-not-there"}}}
    assert len(by_check["m"]) == 3  # the judge scored only the task with a judged factor
