"""On an ingested benchmark run, gold records become the reference judge's rows (what the
headline calibrates judges against) and each judge's agreement with gold is reported."""

from __future__ import annotations

from pathlib import Path

from coeval.storage import RunFolder
from coeval_analysis import analyze, load_run
from coeval_analysis.analysis import AnalysisOptions
from coeval_analysis.reference_judge import reference_table

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
