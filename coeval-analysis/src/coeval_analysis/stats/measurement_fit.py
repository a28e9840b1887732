"""Fitting the measurement model: the alternating fit of every judge's location, scale,
noise, taste and family bias (see :mod:`coeval_analysis.stats.measurement`), and the fit
on a subsample of the datapoints for large runs."""

from __future__ import annotations

import numpy as np

from coeval_analysis.stats.measurement_model import (
    COMPETENT,
    CONTRARY_LOADING,
    DAMP_AFTER,
    EPS,
    LAMBDA_FLOOR,
    MAX_ITER,
    NOISE_FLOOR,
    NOISE_SHARE,
    SETTLE_AFTER,
    SETTLE_KEEP,
    TASTE_FLOOR,
    TAU,
    TOL,
    V_FLOOR,
    VERIFY,
    Fit,
    Layout,
    measured,
    measured_sides,
    reference_measured,
)

__all__ = ["FIT_CELLS", "fit_all", "fit_measurement", "item_means", "subsample"]

FIT_CELLS = 20_000  #: judge parameters are fitted on at most about this many answers


def _start(lay: Layout) -> Fit:
    K = lay.K
    n = lay.seen.sum(0)
    mean = np.where(n > 0, lay.x.sum(0) / np.maximum(n, 1), 0.5)
    cell_mean = (lay.x * lay.seen).sum(1) / np.maximum(lay.seen.sum(1), 1)
    cnt_i = np.bincount(lay.cell_item, minlength=lay.n_items)
    mu = np.bincount(lay.cell_item, cell_mean, lay.n_items) / np.maximum(cnt_i, 1)
    dev = cell_mean - mu[lay.cell_item]
    v = max(float(np.mean(dev**2)) if len(dev) else 0.01, 1e-3)
    # every judge starts equal (scale 1, noise v): the first round checks each judge against
    # the plain consensus of the others, so a flat but consistent judge cannot set the scene
    noise = np.full(K, v)
    loc = mean - mu.mean() if lay.n_items else mean
    z = np.zeros(K)
    return Fit(loc, _start_signs(lay, mu), noise, z.copy(), np.full(K, TAU**2), np.ones(K), np.full(K, TASTE_FLOOR**2),
               mu, v, False, 0, np.zeros(K))  # fmt: skip


def _start_signs(lay: Layout, mu: np.ndarray) -> np.ndarray:
    """+1 or -1 per judge: the sign of its loading on the judges' leading principal axis of
    within-datapoint deviations, turned so the reference judge (else most loading) is +1.
    Starting a contrary judge at +1 would let it cancel the judges it contradicts in every
    other judge's first consensus, and the fit would settle where no judge tells answers apart.
    Each judge's deviations are from its own mean of the datapoint where it graded two
    answers or more to it (else from the datapoints' mean ``mu``): from the common mean, a
    judge that gives every answer the same level (it does not follow the datapoints'
    difficulty, which the others do) loads against them as a contrary judge does."""
    K = lay.K
    if K < 2 or not len(lay.cell_item):
        return np.ones(K)
    key = lay.item_judge_key
    n = np.bincount(key, lay.seen.ravel().astype(np.float64), lay.n_items * K)[key].reshape(lay.x.shape)
    tot = np.bincount(key, np.where(lay.seen, lay.x, 0.0).ravel(), lay.n_items * K)[key].reshape(lay.x.shape)
    centre = np.where(n >= 2, tot / np.maximum(n, 1.0), mu[lay.cell_item][:, None])
    dev = np.where(lay.seen, lay.x - centre, 0.0)
    both = lay.seen.astype(np.float64)
    cov = (dev.T @ dev) / np.maximum(both.T @ both, 1.0)
    sd = np.sqrt(np.maximum(np.diag(cov), EPS))
    # no shared axis above what noise alone gives (the Marchenko-Pastur edge for the number
    # of answers): nothing to turn a judge against, and flipping noise would invent one
    edge = (1.0 + np.sqrt(K / max(len(lay.cell_item), 1))) ** 2
    if np.linalg.eigvalsh(cov / np.outer(sd, sd))[-1] < 1.2 * edge:
        return np.ones(K)
    u = np.linalg.eigh(cov)[1][:, -1]
    anchor = u[K - 1] if lay.has_reference else float(np.sum(u))
    if anchor < 0:
        u = -u
    # only a judge that clearly loads against the axis starts reversed; a flat or weak one
    # (small loading, sign set by noise) starts forward, as before
    signs: np.ndarray = np.where(u < -CONTRARY_LOADING * np.abs(u).max(initial=0.0), -1.0, 1.0)
    return signs


