"""The reference judge (human labels, gold) in the measurement model: a judge without
evidence keeps exactly the floor scale (so it is never taken for a measured one), and the
reference has no per-student taste (its view of a student is what the ranking measures)."""

from __future__ import annotations

import numpy as np
import pytest
from coeval_analysis.stats.measurement import (
    LAMBDA_FLOOR,
    Reference,
    fit_all,
    layout_of,
    measured,
    student_scores,
)

from benchmarks.labels_in_loop import simulate_labels, simulate_run


def test_labels_one_per_datapoint_leave_the_reference_unmeasured_and_the_ranking_intact() -> None:
    """Labels on one answer per datapoint give the reference no within-datapoint evidence:
    its scale stays at the floor and the scores keep the LLM judges' spread. The rescaling
    of theta used to push such a floor scale past the "measured" mark, and the scores were
    then reported on the floor judge's scale: every student about equal."""
    run = simulate_run(1)
    picks = [(i, i % 5) for i in range(40)]
    labels = simulate_labels(run.latent, picks, np.random.default_rng(3))
    p = np.array(picks)
    lay = layout_of(run.judgments, Reference(p[:, 0], p[:, 1], labels))
    f = fit_all(lay)[0]
    assert not measured(f.scale[-1:])[0], f.scale
    assert abs(f.scale[-1]) == LAMBDA_FLOOR
    score = student_scores(lay, f).score
    assert np.ptp(score) > 0.1, score


def test_the_reference_judge_has_no_taste() -> None:
    run = simulate_run(0)
    picks = [(i, s) for i in range(8) for s in range(5)]
    labels = simulate_labels(run.latent, picks, np.random.default_rng(0))
    p = np.array(picks)
    f = fit_all(layout_of(run.judgments, Reference(p[:, 0], p[:, 1], labels)))[0]
    assert f.taste[-1] == 0.0
    assert (f.taste[:-1] > 0).all()


@pytest.mark.slow
def test_refits_report_on_the_scale_the_fit_chose() -> None:
    """Random labels that leave the reference without a measured scale: the headline is on
    the LLM judges' scale, and so must every bootstrap refit be. A refit that happened to
    measure the reference's scale used to report on it instead, and the rank ranges of
    every student spread to nearly every place (wider than with no labels at all)."""
    from benchmarks.labels_in_loop import measure, random_picks

    run = simulate_run(1)
    bare = measure(run.judgments, [], np.zeros(0), 100, 0).rank_range
    # label draws whose fit converges with the reference unmeasured (the draw 10_001 gives an
    # oscillating fit that may stop either side of the mark)
    for s in (1, 4):
        rng = np.random.default_rng(10_001 + s)
        picks = random_picks(run, 40, rng)
        labels = simulate_labels(run.latent, picks, rng)
        p = np.array(picks)
        f = fit_all(layout_of(run.judgments, Reference(p[:, 0], p[:, 1], labels)))[0]
        assert not measured(f.scale[-1:])[0]
        ranges = measure(run.judgments, picks, labels, 100, 0).rank_range
        for got, before in zip(ranges, bare, strict=True):
            assert got is not None and before is not None
            assert got[1] - got[0] <= before[1] - before[0] + 1, (ranges, bare)
