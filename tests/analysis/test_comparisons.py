"""Pairwise comparisons of students: paired bootstrap intervals, p-values, rank ranges."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from coeval_analysis.stats.bootstrap import Bootstrap
from coeval_analysis.stats.comparisons import compare_students, rank_label
from coeval_analysis.stats.scenarios import SCENARIOS, simulate

QUALITY = tuple(np.linspace(0.45, 0.65, 10))


def test_paired_interval_is_narrower_than_separate_ones() -> None:
    # plain means: students share datapoints, so easy and hard ones move them together
    j = simulate(replace(SCENARIOS["decent"], quality=QUALITY), 0).judgments
    cell = j.item * j.n_students + j.student
    sums = np.bincount(cell, j.value, j.n_items * j.n_students).reshape(j.n_items, -1)
    counts = np.bincount(cell, minlength=j.n_items * j.n_students).reshape(j.n_items, -1)
    reps = Bootstrap(j.n_items, 500, 0).replicates(sums, counts.astype(float))
    score = sums.sum(0) / counts.sum(0)
    comp = compare_students([str(i) for i in range(10)], score, reps)
    p = next(c for c in comp.pairs if {c["a"], c["b"]} == {"4", "5"})
    lo, hi = np.quantile(reps, [0.025, 0.975], axis=0)
    separate = (hi[4] - lo[4]) + (hi[5] - lo[5])
    assert p["ci"][1] - p["ci"][0] < 0.5 * separate


def test_ties_share_a_rank_range_and_clear_gaps_do_not() -> None:
    names = ["a", "b", "c"]
    rng = np.random.default_rng(0)
    base = rng.normal(0.0, 0.05, (2000, 1))
    # a far ahead; b and c indistinguishable
    reps = np.hstack([0.9 + base, 0.5 + base + rng.normal(0, 0.02, (2000, 1)), 0.49 + base])
    comp = compare_students(names, np.array([0.9, 0.5, 0.49]), reps)
    assert [rank_label(r) for r in comp.rank_range] == ["1", "2-3", "2-3"]
    by_pair = {(c["a"], c["b"]): c for c in comp.pairs}
    assert by_pair[("a", "b")]["p"] < 0.01
    assert by_pair[("b", "c")]["p"] > 0.05
    assert by_pair[("b", "c")]["ci"][0] < 0 < by_pair[("b", "c")]["ci"][1]
    assert comp.rank_ci[0] == (1, 1)


def test_unscored_student_has_no_rank_but_is_listed() -> None:
    reps = np.array([[0.6, np.nan, 0.4], [0.62, np.nan, 0.41], [0.58, np.nan, 0.39]])
    comp = compare_students(["a", "b", "c"], np.array([0.6, np.nan, 0.4]), reps)
    assert comp.rank_range == [(1, 1), None, (2, 2)]
    assert [(c["a"], c["b"]) for c in comp.pairs] == [("a", "c")]
    assert rank_label(comp.rank_range[1]) == "—"


def test_without_resamples_nothing_is_claimed() -> None:
    comp = compare_students(["a", "b"], np.array([0.6, 0.4]), np.zeros((0, 2)))
    assert comp.pairs == [{"a": "a", "b": "b", "diff": pytest.approx(0.2), "ci": [None, None], "p": None}]
    assert comp.rank_range == [None, None] and comp.rank_ci == [None, None]
