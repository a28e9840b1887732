"""The gold evaluator scores student answers (never the reference) with the native metric."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from coeval.config.model import TaskConfig
from coeval.evaluators.base import Evaluator
from coeval.plugins.manager import registries
from coeval_benchmarks.adapters.gsm8k import GSM8K
from coeval_benchmarks.adapters.humaneval import HumanEval
from coeval_benchmarks.adapters.mmlu import MMLU
from coeval_benchmarks.adapters.truthfulqa import TruthfulQA
from coeval_benchmarks.adapters.xsum import XSum
from coeval_benchmarks.gold import GoldEvaluator
from coeval_benchmarks.ingest import load_items

FIXTURES = Path(__file__).parent / "fixtures"
TASK = TaskConfig(name="t", description="d")


def datapoint(adapter, index: int = 0) -> dict:
    items, _ = load_items(adapter, adapter.default_split, FIXTURES)
    item = items[index]
    return {"id": f"dp-{index}", "prompt": item.prompt, "reference_response": item.reference, **item.gold_fields()}


def replies(*texts: str) -> list[dict]:
    return [{"id": f"r{i}", "response": t} for i, t in enumerate(texts)]


class WordOverlap:
    """A stand-in similarity metric: share of reference words found in the candidate."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], list[str]]] = []

    def score(self, candidates: list[str], references: list[str]) -> list[float]:
        self.calls.append((list(candidates), list(references)))
        out = []
        for cand, ref in zip(candidates, references, strict=True):
            words = set(ref.lower().split())
            out.append(len(words & set(cand.lower().split())) / len(words) if words else 0.0)
        return out


def test_registered_as_the_gold_evaluator() -> None:
    entry = registries().evaluators.entry("gold")
    assert entry.plugin == "benchmarks"
    assert isinstance(entry.value, Evaluator)
    assert (entry.value.name, entry.value.kind) == ("gold", "gold")


def test_does_not_apply_to_datapoints_without_gold() -> None:
    llm_datapoint = {"id": "x", "prompt": "p", "reference_response": "r", "sampled_target_attributes": {}}
    assert GoldEvaluator().factors(TASK, {}, llm_datapoint) == []


def test_multiple_choice_scores_the_students_letter() -> None:
    dp = datapoint(MMLU())  # gold C ("29")
    evaluator = GoldEvaluator()
    assert evaluator.factors(TASK, {}, dp) == ["gold"]
    scores = evaluator.score(TASK, {}, dp, replies(
        "C", "The answer is C.", "(C) 29", "Answer: c", "29", "B", "The answer is B.", "I don't know", "",
    ))
    assert [s["gold"] for s in scores] == [1, 1, 1, 1, 1, 0, 0, 0, 0]


def test_multiple_choice_does_not_score_the_reference_against_itself() -> None:
    dp = datapoint(MMLU())
    wrong = GoldEvaluator().score(TASK, {}, dp, replies("A"))
    assert wrong == [{"gold": 0.0}]


def test_numbers_score_by_value_after_extraction() -> None:
    dp = datapoint(GSM8K(), 1)  # gold "1,250"
    scores = GoldEvaluator().score(TASK, {}, dp, replies(
        "5 * 250 = 1250\n#### 1250", "The total is $1,250.", "the result is 1250.0", "#### 1,250",
        "#### 1200", "I think 250 dollars each, so 5 tickets.",
    ))
    assert [s["gold"] for s in scores] == [1, 1, 1, 1, 0, 0]


def test_similarity_uses_the_registered_metric_against_the_best_reference() -> None:
    metric = WordOverlap()
    evaluator = GoldEvaluator({"bertscore": lambda: metric})
    dp = datapoint(XSum())
    assert evaluator.factors(TASK, {}, dp) == ["gold"]
    good, bad, empty = evaluator.score(TASK, {}, dp, replies(
        "A new public library will open in the old station building.", "Rain flooded roads.", "  ",
    ))
    assert good["gold"] == pytest.approx(1.0) and bad["gold"] < 0.2 and empty["gold"] == 0.0
    assert len(metric.calls) == 1  # one batched call for all responses


