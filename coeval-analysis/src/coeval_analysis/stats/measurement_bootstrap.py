"""The measurement model's bootstrap: datapoint (and judge) resamples that refit the whole
model, plus the spread no resample shows (see :mod:`coeval_analysis.stats.measurement`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coeval_analysis.stats.measurement_fit import fit_measurement
from coeval_analysis.stats.measurement_model import TAU, Fit, Layout, measured, reference_measured
from coeval_analysis.stats.measurement_scores import Scores, reported_scale, student_scores

__all__ = ["Replicates", "bootstrap", "info_share"]

REFIT_BUDGET = 4.0e6  #: judgment-rounds the bootstrap's refits may take (about 1 s of CPU)
REFIT_MIN = 20  #: refits at least (their spread is reused for the other resamples)
REFIT_ROUNDS = 8  #: rounds of a warm-started refit
JUDGE_RESAMPLE_MIN = 6  #: judges are resampled too from this many judges up


@dataclass
class Replicates:
    score: np.ndarray  #: (n_boot, S) reported scores
    judge_info: np.ndarray  #: (R, K) each judge's share of the information, per refit
    scale: np.ndarray  #: (R, K) reported scale per refit
    n_refits: int
    judges_resampled: bool


def info_share(lay: Layout, f: Fit, stretch: float) -> tuple[np.ndarray, np.ndarray]:
    n = lay.seen.sum(0).astype(np.float64)
    info = n * f.scale**2 / f.noise
    tot = info.sum()
    share = info / tot if tot > 0 else np.full(lay.K, 1.0 / max(lay.K, 1))
    return share, np.where(measured(f.scale), f.scale / stretch, 0.0)


def bootstrap(lay: Layout, f: Fit, sc: Scores, sub: Layout, share: float, weights: list[np.ndarray],
              seed: int, budget: float = REFIT_BUDGET) -> Replicates:  # fmt: skip
    """Scores over datapoint resamples (``weights``: chunks of (rows, n_items) multiplicities)
    that refit the whole model, plus the spread the data cannot show: each judge's family
    bias drawn from its posterior's prior part, and each judge's per-student taste.

    The first R resamples refit every judge parameter (warm-started; judges resampled too
    when there are ``JUDGE_RESAMPLE_MIN`` or more); the others reuse the scores' change
    under refitting of the R refits, in turn, on top of their own fixed-parameter scores,
    so R is kept within ``REFIT_BUDGET``. Refits on a subsample of the datapoints vary
    ``1 / share`` times too much, so their change is scaled by ``sqrt(share)``."""
    B, S, K = sum(len(w) for w in weights), lay.n_students, lay.K
    rng = np.random.default_rng([seed, 29])
    # chunk by chunk: the resamples of a large run (1,000 x 40,000 datapoints) are not
    # copied into one array, nor to float64 all at once
    fixed = np.concatenate([_fixed_scores(w, sc, f) for w in weights], 0) if weights else np.zeros((0, S))
    entries = max(int(sub.seen.sum()), 1)
    R = min(B, max(REFIT_MIN, int(budget / (entries * REFIT_ROUNDS))))
    W = _first_rows(weights, R, lay.n_items)
    resample_judges = lay.n_judges >= JUDGE_RESAMPLE_MIN
    delta = np.zeros((R, S))
    info = np.zeros((R, K))
    scale = np.zeros((R, K))
    sub_items = np.unique(sub.cell_item)
    sc_sub = sc if sub is lay else student_scores(sub, f)
    # every refit reports on the scale the fit chose: a refit that happens to measure a
    # reference the fit could not must not switch units under the others
    on_ref = reference_measured(lay, f.scale)
    for b in range(R):
        wi = W[b].astype(np.float64)
        if sub is not lay:  # a resample of the subsample's datapoints only
            wsub = np.zeros(lay.n_items)
            wsub[sub_items] = wi[sub_items]
            wi_fit = wsub
        else:
            wi_fit = wi
        wj = np.ones(K)
        if resample_judges:
            wj[: lay.n_judges] = rng.poisson(1.0, lay.n_judges)
            if wj[: lay.n_judges].sum() == 0:
                wj[: lay.n_judges] = 1.0
        start = Fit(f.location.copy(), f.scale.copy(), f.noise.copy(), f.bias.copy(), f.bias_var.copy(),
                    f.bias_prior_share.copy(), f.taste.copy(), f.mu.copy(), f.v, False, 0, f.n_fit)  # fmt: skip
        g = fit_measurement(sub, wi_fit, wj, start=start, max_iter=REFIT_ROUNDS, tol=1e-4)
        refit = _fixed_scores(W[b : b + 1], student_scores(sub, g, wj, on_ref), g)[0]
        base = fixed[b] if sub is lay else _fixed_scores(W[b : b + 1], sc_sub, f)[0]
        delta[b] = np.nan_to_num((refit - base) * np.sqrt(share))
        stretch = reported_scale(lay, g, on_ref)[0]
        info[b], scale[b] = info_share(lay, g, stretch)
    out = fixed.copy()
    if R:
        out += delta[np.arange(B) % R]
    # what no resample of these data can show: the prior part of each family bias, and taste
    prior_sd = np.sqrt(TAU**2 * f.bias_prior_share**2)
    z = rng.normal(0.0, 1.0, (B, K)) * prior_sd[None, :]
    out += z @ sc.bias_gradient.T
    out += rng.normal(0.0, 1.0, (B, S)) * np.sqrt(sc.taste_var)[None, :]
    out[:, np.isnan(sc.score)] = np.nan
    return Replicates(out, info, scale, R, resample_judges)


def _first_rows(weights: list[np.ndarray], n: int, n_items: int) -> np.ndarray:
    """The first ``n`` resamples of ``weights`` (chunks of resamples) as one array."""
    rows, have = [], 0
    for w in weights:
        if have >= n:
            break
        rows.append(w[: n - have])
        have += len(rows[-1])
    return np.concatenate(rows, 0) if rows else np.zeros((0, n_items), np.float32)


def _fixed_scores(W: np.ndarray, sc: Scores, f: Fit) -> np.ndarray:
    """Reported scores over resamples with the judge parameters held fixed."""
    if W.shape[0] == 0:
        return np.zeros((0, len(sc.score)))
    S = len(sc.score)
    has_item = (sc.den > 0).any(1).astype(np.float64)
    # one product reads W once for all four sums (a product this narrow is bound by reading W)
    sums = W.astype(np.float64) @ np.column_stack([sc.num, sc.den, has_item, f.mu * has_item])
    num, den, gw = sums[:, :S], sums[:, S : 2 * S], sums[:, 2 * S]
    grand = np.where(gw > 0, sums[:, 2 * S + 1] / np.where(gw > 0, gw, 1.0), sc.grand)
    with np.errstate(invalid="ignore", divide="ignore"):
        theta = grand[:, None] + np.where(den > 1e-12, num / np.where(den > 1e-12, den, 1.0), np.nan)
    out: np.ndarray = sc.stretch * theta + sc.shift
    return out
