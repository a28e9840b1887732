"""A judge's departure from the labels, read as a line in the students' quality plus a
taste about it (``coeval_analysis.stats.measurement_taste``).

A judge and a labeller whose rubric levels saturate differently depart from each other by
an amount that follows quality, so two neighbouring students (the reference shape's two
GPT-like students, the best two) share most of it. Read as an independent taste per
student, it made each GPT judge's taste spread several times the floor, and the gap
between the two went uncertain by that much however many labels there were; as a line, it
moves neighbours alike and the spread about it is the taste."""

from __future__ import annotations

import numpy as np
import pytest
from coeval_analysis.stats.measurement_taste import _prior, _trend

from benchmarks.labels_in_loop import GPT_LIKE, measure, simulate_labels, simulate_run, suggestion_picks


def test_departures_on_a_line_leave_only_the_floor() -> None:
    """Five students each labelled 4 times, their departures exactly 0.1 + 0.5 x quality:
    the line takes all of it (the spread is the floor), where read as tastes about one
    mean they gave a spread of about 0.01, a taste of 0.1 per student."""
    quality = np.array([0.3, 0.15, 0.0, -0.1, -0.25])
    raw = (0.1 + 0.5 * quality)[:, None]
    n, var, floor = np.full_like(raw, 4.0), np.full_like(raw, 1e-4), np.array([1e-4])
    line, spread = _trend(raw, n, var, quality, floor)
    assert np.allclose(line, raw) and spread[0] == floor[0]
    assert _prior(raw, n, var, np.array([9.0]), floor)[0] == pytest.approx(np.var(raw, ddof=1) - 1e-4)


def test_tastes_about_the_line_keep_their_spread() -> None:
    """The same line with one student departing 0.2 beyond it: the spread about the line
    is what that one student shows (DerSimonian and Laird for a meta-regression), well above
    the floor, and the line is not the plain mean's."""
    quality = np.array([0.3, 0.15, 0.0, -0.1, -0.25])
    raw = (0.1 + 0.5 * quality)[:, None].copy()
    raw[2, 0] += 0.2
    line, spread = _trend(raw, np.full_like(raw, 4.0), np.full_like(raw, 1e-4), quality, np.array([1e-4]))
    assert spread[0] > 0.005
    assert not np.allclose(line[:, 0], line[0, 0])


def test_fewer_than_four_labelled_students_fit_no_line() -> None:
    quality = np.array([0.3, 0.15, 0.0, -0.1, -0.25])
    raw = (0.1 + 0.5 * quality)[:, None]
    n = np.array([[4.0], [4.0], [4.0], [1.0], [0.0]])
    line, spread = _trend(raw, n, np.full_like(raw, 1e-4), quality, np.array([1e-4]))
    assert (line == 0).all() and np.isnan(spread[0])


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 32])
def test_forty_suggested_labels_place_the_gpt_like_students(seed: int) -> None:
    """The reference shape with 40 suggested labels (the labeller's noise drawn from
    ``10_000 + seed``): with the departures read as tastes alone, these runs left the
    GPT-like students' ranges at 1-2; read as a line, they are 1 and 2. (Of seeds 0-39,
    150 resamples: 21 exact without the line, 31 with it, none lost.)"""
    run = simulate_run(seed)
    picks = suggestion_picks(run, 40, 150, seed)
    labels = simulate_labels(run.latent, picks, np.random.default_rng(10_000 + seed))
    m = measure(run.judgments, picks, labels, 150, seed)
    assert [m.rank_range[i] for i in GPT_LIKE] == [(1, 1), (2, 2)]
