"""Label exact-match in three modes, and per-label precision/recall/F1 against sklearn."""

from __future__ import annotations

import pytest
from coeval_analysis.labels.exact_match import (
    LabelScorer,
    extract_labels,
    normalise_label,
    precision_recall_f1,
    split_labels,
)

sk_metrics = pytest.importorskip("sklearn.metrics")
sk_pre = pytest.importorskip("sklearn.preprocessing")


@pytest.mark.parametrize(
    ("text", "norm"),
    [
        ("Positive.", "positive"),
        ("  **NEGATIVE**  ", "negative"),
        ('"very_positive"', "very positive"),
        ("Very-Positive!", "very positive"),
        ("mixed   feelings", "mixed feelings"),
    ],
)
def test_normalise_label(text: str, norm: str) -> None:
    assert normalise_label(text) == norm


def test_multiclass_answer_must_be_the_label() -> None:
    scorer = LabelScorer("multiclass")
    assert scorer.score(["Positive.", "The answer is positive", ""], ["positive", "positive", "positive"]) == [
        1.0, 0.0, 0.0]  # fmt: skip


def test_multilabel_compares_sets() -> None:
    scorer = LabelScorer("multilabel")
    assert split_labels("sports, Politics and tech") == ["sports", "politics", "tech"]
    assert scorer.score(["politics; sports", "sports"], [["sports", "politics"], "sports, politics"]) == [
        1.0,
        0.0,
    ]


def test_extraction_finds_the_final_verdict() -> None:
    allowed = ["positive", "negative", "neutral"]
    assert extract_labels("It is not negative; overall the tone is positive.", allowed) == ["positive"]
    assert extract_labels("Reasoning...\nAnswer: neutral", allowed) == ["neutral"]
    assert extract_labels("I cannot tell.", allowed) == []
    assert extract_labels("positively", allowed) == []  # whole words only
    scorer = LabelScorer("extraction", allowed=allowed)
    assert scorer.score(["so: NEGATIVE", "Hmm."], ["negative", "negative"]) == [1.0, 0.0]


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="label mode"):
        LabelScorer("fuzzy")  # type: ignore[arg-type]


def test_multiclass_prf_matches_sklearn() -> None:
    gold = ["a", "b", "c", "a", "b", "a", "c", "c"]
    pred = ["a", "c", "c", "a", "b", "b", "c", "a"]
    rep = precision_recall_f1([[g] for g in gold], [[p] for p in pred])
    p, r, f, support = sk_metrics.precision_recall_fscore_support(
        gold, pred, labels=["a", "b", "c"], zero_division=0
    )
    table = rep.per_label.set_index("label")
    assert list(table["precision"]) == pytest.approx(list(p))
    assert list(table["recall"]) == pytest.approx(list(r))
    assert list(table["f1"]) == pytest.approx(list(f))
    assert list(table["support"]) == list(support)
    assert rep.macro["f1"] == pytest.approx(sk_metrics.f1_score(gold, pred, average="macro"))
    assert rep.micro["f1"] == pytest.approx(sk_metrics.f1_score(gold, pred, average="micro"))
    assert rep.accuracy == pytest.approx(sk_metrics.accuracy_score(gold, pred))


def test_multilabel_prf_matches_sklearn() -> None:
    gold = [{"x", "y"}, {"y"}, {"z"}, set(), {"x", "z"}]
    pred = [{"x"}, {"y", "z"}, {"z"}, {"x"}, {"x", "y", "z"}]
    labels = ["x", "y", "z"]
    mlb = sk_pre.MultiLabelBinarizer(classes=labels)
    yt, yp = mlb.fit_transform(gold), mlb.transform(pred)
    rep = precision_recall_f1(gold, pred, labels=labels)
    p, r, f, _ = sk_metrics.precision_recall_fscore_support(yt, yp, zero_division=0)
    table = rep.per_label.set_index("label")
    assert list(table["precision"]) == pytest.approx(list(p))
    assert list(table["recall"]) == pytest.approx(list(r))
    assert list(table["f1"]) == pytest.approx(list(f))
    assert rep.micro["f1"] == pytest.approx(sk_metrics.f1_score(yt, yp, average="micro", zero_division=0))
    assert rep.macro["f1"] == pytest.approx(sk_metrics.f1_score(yt, yp, average="macro", zero_division=0))
