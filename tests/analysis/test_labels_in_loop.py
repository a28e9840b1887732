"""The simulated-labeller harness: labels are truth at the rubric's thresholds plus noise,
and the suggestion order spends labels on the students whose places are undetermined."""

from __future__ import annotations

import numpy as np

from benchmarks.labels_in_loop import STUDENTS, measure, simulate_labels, simulate_run, suggestion_picks


def test_simulated_labels_are_truth_at_the_rubric_levels() -> None:
    latent = np.array([[[0.1, 0.5, 0.9], [0.39, 0.4, 0.6]]])  # 1 item x 2 students x 3 factors
    rng = np.random.default_rng(0)
    exact = simulate_labels(latent, [(0, 0), (0, 1)], rng, noise=0.0)
    assert exact.tolist() == [0.5, 0.5]  # (Low + Medium + High) / 3 and (Low + Medium + High) / 3
    noisy = simulate_labels(np.full((50, 1, 3), 0.5), [(i, 0) for i in range(50)], rng, noise=0.08)
    assert 0.45 < noisy.mean() < 0.55 and noisy.std() > 0


def test_suggestions_go_first_to_the_students_unrelated_judges_cannot_place() -> None:
    """Without labels the headline cannot fix the GPT-like students' places (their precise
    judges are of their family): their rank ranges span more than one place and less of
    their information comes from unrelated judges than the Qwen-like students', so the
    suggestion order spends more labels on them; the settled students get only the share
    that measures the labels' own scale."""
    run = simulate_run(0)
    m = measure(run.judgments, [], np.zeros(0), 100, 0)
    assert all(r is not None and r[1] > r[0] for r in (m.rank_range[0], m.rank_range[1]))
    unrelated = [m.summary["students"][s]["unrelated_judge_weight"] for s in STUDENTS]
    assert max(unrelated[0], unrelated[1]) < min(unrelated[2], unrelated[4])
    picks = suggestion_picks(run, 20, 100, 0)
    assert len(set(picks)) == 20
    per_student = np.bincount([s for _, s in picks], minlength=5)
    assert per_student[0] + per_student[1] > 8  # more than the two students' even share of 20
    # the Qwen-like students, settled by unrelated judges, get the labels that measure the
    # labels' own scale, no more
    from coeval_analysis.labels.suggestions import CALIBRATION

    assert 1 <= per_student[2] + per_student[4] <= CALIBRATION * 20 + 1


def test_a_contrary_judge_does_not_cancel_the_judges_it_contradicts() -> None:
    """Two precise judges, a flat one and a contrary one: started all forward, the contrary
    judge cancels the precise ones in the first consensus and the fit settles with no judge
    measured. Started on the judges' principal axis, each keeps its sign, with labels too."""
    from coeval_analysis.stats.measurement import Reference, fit_all, layout_of

    for seed in (1, 2):
        run = simulate_run(seed)
        f = fit_all(layout_of(run.judgments))[0]
        assert f.scale[0] > 0.5 and f.scale[1] > 0.5 and f.scale[3] < -0.5, (seed, f.scale)
        picks = [(i, s) for i in range(8) for s in range(5)]
        labels = simulate_labels(run.latent, picks, np.random.default_rng(seed))
        p = np.array(picks)
        g = fit_all(layout_of(run.judgments, Reference(p[:, 0], p[:, 1], labels)))[0]
        assert g.scale[0] > 0.5 and g.scale[3] < -0.5 and g.scale[-1] > 0.5, (seed, g.scale)