def _fix_reference(lay: Layout, f: Fit) -> None:
    """The reference judge is never biased (it has no family) and has no taste: its view of
    a student is what the ranking measures, so where it departs from the LLM judges' for a
    student, theirs is the error. Its scale and location are fitted like any judge's and
    the scores reported in its units (:func:`reported_scale`), which is the same model as
    fixing them at 1 and 0, and keeps the fit stable."""
    if lay.has_reference:
        f.bias[lay.K - 1] = 0.0
        f.taste[lay.K - 1] = 0.0


def _step(lay: Layout, f: Fit, w_item: np.ndarray, w_judge: np.ndarray, bias_step: bool = True) -> Fit:
    """One round of the alternating fit; returns the new parameters."""
    x, seen, cf = lay.x, lay.seen, lay.conflicted
    ci = lay.cell_item
    lam, a, s2, d, v = f.scale, f.location, f.noise, f.bias, f.v
    y = np.where(cf, x - d, x)
    on = seen * w_judge  # a judge resampled twice counts twice
    g = on * (lam / s2)
    h = on * (lam**2 / s2)
    res = np.where(seen, y - a, 0.0)
    gr = g * res
    tot_info = _row_sums(h)
    prior = f.mu[ci]
    # each judge's non-conflicted scores against the posterior of theta given the other
    # judges unrelated to the student (a related judge's bias must not pass for taste)
    gr_u, h_u = gr * ~cf, h * ~cf
    num_u, info_u = _row_sums(gr_u), _row_sums(h_u)
    info_loo = info_u[:, None] - h_u
    m_loo = (prior[:, None] / v + (num_u[:, None] - gr_u)) / (1.0 / v + info_loo)
    v_loo = 1.0 / (1.0 / v + info_loo)
    wi = w_item[ci]
    use = seen & ~cf & (info_loo > EPS * max(float(tot_info.max(initial=0.0)), 1e-12))
    W = use * wi[:, None] * w_judge
    n = W.sum(0)
    nn = np.maximum(n, EPS)
    mm = _col_sums(W, m_loo) / nn
    mx = _col_sums(W, x) / nn
    # within a datapoint only: across datapoints the item means (which each judge helps
    # set) would let a judge's own view of difficulty vouch for it
    key = lay.item_judge_key
    size = lay.n_items * lay.K
    wsum = np.bincount(key, W.ravel(), size)
    okk = wsum > 0
    per_weight = np.divide(1.0, wsum, out=np.zeros_like(wsum), where=okk)
    ix = np.bincount(key, (W * x).ravel(), size) * per_weight
    im = np.bincount(key, (W * m_loo).ravel(), size) * per_weight
    dx = x - ix[key].reshape(x.shape)
    dm = m_loo - im[key].reshape(x.shape)
    wdm = W * dm
    cov = _col_sums(wdm, dx) / nn
    var = _col_sums(wdm, dm) / nn
    varx = _col_sums(W * dx, dx) / nn
    with np.errstate(invalid="ignore", divide="ignore"):
        r2 = np.where((var > 1e-12) & (varx > 1e-12), cov**2 / (var * varx), 0.0)
    # only the part of the fit beyond what chance gives on these judgments (about 2
    # standard errors of a correlation) counts: a judge of pure noise gets scale ~0
    dof = np.maximum(n - np.count_nonzero(okk.reshape(lay.n_items, lay.K), axis=0), 1.0)
    keep = np.where(r2 > 0, np.clip(r2 - 4.0 / dof, 0.0, None) / np.where(r2 > 0, r2, 1.0), 0.0)
    # and a judge the others cannot check (they carry under VERIFY of what is known of
    # the answers it graded) has no measured scale: it could only vouch for itself
    known = _col_sums(W, 1.0 - v_loo / v) / nn
    new_lam = np.where((n > 2) & (known >= VERIFY), cov / (var + 1e-12) * np.sqrt(keep), 0.0)
    # no evidence either way: a minute positive scale, so such judges still average
    # (equally, by noise) when no judge carries information
    new_lam = np.where(np.abs(new_lam) < LAMBDA_FLOOR, LAMBDA_FLOOR, new_lam)
    # quality cannot explain more than all of a judge's spread within a datapoint
    cap = np.sqrt(np.maximum(varx, 0.0) / v)
    new_lam = np.clip(new_lam, -np.maximum(cap, LAMBDA_FLOOR), np.maximum(cap, LAMBDA_FLOOR))
    new_a = np.where(n > 2, mx - new_lam * mm, a)
    # noise: E[(x - a - lambda theta)^2] given the others, within datapoints, floored at a
    # twentieth of the judge's own spread so that no judge's noise collapses and takes over
    resid = (dx - new_lam * dm) ** 2 - new_lam**2 * v_loo
    if reference_measured(lay, new_lam):
        resid[:, -1] = _reference_resid(lay, W[:, -1], dx[:, -1] - new_lam[-1] * dm[:, -1], resid[:, -1])
    floor = np.maximum(NOISE_SHARE * varx, NOISE_FLOOR)
    new_s2 = np.where(n > 2, np.maximum(_col_sums(W, resid) / nn, floor), s2)
    # taste: spread of a judge's mean residual across students beyond what noise explains
    new_taste = _taste(lay, W, x - new_a - new_lam * m_loo, new_s2)
    new = Fit(new_a, new_lam, new_s2, d.copy(), f.bias_var.copy(), f.bias_prior_share.copy(), new_taste,
              f.mu, v, False, 0, n, (n > 2) & (known >= VERIFY))  # fmt: skip
    _fix_reference(lay, new)
    if bias_step and cf.any():
        _bias(lay, new, gr, h, wi, w_judge)
    # the datapoints' means and the spread of quality around them, from the full posterior
    num, prec = _answer_evidence(lay, new, on)
    m = (prior / v + num) / prec
    cnt_i = np.bincount(ci, minlength=lay.n_items)
    new.mu = np.where(cnt_i > 0, np.bincount(ci, m, lay.n_items) / np.maximum(cnt_i, 1), f.mu)
    dev2 = (m - new.mu[ci]) ** 2 + 1.0 / prec
    new.v = max(float((wi * dev2).sum() / max(wi.sum(), EPS)), V_FLOOR)
    # scale and spread of theta trade off (only lambda^2 v is identified): keep v where it
    # started, so the fit cannot drift along that ridge
    # and so do the judges' locations and the datapoints' means: keep their mean fixed too
    alpha = np.sqrt(v / new.v)
    # a reference without evidence stays exactly at the floor, not rescaled off it (it would
    # pass for measured and set the reported scale); the LLM judges' floors do move with
    # theta: that drift is how a fit whose first rounds measured no judge gets out of it
    floored = np.zeros(lay.K, bool)
    floored[-1] = lay.has_reference and not measured(new.scale[-1:])[0]
    new.scale, new.mu, new.v = np.where(floored, new.scale, new.scale / alpha), new.mu * alpha, v
    shift = float(new.mu[cnt_i > 0].mean() - f.mu[cnt_i > 0].mean()) if (cnt_i > 0).any() else 0.0
    new.mu, new.location = new.mu - shift, new.location + new.scale * shift
    return new


