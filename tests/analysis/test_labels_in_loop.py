"""The simulated-labeller harness: labels are truth at the rubric's thresholds plus noise,
and the suggestion order spends labels on the students whose places are undetermined."""

from __future__ import annotations

import numpy as np

from benchmarks.labels_in_loop import rank_ranges, simulate_labels, simulate_run, suggestion_picks


def test_simulated_labels_are_truth_at_the_rubric_levels() -> None:
    latent = np.array([[[0.1, 0.5, 0.9], [0.39, 0.4, 0.6]]])  # 1 item x 2 students x 3 factors
    rng = np.random.default_rng(0)
    exact = simulate_labels(latent, [(0, 0), (0, 1)], rng, noise=0.0)
    assert exact.tolist() == [0.5, 0.5]  # (Low + Medium + High) / 3 and (Low + Medium + High) / 3
    noisy = simulate_labels(np.full((50, 1, 3), 0.5), [(i, 0) for i in range(50)], rng, noise=0.08)
    assert 0.45 < noisy.mean() < 0.55 and noisy.std() > 0


def test_suggestions_spread_over_students_when_nothing_looks_open() -> None:
    """Today's headline calls every place of this shape exact (it is confidently wrong), so
    no student is open: the order then follows the judges' disagreement, spread evenly."""
    run = simulate_run(0)
    assert all(r and r[0] == r[1] for r in rank_ranges(run.judgments, 200, 0))
    picks = suggestion_picks(run, 20, 200, 0)
    assert len(set(picks)) == 20
    assert np.bincount([s for _, s in picks], minlength=5).tolist() == [4, 4, 4, 4, 4]
