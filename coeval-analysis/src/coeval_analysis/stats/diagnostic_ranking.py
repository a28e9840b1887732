"""The diagnostic ranking: judges weighted by their agreement with the others, datapoints by
their reliability. Not the headline (that is :func:`coeval_analysis.ranking.headline.headline_ranking`):
its judge-weighted consensus is what the diagnostics (teacher discrimination, self-preference,
verbosity, gold correlations) read, and summary.json reports its score as ``diagnostic_*``.

**Judge weights.** A judge is trusted as far as it agrees with the *other* judges. For
judge j, ``r_j`` is the Pearson correlation, over the (response, factor) units it scored,
between its scores and the weighted consensus of the others on the same units; ``r_j`` is
shrunk towards 0 for judges with few units (``n / (n + 30)``). Under a one-factor model
(score = signal + independent noise) the best linear weight of a judge grows with its
signal-to-noise ratio, which its correlation with the truth gives as r^2 / (1 - r^2), so
``w_j ∝ max(r_j, 0)^2 / (1 - max(r_j, 0)^2)``, normalised to sum 1. The consensus uses
the weights, so they are iterated to a fixed point (a few rounds). A judge answering at
random correlates with nothing: its weight goes to about zero; a judge that contradicts
the others gets zero.

**Item weights.** A datapoint helps the ranking as far as students differ on it more than
the judges' disagreement explains. For item i: ``D_i`` = variance over students of the
weighted consensus score, ``N_i`` = mean over students of the consensus' noise variance
(weighted variance between judges / effective number of judges), the part of ``D_i`` that
judge noise alone would produce. The weight ``d_i = max(D_i - N_i, 0) / D_i`` is the share
of the spread that is not judge noise (an item reliability): 0 for an item every student
gets the same score on or whose differences are all judge noise, near 1 for a clean,
separating item. The weight used is ``0.1 + 0.9 * d_i``: a datapoint's reliability is
estimated from a handful of students, so none is dropped entirely or trusted alone.

**Diagnostic score** of a student: ``sum_i d_i c_is / sum_i d_i`` over the items it answered.
Intervals resample datapoints with the weights held fixed; judge-weight intervals resample
datapoints and recompute ``r_j`` against the fixed consensus.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coeval_analysis.stats.bootstrap import Bootstrap, percentile_interval
from coeval_analysis.stats.correlation import correlation_from_moments
from coeval_analysis.stats.scores import ScoreModel, dense_mean, pair_mean

__all__ = ["DiagnosticRanking", "diagnostic_ranking", "judge_weights"]

SHRINK_UNITS = 30.0
ITEM_WEIGHT_FLOOR = 0.1


def _snr_weight(r: np.ndarray) -> np.ndarray:
    rr = np.clip(np.nan_to_num(r, nan=0.0), 0.0, 0.999)
    return np.asarray(rr**2 / (1.0 - rr**2))


def _consensus_corr(x: np.ndarray, present: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per judge: correlation with the leave-one-out weighted consensus (NaN where it is
    undefined: under 3 units, or no variance in the judge's scores or the consensus), and
    units used."""
    z = np.where(present, x, 0.0)
    p = present.astype(np.float64)
    num_all = z @ w
    den_all = p @ w
    k = x.shape[1]
    r = np.zeros(k)
    n = np.zeros(k)
    for j in range(k):
        den = den_all - w[j] * p[:, j]
        ok = present[:, j] & (den > 1e-12)
        n[j] = ok.sum()
        if n[j] < 3:
            r[j] = np.nan
            continue
        c = (num_all[ok] - w[j] * z[ok, j]) / den[ok]
        xj = x[ok, j]
        sx, sc = xj.std(), c.std()
        r[j] = np.nan if sx == 0 or sc == 0 else float(np.mean((xj - xj.mean()) * (c - c.mean())) / (sx * sc))
    return r, n