def _answer_evidence(lay: Layout, f: Fit, on: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per answer, what the judges say of its quality under ``f``: the numerator and the
    precision of its posterior before the datapoint's prior mean (``on``: the judgments
    that count, each as often as it is resampled)."""
    g = on * (f.scale / f.noise)
    h = on * (f.scale**2 / f.noise)
    y = np.where(lay.conflicted, lay.x - f.bias, lay.x)
    num = _row_sums(g * np.where(lay.seen, y - f.location, 0.0))
    return num, 1.0 / f.v + _row_sums(h)


def _row_sums(a: np.ndarray) -> np.ndarray:
    """``a.sum(1)`` of a (C, K) array as a product: summing a handful of columns row by row
    is several times slower, and the fit does it in every round."""
    out: np.ndarray = a @ np.ones(a.shape[1])
    return out


def _col_sums(w: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``(w * a).sum(0)`` without the (C, K) temporary."""
    out: np.ndarray = np.einsum("ij,ij->j", w, a)
    return out


def _reference_resid(lay: Layout, w: np.ndarray, e: np.ndarray, resid: np.ndarray) -> np.ndarray:
    """The reference judge's squared residuals about their mean per student (scaled by
    n / (n - 1)): the consensus it is checked against carries the model judges' taste for
    each student, which is theirs to answer for, not the reference's noise."""
    S = lay.n_students
    st = lay.cell_student
    n = np.bincount(st, w, S)
    n2 = np.bincount(st, w**2, S)
    tot = np.bincount(st, w * e, S)
    mean = np.where(n > 0, tot / np.where(n > 0, n, 1.0), 0.0)
    # effective count per student: resampled datapoints count as often as they are drawn
    eff = np.where(n2 > 0, n**2 / np.where(n2 > 0, n2, 1.0), 0.0)
    ok = (eff > 1.5)[st] & (w > 0)
    corr = np.where(ok, eff[st] / np.maximum(eff[st] - 1.0, EPS), 1.0)
    centred = (e - mean[st]) ** 2 * corr - (e**2 - resid)
    out: np.ndarray = np.where(ok, centred, resid)
    return out


