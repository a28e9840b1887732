"""On an ingested benchmark run, gold records are reported beside the headline (each judge's
agreement with gold, gold per student) and count in it only when the rubric names ``gold``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from coeval.storage import RunFolder
from coeval_analysis import analyze, load_run
from coeval_analysis.analysis import AnalysisOptions
from coeval_analysis.labels.reference_judge import reference_table

from tests.benchmarks.conftest import FIXTURES
from tests.benchmarks.test_continue import coeval, mixed_run

__all__ = ["mixed_run"]


def test_gold_of_an_ingested_run_is_the_reference(mixed_run: tuple[Path, RunFolder]) -> None:
    config, run = mixed_run
    coeval("ingest", "--run", str(run.root), "-b", "gsm8k,sciq", "--data-dir", str(FIXTURES))
    coeval("run", "--config", str(config), "--continue")
    data = load_run(run.root)
    ref = reference_table(data)
    assert set(ref["source"]) == {"gold"} and len(ref) == 10
    assert set(ref[ref["student"] == "good-student"]["score"]) == {1.0}
    assert set(ref[ref["student"] == "weak-student"]["score"]) == {0.0}
    summary = analyze(data, AnalysisOptions(n_boot=0)).summary["reference"]
    assert summary["n_gold"] == 10 and summary["n_labels"] == 0
    assert {j: v["gold"]["n"] for j, v in summary["judges"].items()} == {"author": 10, "critic": 10}


def _script_benchmark_scores(run: Path, judge: str, good: str, weak: str) -> None:
    """Every score ``judge`` gave the benchmark answers: ``good`` for the good student's,
    ``weak`` for the weak student's (a judge that agrees with gold, or one that is contrary)."""
    for path in (run / "phase5_evaluations").glob(f"*-benchmark.{judge}.evaluations.jsonl"):
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        for r in rows:
            level = good if r["student_model_id"] == "good-student" else weak
            r["scores"] = dict.fromkeys(r["scores"], level)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_gold_the_rubric_does_not_name_is_beside_the_headline_and_says_which_judge_is_contrary(
    mixed_run: tuple[Path, RunFolder], tmp_path: Path
) -> None:
    """``author`` agrees with gold, ``critic`` sees every benchmark answer upside down.
    judges_vs_gold says which is contrary; the gold the benchmark carries is a column beside
    the ranking: the headline is the one the run gives without gold."""
    config, run = mixed_run
    coeval("ingest", "--run", str(run.root), "-b", "gsm8k,sciq", "--data-dir", str(FIXTURES))
    coeval("run", "--config", str(config), "--continue")
    _script_benchmark_scores(run.root, "author", "High", "Low")
    _script_benchmark_scores(run.root, "critic", "Low", "High")
    without = tmp_path / "without-gold"
    shutil.copytree(run.root, without)
    for path in (without / "phase5_evaluations").glob("*.gold.evaluations.jsonl"):
        path.unlink()

    gold = analyze(load_run(run.root), AnalysisOptions(n_boot=0)).summary
    plain = analyze(load_run(without), AnalysisOptions(n_boot=0)).summary

    vs_gold = gold["reference"]["judges"]
    assert vs_gold["author"]["gold"]["pearson"] == 1.0 and vs_gold["critic"]["gold"]["pearson"] == -1.0
    columns = {c["key"]: c for c in gold["leaderboard"]["columns"]}
    assert columns["gold"]["in_headline"] is False and "gold" not in {c["key"] for c in plain["leaderboard"]["columns"]}
    for student, entry in gold["students"].items():
        assert entry["headline_score"] == plain["students"][student]["headline_score"]
    assert gold["judges"]["critic"]["scale"] == plain["judges"]["critic"]["scale"]