def judge_weights(
    x: np.ndarray, n_iter: int = 50, tol: float = 1e-6
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(weights summing to 1, shrunk correlation with the others, units used) of the columns
    (judges) of a units x judges matrix with NaN for "not scored"."""
    k = x.shape[1]
    if k == 0:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    if k == 1:
        return np.ones(1), np.full(1, np.nan), np.full(1, float((~np.isnan(x)).sum()))
    present = ~np.isnan(x)
    w = np.full(k, 1.0 / k)
    r = np.zeros(k)
    n = np.zeros(k)
    for _ in range(n_iter):
        r, n = _consensus_corr(x, present, w)
        r = r * n / (n + SHRINK_UNITS)
        new = _snr_weight(r)
        new = new / new.sum() if new.sum() > 0 else np.full(k, 1.0 / k)
        done = np.abs(new - w).max() < tol
        w = new
        if done:
            break
    return w, r, n


@dataclass
class DiagnosticRanking:
    judges: list[str]
    judge_weight: np.ndarray
    judge_weight_ci: tuple[np.ndarray, np.ndarray]
    judge_r: np.ndarray
    judge_units: np.ndarray
    item_weight: np.ndarray  #: per item of the score model
    consensus: np.ndarray  #: items x students, judge-weighted response scores
    resp_consensus: np.ndarray  #: per response code
    score: np.ndarray  #: per student
    ci: tuple[np.ndarray, np.ndarray]


def diagnostic_ranking(model: ScoreModel, boot: Bootstrap, level: float = 0.95) -> DiagnosticRanking:
    J = len(model.judges)
    F = max(len(model.factors), 1)
    # units x judges matrix over (response, factor) units
    key = model.u_resp * F + model.u_factor
    uniq, row = (
        np.unique(key, return_inverse=True) if len(key) else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    )
    x = np.full((len(uniq), J), np.nan)
    if len(key):
        x[row, model.u_judge] = model.u_value
    w, r, n = judge_weights(x)

    # weighted consensus per (response, factor), then per response (non-LLM factors added)
    present = ~np.isnan(x)
    num = np.where(present, x, 0.0) @ w if J else np.zeros(len(uniq))
    den = present.astype(np.float64) @ w if J else np.zeros(len(uniq))
    with np.errstate(invalid="ignore", divide="ignore"):
        rf_val = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
    rf_resp, _rf_fac = uniq // F, uniq % F
    ok = ~np.isnan(rf_val)
    x_r, _x_f, x_m = pair_mean(model.x_resp, model.x_factor, F, model.x_value)
    all_resp = np.concatenate([rf_resp[ok], x_r])
    all_val = np.concatenate([rf_val[ok], x_m])
    resp_consensus, _ = dense_mean(all_resp, model.n_responses, all_val)

    # noise of each response's consensus: weighted spread of the judges' response means
    pr, pj, pm = model.per_judge_response()
    wj = w[pj] if J else np.zeros(0)
    mean_w, tot_w = dense_mean(pr, model.n_responses, pm, wj)
    dev = (pm - mean_w[pr]) ** 2
    var_w, _ = dense_mean(pr, model.n_responses, dev, wj)
    sq_w = np.bincount(pr, weights=wj**2, minlength=model.n_responses)
    with np.errstate(invalid="ignore", divide="ignore"):
        n_eff = np.where(sq_w > 0, tot_w**2 / np.where(sq_w > 0, sq_w, 1), np.nan)
        resp_noise = np.nan_to_num(var_w / n_eff, nan=0.0)

    c = model.item_student_matrix(resp_consensus)
    noise = model.item_student_matrix(resp_noise)
    has = ~np.isnan(c)
    n_s = has.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = np.where(n_s >= 2, _nanvar(c, n_s), 0.0)
        item_noise = np.where(n_s > 0, np.nansum(np.where(has, noise, 0.0), 1) / np.maximum(n_s, 1), 0.0)
        reliability = np.where(
            spread > 0, np.clip(spread - item_noise, 0.0, None) / np.where(spread > 0, spread, 1.0), 0.0
        )
    # a floor keeps every answered item in the score: one item's reliability rests on a
    # handful of students and is itself noisy, so no item is ever trusted alone
    d = np.where(n_s > 0, ITEM_WEIGHT_FLOOR + (1.0 - ITEM_WEIGHT_FLOOR) * reliability, 0.0)

    num_m = np.where(has, c, 0.0) * d[:, None]
    den_m = has * d[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        tot = den_m.sum(0)
        score = np.where(tot > 0, num_m.sum(0) / np.where(tot > 0, tot, 1), np.nan)
    lo, hi = boot.ratio_ci(num_m, den_m, level)
    w_ci = _judge_weight_ci(model, x, uniq, F, w, boot, level)
    return DiagnosticRanking(
        judges=list(model.judges),
        judge_weight=w,
        judge_weight_ci=w_ci,
        judge_r=r,
        judge_units=n,
        item_weight=d,
        consensus=c,
        resp_consensus=resp_consensus,
        score=score,
        ci=(lo, hi),
    )


def _nanvar(c: np.ndarray, n_s: np.ndarray) -> np.ndarray:
    has = ~np.isnan(c)
    mean = np.nansum(np.where(has, c, 0.0), 1) / np.maximum(n_s, 1)
    ss = np.nansum(np.where(has, (c - mean[:, None]) ** 2, 0.0), 1)
    return np.asarray(ss / np.maximum(n_s - 1, 1))


def _judge_weight_ci(
    model: ScoreModel, x: np.ndarray, uniq: np.ndarray, F: int, w: np.ndarray, boot: Bootstrap, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """Resample items; recompute each judge's correlation with the fixed leave-one-out
    consensus from resampled moment sums, then the weights."""
    J = x.shape[1]
    if J < 2 or len(uniq) == 0:
        return np.full(J, np.nan), np.full(J, np.nan)
    present = ~np.isnan(x)
    z = np.where(present, x, 0.0)
    num_all = z @ w
    den_all = present.astype(np.float64) @ w
    item_of_unit = model.resp_item[uniq // F]
    cols = []
    for j in range(J):
        den = den_all - w[j] * present[:, j]
        ok = present[:, j] & (den > 1e-12) & (item_of_unit >= 0)
        cons = np.zeros(len(uniq))
        cons[ok] = (num_all[ok] - w[j] * z[ok, j]) / den[ok]
        xj = np.where(ok, z[:, j], 0.0)
        one = ok.astype(np.float64)
        for v in (one, xj, cons, xj * xj, cons * cons, xj * cons):
            cols.append(np.bincount(item_of_unit[ok], weights=v[ok], minlength=model.n_items))
    sums = boot.sums(np.stack(cols, 1)).reshape(boot.n_boot, J, 6)
    n = sums[:, :, 0]
    r = correlation_from_moments(sums) * n / (n + SHRINK_UNITS)
    wt = _snr_weight(r)
    tot = wt.sum(1, keepdims=True)
    wt = np.where(tot > 0, wt / np.where(tot > 0, tot, 1), 1.0 / J)
    return percentile_interval(wt, level)