def _taste(lay: Layout, W: np.ndarray, resid: np.ndarray, s2: np.ndarray) -> np.ndarray:
    """Per judge: variance across students of its mean residual, less the noise share."""
    K, S = lay.K, lay.n_students
    key = lay.student_judge_key
    n = np.bincount(key, W.ravel(), S * K).reshape(S, K)
    tot = np.bincount(key, (W * np.where(W > 0, resid, 0.0)).ravel(), S * K).reshape(S, K)
    has = n > 1
    mean = np.where(has, tot / np.maximum(n, EPS), 0.0)
    k_s = has.sum(0)
    grand = np.where(k_s > 0, mean.sum(0) / np.maximum(k_s, 1), 0.0)
    spread = np.where(has, (mean - grand) ** 2 - s2 / np.maximum(n, EPS), 0.0).sum(0)
    out: np.ndarray = np.maximum(np.where(k_s > 1, spread / np.maximum(k_s - 1, 1), 0.0), TASTE_FLOOR**2)
    return out


def _bias(lay: Layout, f: Fit, gr: np.ndarray, h: np.ndarray, wi: np.ndarray, w_judge: np.ndarray) -> None:
    """Each judge's bias on its conflicted judgments, per student against the consensus of
    the judges unrelated to that student, then pooled over students with the prior."""
    x, seen, cf = lay.x, lay.seen, lay.conflicted
    K, S = lay.K, lay.n_students
    # only competent unrelated judges: a flat judge's view, divided by its tiny scale, is
    # all noise and would make the estimate swing
    unrelated = seen & ~cf & (f.reliability >= COMPETENT)[None, :]
    u_info = _row_sums(h * unrelated)
    u_num = _row_sums(gr * unrelated)
    ok = u_info > 1e-12
    theta_u = np.where(ok, u_num / np.where(ok, u_info, 1.0), 0.0)
    lam, a, s2 = f.scale, f.location, f.noise
    # per conflicted judgment: residual against the unrelated consensus and its variance
    vr = s2[None, :] + lam[None, :] ** 2 / np.where(ok, u_info, np.inf)[:, None]
    wt = np.where(cf & ok[:, None], wi[:, None] * w_judge / vr, 0.0)
    r = np.where(cf, x - a - lam * theta_u[:, None], 0.0)
    key = lay.student_judge_key
    sw = np.bincount(key, wt.ravel(), S * K).reshape(S, K)
    sr = np.bincount(key, (wt * r).ravel(), S * K).reshape(S, K)
    has = sw > 0
    d_js = np.where(has, sr / np.where(has, sw, 1.0), 0.0)
    # the unrelated consensus of a student carries its judges' taste, which does not
    # average out over datapoints: per student, the taste variance of that consensus
    gk = (np.where(unrelated, lam / s2, 0.0) * w_judge)  # (C, K)
    g_s = np.stack([np.bincount(lay.cell_student, gk[:, q], S) for q in range(K)], 1)  # (S, K)
    p_s = (g_s * lam).sum(1)
    taste_theta = np.where(p_s[:, None] > 1e-12, g_s / np.where(p_s > 1e-12, p_s, 1.0)[:, None], 0.0)
    t_u = (taste_theta**2 * f.taste[None, :]).sum(1)  # (S,) theta units
    var_js = np.where(has, 1.0 / np.where(has, sw, 1.0) + lam[None, :] ** 2 * t_u[:, None] + f.taste[None, :], np.inf)
    info = np.where(has, 1.0 / var_js, 0.0)
    tot_info = info.sum(0)
    post = tot_info + 1.0 / TAU**2
    f.bias = (info * d_js).sum(0) / post
    f.bias_var = 1.0 / post
    f.bias_prior_share = (1.0 / TAU**2) / post
    has_conf = cf.any(0)
    f.bias = np.where(has_conf, f.bias, 0.0)
    f.bias_prior_share = np.where(has_conf, f.bias_prior_share, 0.0)
    f.bias_var = np.where(has_conf, f.bias_var, 0.0)
    _fix_reference(lay, f)


