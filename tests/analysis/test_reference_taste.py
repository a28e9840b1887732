"""Labels correct the model judges' taste: where the reference judge grades a student, each
model judge's per-student taste is estimated from the answers both graded (shrunk by the
judge's taste prior) and taken out of its view, and the reference's own noise is not
blamed for the judges' taste. A run without labels is scored exactly as before."""

from __future__ import annotations

import numpy as np
from coeval_analysis.stats.headline import Judgments
from coeval_analysis.stats.measurement import Reference, fit_all, layout_of, student_scores

N_ITEMS, QUALITY = 60, np.array([0.70, 0.62, 0.55, 0.48, 0.40])
#: (judge, student) tastes: every judge overrates student 1 and underrates student 0
TASTE = np.array([[-0.08, 0.10, 0.0, -0.03, 0.01], [-0.10, 0.08, 0.02, 0.0, 0.0], [-0.06, 0.12, -0.02, 0.01, -0.05]])
LABEL_SD = 0.04


def _run(seed: int = 0) -> tuple[Judgments, np.ndarray]:
    rng = np.random.default_rng(seed)
    S, K = len(QUALITY), len(TASTE)
    theta = QUALITY[None, :] + rng.normal(0, 0.08, (N_ITEMS, 1)) + rng.normal(0, 0.04, (N_ITEMS, S))
    ii, ss = np.meshgrid(np.arange(N_ITEMS), np.arange(S), indexing="ij")
    item, student, judge, value = [], [], [], []
    for j in range(K):
        item.append(ii.ravel())
        student.append(ss.ravel())
        judge.append(np.full(ii.size, j))
        value.append((theta + TASTE[j][None, :] + rng.normal(0, 0.05, theta.shape)).ravel())
    n = N_ITEMS * S * K
    j = Judgments(item=np.concatenate(item), student=np.concatenate(student), judge=np.concatenate(judge),
                  value=np.concatenate(value), conflicted=np.zeros(n, bool), n_items=N_ITEMS, n_students=S,
                  n_judges=K, item_teacher=np.zeros(N_ITEMS, np.int64))  # fmt: skip
    return j, theta


def _labels(theta: np.ndarray, items: range, seed: int = 1) -> Reference:
    ii, ss = np.meshgrid(np.asarray(items), np.arange(theta.shape[1]), indexing="ij")
    value = theta[ii, ss] + np.random.default_rng(seed).normal(0, LABEL_SD, ii.shape)
    return Reference(ii.ravel(), ss.ravel(), value.ravel())


def test_labels_take_the_judges_taste_out_of_the_labelled_students_scores() -> None:
    """Every judge overrates student 1 by about 0.1 and underrates student 0: with no labels
    student 1 passes for as good as student 0. Labels on a third of the datapoints show the
    judges' taste, and the ranking puts student 0 first with its place settled, at about
    the true gap (the labels' own answers alone would leave the judges' view nearly as is)."""
    j, theta = _run()
    bare = student_scores(layout_of(j), fit_all(layout_of(j))[0])
    lay = layout_of(j, _labels(theta, range(20)))
    f = fit_all(lay)[0]
    sc = student_scores(lay, f)
    true_gap = QUALITY[0] - QUALITY[1]
    assert bare.score[1] > bare.score[0] - 0.02, bare.score  # the judges' taste hides the gap
    assert abs((sc.score[0] - sc.score[1]) - true_gap) < 0.03, sc.score
    # what is left of the taste in each score is well under the judges' taste spread
    assert (np.sqrt(sc.taste_var) < 0.5 * np.sqrt(bare.taste_var)).all(), (sc.taste_var, bare.taste_var)


def test_the_reference_noise_is_not_blamed_for_the_judges_taste() -> None:
    """The reference is checked against the model judges' consensus, which carries their
    per-student taste: the reference's noise is measured about its mean per student, so
    it comes out near the labels' true spread and not inflated by the judges' taste."""
    j, theta = _run()
    lay = layout_of(j, _labels(theta, range(20)))
    f = fit_all(lay)[0]
    noise_sd = float(np.sqrt(f.noise[-1]) / abs(f.scale[-1]))  # theta units: the labels' own
    assert noise_sd < 1.5 * LABEL_SD, noise_sd


def test_without_labels_no_taste_is_taken_out() -> None:
    """No reference: nothing tells a judge's taste from quality, and the scores are the
    plain information-weighted means (the taste spread all left in their variance)."""
    j, _ = _run()
    lay = layout_of(j)
    f = fit_all(lay)[0]
    sc = student_scores(lay, f)
    w = np.array([[(lay.seen[lay.cell_student == s, q] * f.scale[q] / f.noise[q]).sum() for q in range(lay.K)]
                  for s in range(lay.n_students)])  # fmt: skip
    w = w / (w * f.scale[None, :]).sum(1, keepdims=True)
    expect = sc.stretch**2 * (w**2 * f.taste[None, :]).sum(1)
    np.testing.assert_allclose(sc.taste_var, expect, rtol=1e-9)