def test_truthfulqa_is_scored_by_closeness_to_true_versus_false_answers() -> None:
    metric = WordOverlap()
    dp = datapoint(TruthfulQA())
    true_reply, false_reply = GoldEvaluator({"bleu": lambda: metric}).score(TASK, {}, dp, replies(
        "It just passes through your digestive system.", "It stays in your stomach for seven years.",
    ))
    assert (true_reply["gold"], false_reply["gold"]) == (1.0, 0.0)


def bleu_code(index: int = 0) -> dict:
    """A HumanEval item as a code item scored by similarity (HumanEval itself runs its tests)."""
    return {**datapoint(HumanEval(), index), "gold_metric": "bleu"}


def test_humaneval_gold_is_its_tests_not_bleu() -> None:
    assert GoldEvaluator({"bleu": WordOverlap}).factors(TASK, {}, datapoint(HumanEval())) == []


def test_code_is_compared_without_the_copied_signature_and_docstring() -> None:
    metric = WordOverlap()
    dp = bleu_code()
    echo_prompt = "```python\n" + dp["code_prefix"] + "    pass\n```"
    solved = "```python\n" + dp["code_prefix"] + "    return x + 1\n```"
    echo, good = GoldEvaluator({"bleu": lambda: metric}).score(TASK, {}, dp, replies(echo_prompt, solved))
    assert good["gold"] == pytest.approx(1.0) and echo["gold"] == 0.0
    assert all("Return x plus one" not in cand for cand in metric.calls[0][0])


def test_missing_metric_degrades_clearly(caplog: pytest.LogCaptureFixture) -> None:
    evaluator = GoldEvaluator({})
    with caplog.at_level(logging.WARNING, logger="coeval_benchmarks.gold"):
        assert evaluator.factors(TASK, {}, datapoint(XSum())) == []
        assert evaluator.factors(TASK, {}, datapoint(XSum(), 1)) == []
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "'bertscore' metric" in warnings[0] and "coeval-analysis" in warnings[0]
    # choice and number scoring need no metric
    assert evaluator.factors(TASK, {}, datapoint(MMLU())) == ["gold"]


def test_a_metric_that_fails_to_load_does_not_stop_scoring(caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> None:
        raise OSError("model files not found")

    evaluator = GoldEvaluator({"bleu": broken})
    with caplog.at_level(logging.WARNING, logger="coeval_benchmarks.gold"):
        assert evaluator.factors(TASK, {}, bleu_code()) == []
    assert "model files not found" in caplog.text


def test_real_bleu_from_the_metrics_registry_scores_code() -> None:
    """With coeval-analysis installed, gold scoring uses its registered metrics."""
    import coeval_analysis  # noqa: F401  (its metrics are what is tested)
    code = bleu_code(1)
    right = "```python\n" + code["code_prefix"] + code["labels"][0] + "```"
    wrong = "```python\n" + code["code_prefix"] + "    return sorted(xs)[::-1]\n```"
    good, bad = _bound().score(TASK, {}, code, replies(right, wrong))
    assert good["gold"] == pytest.approx(1.0) and bad["gold"] < 0.3


@pytest.mark.slow
def test_real_bertscore_from_the_metrics_registry_scores_summaries() -> None:
    import coeval_analysis  # noqa: F401  (its metrics are what is tested)
    summary = datapoint(XSum())
    close, unrelated = _bound().score(TASK, {}, summary, replies(
        "The old station building will become a new public library.",
        "Shares in the bank fell sharply after the results.",
    ))
    assert close["gold"] > unrelated["gold"]


def _bound() -> GoldEvaluator:
    """The evaluator with the installed plugins' metrics handed in, as the core binds it."""
    evaluator = GoldEvaluator()
    evaluator.bind_registries(registries())
    return evaluator