def fit_measurement(
    lay: Layout,
    w_item: np.ndarray | None = None,
    w_judge: np.ndarray | None = None,
    start: Fit | None = None,
    max_iter: int = MAX_ITER,
    tol: float = TOL,
) -> Fit:
    """Fit the model (``w_item``/``w_judge``: resample multiplicities; ``start``: a warm start).

    A cold fit whose rounds end with no judge measured has fallen into the model's empty
    fixed point: once every scale is at its floor, no consensus is left to measure a judge
    against, and none ever is again. It is fitted once more without damping its first round
    toward the equal start (see :func:`_rounds`), and that fit is kept if it measures judges
    whose direction is settled (:func:`_settled`); the empty fit is the honest one for two
    judges that contradict each other with nothing to say which is right.
    """
    wi = np.ones(lay.n_items) if w_item is None else np.asarray(w_item, np.float64)
    wj = np.ones(lay.K) if w_judge is None else np.asarray(w_judge, np.float64)
    if start is not None:
        return _rounds(lay, start, wi, wj, max_iter, tol, damp_first=True)
    f = _rounds(lay, _start(lay), wi, wj, max_iter, tol, damp_first=True)
    if measured(f.scale).any():
        return f
    again = _rounds(lay, _start(lay), wi, wj, max_iter, tol, damp_first=False)
    return again if _settled(lay, again) else f


def _settled(lay: Layout, f: Fit) -> bool:
    """Whether the fit says which way is better: the reference judge is measured, or two
    judges or more are and more of them read quality one way than the other (the reported
    scale's rule, :func:`measured_sides`). One judge measured alone, where the first fit
    found none, is one side of a contradiction picked by the fit's path, not evidence."""
    if reference_measured(lay, f.scale):
        return True
    forward, reversed_ = (int(side.sum()) for side in measured_sides(lay, f))
    return forward + reversed_ >= 2 and forward != reversed_


