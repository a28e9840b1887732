"""The near-duplicate index: the most similar accepted prompt of a (task, teacher), found
through an inverted index of shingles, exactly as comparing with every accepted prompt."""

from __future__ import annotations

import random

import pytest
from coeval.quality.gate import _ShingleIndex
from coeval.quality.text import jaccard, shingles

VOCAB = [f"w{i}" for i in range(60)]


def _prompt(rng: random.Random) -> str:
    return "Explain what the following code does: " + " ".join(rng.choice(VOCAB) for _ in range(rng.randint(1, 30)))


def _brute(accepted: list[str], text: str) -> float:
    mine = shingles(text)
    return max((jaccard(mine, shingles(a)) for a in accepted), default=0.0)


def test_most_similar_is_the_exact_best_jaccard_over_the_accepted_prompts() -> None:
    rng = random.Random(7)
    index, accepted = _ShingleIndex(), []
    for _ in range(300):
        text = _prompt(rng)
        # some candidates are near copies of an accepted prompt, the rest unrelated
        if accepted and rng.random() < 0.3:
            words = rng.choice(accepted).split()
            words[rng.randrange(len(words))] = rng.choice(VOCAB)
            text = " ".join(words)
        assert index.most_similar("t", "a", text) == pytest.approx(_brute(accepted, text), abs=1e-12)
        index.add("t", "a", text)
        accepted.append(text)


def test_at_least_decides_the_threshold_exactly_and_reports_the_score_above_it() -> None:
    rng = random.Random(11)
    index, accepted = _ShingleIndex(), []
    for _ in range(200):
        text = _prompt(rng)
        if accepted and rng.random() < 0.5:
            words = rng.choice(accepted).split()
            words[rng.randrange(len(words))] = rng.choice(VOCAB)
            text = " ".join(words)
        exact = _brute(accepted, text)
        for threshold in (0.5, 0.8, 0.95):
            found = index.most_similar("t", "a", text, at_least=threshold)
            assert (found >= threshold) == (exact >= threshold)
            if exact >= threshold:
                assert found == pytest.approx(exact, abs=1e-12)
        index.add("t", "a", text)
        accepted.append(text)


def test_prompts_of_other_tasks_and_teachers_do_not_count() -> None:
    index = _ShingleIndex()
    index.add("t", "a", "What is the capital of Chile?")
    assert index.most_similar("t", "a", "What is the capital of Chile?") == 1.0
    assert index.most_similar("t", "b", "What is the capital of Chile?") == 0.0
    assert index.most_similar("u", "a", "What is the capital of Chile?") == 0.0
    assert index.most_similar("t", "a", "") == 0.0
