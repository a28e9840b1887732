"""The near-duplicate index: the most similar accepted prompt of a (task, teacher), found
through an inverted index of shingles, exactly as comparing with every accepted prompt."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from coeval.quality.gate import _ShingleIndex
from coeval.quality.text import jaccard, shingles

VOCAB = [f"w{i}" for i in range(60)]


def _prompt(rng: random.Random) -> str:
    return "Explain what the following code does: " + " ".join(rng.choice(VOCAB) for _ in range(rng.randint(1, 30)))


def _candidates(seed: int, n: int, copies: float) -> Iterator[tuple[str, list[str]]]:
    """``n`` candidate prompts, each with the prompts accepted before it (all earlier ones):
    a share ``copies`` of them near copies of an accepted prompt (one word changed)."""
    rng, accepted = random.Random(seed), []
    for _ in range(n):
        text = _prompt(rng)
        if accepted and rng.random() < copies:
            words = rng.choice(accepted).split()
            words[rng.randrange(len(words))] = rng.choice(VOCAB)
            text = " ".join(words)
        yield text, accepted  # read before the next one is drawn
        accepted.append(text)


def _brute(accepted: list[str], text: str) -> float:
    mine = shingles(text)
    return max((jaccard(mine, shingles(a)) for a in accepted), default=0.0)


def test_most_similar_is_the_exact_best_jaccard_over_the_accepted_prompts() -> None:
    index = _ShingleIndex()
    for text, accepted in _candidates(7, 300, copies=0.3):
        assert index.most_similar("t", "a", text) == pytest.approx(_brute(accepted, text), abs=1e-12)
        index.add("t", "a", text)


def test_at_least_decides_the_threshold_exactly_and_reports_the_score_above_it() -> None:
    index = _ShingleIndex()
    for text, accepted in _candidates(11, 200, copies=0.5):
        exact = _brute(accepted, text)
        for threshold in (0.5, 0.8, 0.95):
            found = index.most_similar("t", "a", text, at_least=threshold)
            assert (found >= threshold) == (exact >= threshold)
            if exact >= threshold:
                assert found == pytest.approx(exact, abs=1e-12)
        index.add("t", "a", text)


def test_prompts_of_other_tasks_and_teachers_do_not_count() -> None:
    index = _ShingleIndex()
    index.add("t", "a", "What is the capital of Chile?")
    assert index.most_similar("t", "a", "What is the capital of Chile?") == 1.0
    assert index.most_similar("t", "b", "What is the capital of Chile?") == 0.0
    assert index.most_similar("u", "a", "What is the capital of Chile?") == 0.0
    assert index.most_similar("t", "a", "") == 0.0


def test_a_prompt_at_the_threshold_is_found_through_its_last_probed_shingle() -> None:
    """``n - ceil(t * n) + 1`` of the prompt's shingles are probed, not one fewer: here the
    accepted prompt holds 4 of the 5 shingles (Jaccard exactly 0.8), and lacks the rarest."""
    index = _ShingleIndex()
    index.add("t", "a", "w1 w2 w3 w4 w5 w6")  # shingles 1-4 of the candidate
    assert index.most_similar("t", "a", "w1 w2 w3 w4 w5 w6 w7", at_least=0.8) == pytest.approx(0.8)