def _rounds(lay: Layout, f: Fit, wi: np.ndarray, wj: np.ndarray, max_iter: int, tol: float, damp_first: bool) -> Fit:
    """The alternating fit from ``f``. ``damp_first``: the first round is averaged with the
    start too. From a cold start that keeps a judge that tells answers apart from being
    floored in the first round, where flat judges, equal at the start, outvote it in its
    consensus (the reference run: three flat judges beside two that tell answers apart); it
    can also give a flat judge half a scale at its own tiny noise, the most information of
    any judge, after which the next round's consensus measures no one.

    A fit still moving after ``SETTLE_AFTER`` rounds is damped harder (:func:`_settle`).
    Some never converged: of 40 runs of the reference run's shape, 4 fits without labels,
    3 with 40 suggested labels and 15 with 40 random ones went round a cycle of states, in
    one of which a judge whose noise fell to almost nothing outvoted the rest, in another
    the labels were left at the floor; the fit ended on whichever state round 300 gave
    (7 of the 15 with the labels unmeasured, as if there were none). Damped, all but 3 of
    them converge, to a fixed point of the undamped rounds (damping changes none: a fixed
    point of the rounds is one of the damped rounds and the other way round)."""
    _fix_reference(lay, f)
    it, converged = 0, False
    for it in range(1, max_iter + 1):
        new = _step(lay, f, wi, wj)
        if it > DAMP_AFTER and (damp_first or it > 1):  # a judge at the edge of the chance
            # threshold can flip back and forth between rounds; averaging the rounds settles it
            # between the two
            unmeasured = ~measured(new.scale)  # no evidence: no damping toward it
            new.scale = np.where(unmeasured, new.scale, 0.5 * (new.scale + f.scale))
            new.bias = 0.5 * (new.bias + f.bias)
        if it > SETTLE_AFTER:
            _settle(new, f, SETTLE_KEEP)
        change = max(
            float(np.abs(new.scale - f.scale).max(initial=0.0)),
            float(np.abs(new.location - f.location).max(initial=0.0)),
            float(np.abs(new.bias - f.bias).max(initial=0.0)),
            float(np.abs(np.sqrt(new.noise) - np.sqrt(f.noise)).max(initial=0.0)),
            abs(np.sqrt(new.v) - np.sqrt(f.v)),
        )
        f = new
        if change < tol:
            converged = True
            break
    f.converged, f.iterations = converged, it
    return f


def _settle(new: Fit, old: Fit, keep: float) -> None:
    """Keep ``keep`` of each judge's last scale, location, bias and noise (as a standard
    deviation) in ``new``: the damped rounds of a fit that goes round a cycle."""
    new.scale = keep * old.scale + (1.0 - keep) * new.scale
    new.location = keep * old.location + (1.0 - keep) * new.location
    new.bias = keep * old.bias + (1.0 - keep) * new.bias
    new.noise = (keep * np.sqrt(old.noise) + (1.0 - keep) * np.sqrt(new.noise)) ** 2


def subsample(lay: Layout, cap: int = FIT_CELLS, seed: int = 0) -> tuple[Layout, float]:
    """(layout of a random subset of datapoints holding about ``cap`` answers, share of the
    datapoints kept): the few judge parameters are as well determined by 20,000 answers as
    by a million, at a fiftieth of the cost."""
    C = len(lay.cell_item)
    if cap >= C or lay.n_items == 0:
        return lay, 1.0
    share = cap / C
    keep_item = np.random.default_rng([seed, 7]).random(lay.n_items) < share
    rows = keep_item[lay.cell_item]
    sub = Layout(lay.x[rows], lay.seen[rows], lay.conflicted[rows], lay.cell_item[rows], lay.cell_student[rows],
                 lay.n_items, lay.n_students, lay.n_judges, lay.has_reference, lay.item_teacher)  # fmt: skip
    return sub, float(keep_item.mean())


def item_means(lay: Layout, f: Fit) -> np.ndarray:
    """Every datapoint's mean ``mu_i`` given the judge parameters (closed form of the
    fixed point ``mu_i = mean_c E[theta_c | judges, mu_i]``)."""
    num, prec = _answer_evidence(lay, f, lay.seen)
    ci = lay.cell_item
    cnt = np.bincount(ci, minlength=lay.n_items)
    a = np.bincount(ci, num / prec, lay.n_items)
    b = np.bincount(ci, 1.0 / (f.v * prec), lay.n_items)
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = np.where(cnt > 0, a / np.maximum(cnt - b, 1e-12), np.nan)
    fill = float(np.nanmean(mu)) if np.isfinite(mu).any() else 0.0
    out: np.ndarray = np.where(np.isfinite(mu), mu, fill)
    return out


def fit_all(lay: Layout) -> tuple[Fit, Layout, float]:
    """(fit with every datapoint's mean, layout the judge parameters were fitted on, its
    share of the datapoints)."""
    sub, share = subsample(lay)
    f = fit_measurement(sub)
    if sub is not lay:
        f.mu = item_means(lay, f)
    return f, sub, share
