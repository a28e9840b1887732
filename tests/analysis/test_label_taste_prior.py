"""The spread of a judge's per-student taste, measured against the labels where they grade
several students: on the reference run's shape the spread measured against the other
judges is inflated by their nonlinearity (a contrary judge's levels saturate where the
GPT judges' do not), so labels that show the GPT judges have no taste narrow what is left
of it in the GPT-like students' scores; labels that show a real taste keep it wide."""

from __future__ import annotations

import numpy as np
from coeval_analysis.stats.measurement import Reference, fit_all, layout_of, student_scores
from coeval_analysis.stats.measurement_taste import taste_from_reference

from benchmarks.labels_in_loop import simulate_labels, simulate_run

PICKS = [(i, s) for i in range(0, 60, 5) for s in range(5)]  #: 12 labelled answers per student


def _with_labels(seed: int, self_preference: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(taste variance of each score without labels, with labels, each judge's taste prior
    with labels, theta units)."""
    run = simulate_run(seed, self_preference=self_preference)
    bare_lay = layout_of(run.judgments)
    bare = student_scores(bare_lay, fit_all(bare_lay)[0])
    p = np.array(PICKS)
    labels = simulate_labels(run.latent, PICKS, np.random.default_rng(seed))
    lay = layout_of(run.judgments, Reference(p[:, 0], p[:, 1], labels))
    f = fit_all(lay)[0]
    sc = student_scores(lay, f)
    y = np.where(lay.conflicted, lay.x - f.bias, lay.x)
    dev = np.where(lay.seen, y - f.location - f.scale * f.mu[lay.cell_item][:, None], 0.0)
    taste = taste_from_reference(lay, f, dev)
    assert taste is not None
    return bare.taste_var, sc.taste_var, taste.prior[0]


def test_labels_that_show_no_taste_narrow_what_is_left_of_it() -> None:
    """The GPT judges see answers as the labeller does (same rubric levels): labels on every
    student show their tastes are nil, so what is left of taste in the GPT-like students'
    scores falls well under half of what the judges' consensus left (about 0.49 of it when
    the consensus-measured spread shrank the labels' estimates)."""
    for seed in (0, 2):
        bare, labelled, _ = _with_labels(seed)
        assert (np.sqrt(labelled[:2]) < 0.4 * np.sqrt(bare[:2])).all(), (seed, labelled, bare)


def test_labels_that_show_a_taste_keep_its_spread() -> None:
    """Each GPT judge sees its namesake's answers 0.1 better than they are: the labels show
    it (about 0.08 in theta units on one student of five: a spread of about 0.04), and each
    GPT judge's taste spread comes out well above the no-taste one's."""
    for seed in (0, 2):
        _, _, none = _with_labels(seed)
        _, _, skewed = _with_labels(seed, self_preference=0.1)
        sd, sd0 = np.sqrt(skewed[:2]), np.sqrt(none[:2])
        assert (sd > 1.4 * sd0).all() and (sd > 0.03).all(), (seed, sd0, sd)


def _spread(raw: list[float], var: list[float], labels: int = 4) -> float:
    """One judge's taste spread from its mean departures per student and their noise."""
    from coeval_analysis.stats.measurement_taste import _prior

    column = np.asarray(raw)[:, None]
    out = _prior(column, np.full_like(column, labels), np.asarray(var)[:, None], np.array([9.0]), np.array([1e-4]))
    return float(out[0])


def test_two_students_with_few_labels_do_not_pass_for_a_taste() -> None:
    """Three students labelled closely show the judge departs from the labels by nothing;
    two with a couple of labels each depart by 0.2, which their noise (sd 0.2) explains.
    Each student counts by how well its labels measure it (DerSimonian and Laird), so the
    spread is the floor; counted alike, the two noisy departures made a spread of 0.004."""
    raw, var = [0.2, -0.2, 0.01, -0.01, 0.0], [0.04, 0.04, 1e-4, 1e-4, 1e-4]
    assert _spread(raw, var) == 1e-4


def test_with_equal_noise_the_spread_is_the_variance_less_the_noise() -> None:
    raw = [0.1, -0.1, 0.05, -0.05, 0.0]
    # variance across students (ss / (k - 1) = 0.025 / 4) less the noise of each (0.001)
    assert abs(_spread(raw, [0.001] * 5) - (0.025 / 4 - 0.001)) < 1e-12
    # fewer than LABELLED_STUDENTS students with two labels or more: the fallback
    assert _spread(raw, [0.001] * 5, labels=1) == 9.0
