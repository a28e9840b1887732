"""Phase 5's ``label`` evaluator and the analysis agree on what matches a label.

Both score through :func:`coeval.answer_checks.labels.normalise_label`; decorated answers and decorated
gold labels (curly quotes, ``%``, ``#``, guillemets, tildes) match on both sides, and an
answer that says more than the label matches on neither.
"""

from __future__ import annotations

import pytest
from coeval.answer_checks.labels import normalise_label
from coeval.config.model import TaskConfig
from coeval.evaluators.label import LabelEvaluator
from coeval_analysis.labels.exact_match import LabelScorer

TASK = TaskConfig(name="sentiment", description="d", label_attributes=("sentiment",))

# (answer, gold, expected score)
CASES = [
    ("\u201cpositive\u201d", "positive", 1.0),
    ("\u2018positive\u2019", "positive", 1.0),
    ("positive%", "positive", 1.0),
    ("#positive", "positive", 1.0),
    ("\u00abnegative\u00bb", "negative", 1.0),
    ("~neutral~", "neutral", 1.0),
    ("positive", "\u201cpositive\u201d", 1.0),
    ("negative", "\u00abnegative\u00bb", 1.0),
    ("neutral", "~neutral~", 1.0),
    ("**Very_positive.**", "very-positive", 1.0),
    ("The answer is positive", "positive", 0.0),
    ("negative", "positive", 0.0),
    ("", "positive", 0.0),
]


def _phase5_score(answer: str, gold: str) -> float:
    datapoint = {"sampled_target_attributes": {"sentiment": gold}}
    scores = LabelEvaluator().score(TASK, {}, datapoint, [{"response": answer}])
    return scores[0]["sentiment"]


@pytest.mark.parametrize(("answer", "gold", "expected"), CASES)
def test_phase5_label_evaluator_scores(answer: str, gold: str, expected: float) -> None:
    assert _phase5_score(answer, gold) == expected


@pytest.mark.parametrize(("answer", "gold", "expected"), CASES)
def test_analysis_scores_the_same(answer: str, gold: str, expected: float) -> None:
    assert LabelScorer("multiclass").score([answer], [gold]) == [expected]


@pytest.mark.parametrize(
    ("text", "norm"),
    [("\u201cPositive\u201d", "positive"), ("#positive", "positive"), ("positive%", "positive"),
     ("\u00abnegative\u00bb", "negative"), ("~neutral~", "neutral"), ("Very-Positive!", "very positive")],
)
def test_one_normaliser(text: str, norm: str) -> None:
    assert normalise_label(text) == norm
