"""The headline's measurement model: a congeneric one-factor model of the judges.

A judge ``j`` scoring answer ``c`` (one student's answer to one datapoint) gives

    x = a_j + lambda_j * theta_c + delta_j * [conflicted] + taste_js + e,   e ~ N(0, sigma_j^2)

with ``a_j`` its location (leniency), ``lambda_j`` its scale (how strongly its scores move
with answer quality: near 0 for a flat judge, negative for a contrary one), ``sigma_j`` its
noise, ``delta_j`` its bias on answers of its own family (conflicted judgments) and
``taste_js`` a per-student taste of spread ``t_j`` that no number of datapoints averages
away. ``theta_c`` has a prior N(mu_i, v) around its datapoint's mean.

**Fit** (alternating, vectorised over a dense answers x judges array):

* the posterior of every ``theta_c`` given the judges (E-step);
* each judge's ``a, lambda, sigma`` by regressing its *non-conflicted* scores on the
  posterior of ``theta`` given the *other* judges only (regression calibration: unbiased
  for a Gaussian factor, and a judge's own scores never vouch for it), on answers that
  other judges also graded;
* each judge's ``delta`` from its conflicted scores against the consensus of the judges
  unrelated to the student, per student, with each student's estimate as uncertain as the
  unrelated judges' information and taste make it, shrunk by the prior N(0, TAU^2):
  estimated where competent unrelated judges grade the same answers, near 0 with the
  prior's spread where none does;
* ``mu_i`` and ``v`` from the posterior.

**Student quality** is the generalised-least-squares mean of its answers' ``theta``
relative to the datapoints' means: each judgment counts in proportion to its judge's
information ``lambda^2 / sigma^2``, so a flat judge counts for nearly nothing however
consistent it is, and a contrary judge's scores count reversed. Reported on the 0-1 scale
of an average informative judge (information-weighted scale 1, location 0), or of the
reference judge when one is given.

Chosen over the earlier correlation-weighted consensus and a leniency-only correction by
measurement on :mod:`coeval_analysis.scenarios` (``python -m benchmarks.ranking_accuracy``,
docs/analysis.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from coeval_analysis.stats.headline import Judgments

__all__ = [
    "TAU",
    "Fit",
    "Layout",
    "Reference",
    "bootstrap",
    "fit_all",
    "fit_measurement",
    "info_share",
    "layout_of",
    "measured",
    "student_scores",
]

TAU = 0.10  #: prior standard deviation of a judge's bias toward its family (0-1 score scale)
NOISE_FLOOR = 1e-4  #: judge noise variance floor (a judge giving one level has noise 0)
V_FLOOR = 1e-6
TEACHER_FLOOR = 0.05  #: least weight of a teacher whose datapoints do not separate students like the others'
COMPETENT = 0.05  #: reliability from which an unrelated judge's view can measure a family bias
NOISE_SHARE = 0.05  #: a judge's noise variance is at least this share of its own within-datapoint variance
VERIFY = 0.05  #: share of the answers' quality the other judges must pin down to check a judge
LAMBDA_FLOOR = 1e-3  #: scale of a judge with no evidence of telling answers apart (theta units)
TASTE_FLOOR = 0.02  #: a judge's per-student taste is at least this (0-1 scale): 5 students cannot show less
MAX_ITER = 300
#: a judge starts reversed when its loading on the judges' principal axis is below minus this
#: share of the largest loading
CONTRARY_LOADING = 0.5
DAMP_AFTER = 0  #: rounds after which the scales and biases are damped (half old, half new)
TOL = 1e-4
_EPS = 1e-9


@dataclass(frozen=True)
class Reference:
    """Scores of a reference judge of known scale (human labels, gold answers): one per
    (datapoint code, student code), value in [0, 1]. It enters the fit as a judge with scale
    1, location 0 and no family, so it fixes the common scale and, where it grades a
    student, the student's place regardless of the LLM judges' family biases."""

    item: np.ndarray
    student: np.ndarray
    value: np.ndarray


@dataclass
class Layout:
    """Judgments as dense (answers x judges) arrays; the reference judge, if any, last."""

    x: np.ndarray  #: (C, K) mean score per answer and judge (0 where absent)
    seen: np.ndarray  #: (C, K) bool
    conflicted: np.ndarray  #: (C, K) bool
    cell_item: np.ndarray  #: (C,)
    cell_student: np.ndarray  #: (C,)
    n_items: int
    n_students: int
    n_judges: int  #: LLM judges (K, less the reference)
    has_reference: bool
    item_teacher: np.ndarray | None = None  #: teacher code per item (-1: unknown)

    @property
    def K(self) -> int:
        return self.n_judges + int(self.has_reference)


@dataclass
class Fit:
    """Parameters of the model (theta units) and what the headline reports."""

    location: np.ndarray  #: a_j (K)
    scale: np.ndarray  #: lambda_j (K)
    noise: np.ndarray  #: sigma_j^2 (K)
    bias: np.ndarray  #: delta_j (K)
    bias_var: np.ndarray  #: posterior variance of delta_j (K)
    bias_prior_share: np.ndarray  #: share of the prior in delta_j's posterior (1: no evidence)
    taste: np.ndarray  #: t_j^2 in score units (K)
    mu: np.ndarray  #: per item
    v: float
    converged: bool
    iterations: int
    n_fit: np.ndarray = field(default_factory=lambda: np.zeros(0))  #: judgments each judge's fit used
    #: per judge: whether other judges pin down enough of its answers' quality to check it
    checked: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))

    @property
    def reliability(self) -> np.ndarray:
        """Per judge: the share of its score variance within a datapoint that answer
        quality explains, ``lambda^2 v / (lambda^2 v + sigma^2)`` (0: a flat or pure-noise
        judge); free of the scale's units."""
        sv = self.scale**2 * self.v
        out: np.ndarray = sv / (sv + self.noise)
        return out


def layout_of(j: Judgments, reference: Reference | None = None) -> Layout:
    """Dense arrays of the usable judgments (one cell per answered (item, student))."""
    S, k = j.n_students, j.n_judges
    keep = ~np.isnan(j.value) & (j.item >= 0) & (j.student >= 0)
    cell = j.item[keep].astype(np.int64) * S + j.student[keep]
    judge = j.judge[keep].astype(np.int64)
    value = j.value[keep].astype(np.float64)
    conf = j.conflicted[keep]
    has_ref = reference is not None and len(reference.value) > 0
    if has_ref:
        assert reference is not None
        ok = ~np.isnan(reference.value) & (reference.item >= 0) & (reference.student >= 0)
        cell = np.concatenate([cell, reference.item[ok].astype(np.int64) * S + reference.student[ok]])
        judge = np.concatenate([judge, np.full(int(ok.sum()), k, np.int64)])
        value = np.concatenate([value, reference.value[ok].astype(np.float64)])
        conf = np.concatenate([conf, np.zeros(int(ok.sum()), bool)])
    K = k + int(has_ref)
    cells, inv = np.unique(cell, return_inverse=True)
    C = len(cells)
    key = inv * K + judge
    cnt = np.bincount(key, minlength=C * K).reshape(C, K)
    tot = np.bincount(key, value, C * K).reshape(C, K)
    cf = np.bincount(key, conf.astype(np.float64), C * K).reshape(C, K) > 0
    seen = cnt > 0
    x = np.where(seen, tot / np.maximum(cnt, 1), 0.0)
    return Layout(x, seen, cf & seen, cells // max(S, 1), cells % max(S, 1), j.n_items, S, k, has_ref,
                  np.asarray(j.item_teacher, np.int64))


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
    other judge's first consensus, and the fit would settle where no judge tells answers apart."""
    K = lay.K
    if K < 2 or not len(lay.cell_item):
        return np.ones(K)
    dev = np.where(lay.seen, lay.x - mu[lay.cell_item][:, None], 0.0)
    both = lay.seen.astype(np.float64)
    cov = (dev.T @ dev) / np.maximum(both.T @ both, 1.0)
    sd = np.sqrt(np.maximum(np.diag(cov), _EPS))
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


def measured(scale: np.ndarray) -> np.ndarray:
    """Which judges have a measured scale (not the floor given to a judge without evidence;
    the floor moves by the rescaling of theta by a few parts in a thousand at most)."""
    out: np.ndarray = np.abs(scale) > 1.01 * LAMBDA_FLOOR
    return out


def _fix_reference(lay: Layout, f: Fit) -> None:
    """The reference judge is never biased (it has no family) and has no taste: its view of
    a student is what the ranking measures, so where it departs from the LLM judges' for a
    student, theirs is the error. Its scale and location are fitted like any judge's and
    the scores reported in its units (:func:`_reported_scale`), which is the same model as
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
    tot_info = h.sum(1)
    prior = f.mu[ci]
    # each judge's non-conflicted scores against the posterior of theta given the other
    # judges unrelated to the student (a related judge's bias must not pass for taste)
    gr_u, h_u = gr * ~cf, h * ~cf
    num_u, info_u = gr_u.sum(1), h_u.sum(1)
    info_loo = info_u[:, None] - h_u
    m_loo = (prior[:, None] / v + (num_u[:, None] - gr_u)) / (1.0 / v + info_loo)
    v_loo = 1.0 / (1.0 / v + info_loo)
    wi = w_item[ci]
    use = seen & ~cf & (info_loo > _EPS * max(float(tot_info.max(initial=0.0)), 1e-12))
    W = use * wi[:, None] * w_judge
    n = W.sum(0)
    nn = np.maximum(n, _EPS)
    mm = (W * m_loo).sum(0) / nn
    mx = (W * x).sum(0) / nn
    # within a datapoint only: across datapoints the item means (which each judge helps
    # set) would let a judge's own view of difficulty vouch for it
    key = (ci[:, None] * lay.K + np.arange(lay.K)[None, :]).ravel()
    size = lay.n_items * lay.K
    wsum = np.bincount(key, W.ravel(), size)
    okk = wsum > 0
    ix = np.where(okk, np.bincount(key, (W * x).ravel(), size) / np.where(okk, wsum, 1.0), 0.0)
    im = np.where(okk, np.bincount(key, (W * m_loo).ravel(), size) / np.where(okk, wsum, 1.0), 0.0)
    dx = x - ix[key].reshape(x.shape)
    dm = m_loo - im[key].reshape(x.shape)
    cov = (W * dx * dm).sum(0) / nn
    var = (W * dm**2).sum(0) / nn
    varx = (W * dx**2).sum(0) / nn
    with np.errstate(invalid="ignore", divide="ignore"):
        r2 = np.where((var > 1e-12) & (varx > 1e-12), cov**2 / (var * varx), 0.0)
    # only the part of the fit beyond what chance gives on these judgments (about 2
    # standard errors of a correlation) counts: a judge of pure noise gets scale ~0
    dof = np.maximum(n - okk.reshape(lay.n_items, lay.K).sum(0), 1.0)
    keep = np.where(r2 > 0, np.clip(r2 - 4.0 / dof, 0.0, None) / np.where(r2 > 0, r2, 1.0), 0.0)
    # and a judge the others cannot check (they carry under VERIFY of what is known of
    # the answers it graded) has no measured scale: it could only vouch for itself
    known = (W * (1.0 - v_loo / v)).sum(0) / nn
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
    floor = np.maximum(NOISE_SHARE * varx, NOISE_FLOOR)
    new_s2 = np.where(n > 2, np.maximum((W * resid).sum(0) / nn, floor), s2)
    # taste: spread of a judge's mean residual across students beyond what noise explains
    new_taste = _taste(lay, W, x - new_a - new_lam * m_loo, new_s2)
    new = Fit(new_a, new_lam, new_s2, d.copy(), f.bias_var.copy(), f.bias_prior_share.copy(), new_taste,
              f.mu, v, False, 0, n, (n > 2) & (known >= VERIFY))  # fmt: skip
    _fix_reference(lay, new)
    if bias_step and cf.any():
        _bias(lay, new, gr, h, wi, w_judge)
    # the datapoints' means and the spread of quality around them, from the full posterior
    g2 = on * (new.scale / new.noise)
    h2 = on * (new.scale**2 / new.noise)
    y2 = np.where(cf, x - new.bias, x)
    num = (g2 * np.where(seen, y2 - new.location, 0.0)).sum(1)
    prec = 1.0 / v + h2.sum(1)
    m = (prior / v + num) / prec
    cnt_i = np.bincount(ci, minlength=lay.n_items)
    new.mu = np.where(cnt_i > 0, np.bincount(ci, m, lay.n_items) / np.maximum(cnt_i, 1), f.mu)
    dev2 = (m - new.mu[ci]) ** 2 + 1.0 / prec
    new.v = max(float((wi * dev2).sum() / max(wi.sum(), _EPS)), V_FLOOR)
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


def _taste(lay: Layout, W: np.ndarray, resid: np.ndarray, s2: np.ndarray) -> np.ndarray:
    """Per judge: variance across students of its mean residual, less the noise share."""
    K, S = lay.K, lay.n_students
    key = (lay.cell_student[:, None] * K + np.arange(K)[None, :]).ravel()
    n = np.bincount(key, W.ravel(), S * K).reshape(S, K)
    tot = np.bincount(key, (W * np.where(W > 0, resid, 0.0)).ravel(), S * K).reshape(S, K)
    has = n > 1
    mean = np.where(has, tot / np.maximum(n, _EPS), 0.0)
    k_s = has.sum(0)
    grand = np.where(k_s > 0, mean.sum(0) / np.maximum(k_s, 1), 0.0)
    spread = np.where(has, (mean - grand) ** 2 - s2 / np.maximum(n, _EPS), 0.0).sum(0)
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
    u_info = (h * unrelated).sum(1)
    u_num = (gr * unrelated).sum(1)
    ok = u_info > 1e-12
    theta_u = np.where(ok, u_num / np.where(ok, u_info, 1.0), 0.0)
    lam, a, s2 = f.scale, f.location, f.noise
    # per conflicted judgment: residual against the unrelated consensus and its variance
    vr = s2[None, :] + lam[None, :] ** 2 / np.where(ok, u_info, np.inf)[:, None]
    wt = np.where(cf & ok[:, None], wi[:, None] * w_judge / vr, 0.0)
    r = np.where(cf, x - a - lam * theta_u[:, None], 0.0)
    key = (lay.cell_student[:, None] * K + np.arange(K)[None, :]).ravel()
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
    """Fit the model (``w_item``/``w_judge``: resample multiplicities; ``start``: a warm start)."""
    wi = np.ones(lay.n_items) if w_item is None else np.asarray(w_item, np.float64)
    wj = np.ones(lay.K) if w_judge is None else np.asarray(w_judge, np.float64)
    f = _start(lay) if start is None else start
    _fix_reference(lay, f)
    it, converged = 0, False
    for it in range(1, max_iter + 1):
        new = _step(lay, f, wi, wj)
        if it > DAMP_AFTER:  # a judge at the edge of the chance threshold can flip back and
            # forth between rounds; averaging the rounds settles it between the two
            unmeasured = ~measured(new.scale)  # no evidence: no damping toward it
            new.scale = np.where(unmeasured, new.scale, 0.5 * (new.scale + f.scale))
            new.bias = 0.5 * (new.bias + f.bias)
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


@dataclass
class Scores:
    """Student quality on the reported scale, and how it was put on it."""

    score: np.ndarray  #: per student (NaN: not scored)
    num: np.ndarray  #: (items, S) numerator of the GLS deviation (theta units)
    den: np.ndarray  #: (items, S) information
    grand: float  #: theta units
    stretch: float  #: Lambda: reported = stretch * theta + shift
    shift: float
    info_share: np.ndarray  #: (S, K) share of each judge in each student's information
    bias_gradient: np.ndarray  #: (S, K) d score / d delta_j (reported units)
    taste_var: np.ndarray  #: (S,) variance of the score from the judges' taste (reported units)
    cell: np.ndarray  #: (items, S) GLS answer quality on the reported scale (NaN: none)
    item_weight: np.ndarray = field(default_factory=lambda: np.zeros(0))  #: per item, its teacher's weight


def teacher_weights(num: np.ndarray, den: np.ndarray, item_teacher: np.ndarray | None) -> np.ndarray:
    """Per item: its teacher's weight, floored at ``TEACHER_FLOOR``, so a teacher whose
    datapoints ignore quality counts little. The weight is the correlation across students
    between the student effects its datapoints give and those the other teachers' give,
    times the split-half reliability of its own student effects relative to the most
    reliable teacher's: with two teachers the correlation is the same for both, and only
    the reliability tells the one that separates students from the one that does not.
    Refitted with everything else in every bootstrap refit."""
    n_items = num.shape[0]
    out = np.ones(n_items)
    if item_teacher is None or len(item_teacher) != n_items:
        return out
    codes = np.unique(item_teacher[item_teacher >= 0])
    if len(codes) < 2 or num.shape[1] < 3:
        return out
    tn, td = num.sum(0), den.sum(0)
    agreement: dict[int, float] = {}
    reliability: dict[int, float] = {}
    for t in codes:
        mine = item_teacher == t
        n_t, d_t = num[mine].sum(0), den[mine].sum(0)
        ok = (d_t > 1e-12) & (td - d_t > 1e-12)
        if ok.sum() < 3:
            continue
        agreement[int(t)] = _correlation(n_t[ok] / d_t[ok], (tn - n_t)[ok] / (td - d_t)[ok])
        reliability[int(t)] = _split_half(num[mine], den[mine])
    top = max(reliability.values(), default=0.0)
    for t, r in agreement.items():
        relative = reliability[t] / top if top > 1e-12 else 1.0
        out[item_teacher == t] = max(r * relative, TEACHER_FLOOR)
    return out


def _correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation, 0 when either side does not vary."""
    if a.std() < 1e-12 or b.std() < 1e-12:
        return 0.0
    return float(np.corrcoef(a, b)[0, 1])


def _split_half(num: np.ndarray, den: np.ndarray) -> float:
    """Spearman-Brown reliability of the student effects of one teacher's datapoints, from
    the correlation of the effects its odd and its even datapoints give (1 when it has too
    few datapoints to split: nothing says it is unreliable)."""
    if num.shape[0] < 4:
        return 1.0
    halves = []
    for part in (slice(0, None, 2), slice(1, None, 2)):
        n, d = num[part].sum(0), den[part].sum(0)
        halves.append(np.where(d > 1e-12, n / np.where(d > 1e-12, d, 1.0), np.nan))
    ok = ~np.isnan(halves[0]) & ~np.isnan(halves[1])
    if ok.sum() < 3:
        return 1.0
    r = _correlation(halves[0][ok], halves[1][ok])
    return max(0.0, 2 * r / (1 + r)) if r > -1 else 0.0


def _reported_scale(lay: Layout, f: Fit, on_reference: bool = True) -> tuple[float, float]:
    """(stretch, shift) taking theta to the scale of an average informative judge, or to
    the reference judge's (scale 1, location 0) when there is one the others can check
    (``on_reference=False``: never, as for a refit of a fit that did not measure it)."""
    if on_reference and lay.has_reference and measured(f.scale[-1:])[0]:
        return float(f.scale[-1]), float(f.location[-1])
    n = lay.seen.sum(0)
    info = np.where(n > 0, f.scale**2 / f.noise, 0.0)
    # the direction most measured judges agree on is "better": a single highly consistent
    # contrary judge must not turn the ranking upside down, so only the majority side counts
    pos, neg = measured(f.scale) & (f.scale > 0) & (n > 0), measured(f.scale) & (f.scale < 0) & (n > 0)
    if pos.sum() != neg.sum():
        side = pos if pos.sum() > neg.sum() else neg
    else:
        side = pos if (info * f.scale).sum() >= 0 else neg
    if (info * side).sum() > 0:
        info = info * side
    if info.sum() <= 0:
        return 1.0, 0.0
    stretch = float((info * f.scale).sum() / info.sum())
    if abs(stretch) < 1e-12:
        return 1.0, 0.0
    shift = stretch * float((info * f.location).sum() / (info * f.scale).sum())
    return stretch, shift


def student_scores(lay: Layout, f: Fit, w_judge: np.ndarray | None = None, on_reference: bool = True) -> Scores:
    """Each student's information-weighted quality relative to the datapoints' means
    (``on_reference``: see :func:`_reported_scale`)."""
    S, n_items, K = lay.n_students, lay.n_items, lay.K
    wj = np.ones(K) if w_judge is None else w_judge
    seen, cf = lay.seen, lay.conflicted
    on = seen * wj
    g = on * (f.scale / f.noise)
    h = on * (f.scale**2 / f.noise)
    y = np.where(cf, lay.x - f.bias, lay.x)
    dev = np.where(seen, y - f.location - f.scale * f.mu[lay.cell_item][:, None], 0.0)
    num_c, den_c = (g * dev).sum(1), h.sum(1)
    flat = lay.cell_item * S + lay.cell_student
    num = np.bincount(flat, num_c, n_items * S).reshape(n_items, S)
    den = np.bincount(flat, den_c, n_items * S).reshape(n_items, S)
    weight = teacher_weights(num, den, lay.item_teacher)
    num, den = num * weight[:, None], den * weight[:, None]
    has_item = np.bincount(lay.cell_item, minlength=n_items) > 0
    grand = float(f.mu[has_item].mean()) if has_item.any() else float("nan")
    stretch, shift = _reported_scale(lay, f, on_reference)
    tn, td = num.sum(0), den.sum(0)
    ok = td > 1e-12
    theta = np.where(ok, grand + tn / np.where(ok, td, 1.0), np.nan)
    score = stretch * theta + shift
    # per student and judge: share of information, and how the score moves with each bias
    keyed = (lay.cell_student[:, None] * K + np.arange(K)[None, :]).ravel()
    h_sk = np.bincount(keyed, h.ravel(), S * K).reshape(S, K)
    g_sk = np.bincount(keyed, g.ravel(), S * K).reshape(S, K)
    gc_sk = np.bincount(keyed, (g * cf).ravel(), S * K).reshape(S, K)
    tds = np.where(ok, td, 1.0)[:, None]
    share = np.where(ok[:, None], h_sk / tds, 0.0)
    bias_grad = np.where(ok[:, None], -stretch * gc_sk / tds, 0.0)
    taste_var = stretch**2 * (np.where(ok[:, None], g_sk / tds, 0.0) ** 2 * f.taste[None, :]).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cell = np.where(den > 1e-12, stretch * (f.mu[:, None] + num / den) + shift, np.nan)
    return Scores(score, num, den, grand, stretch, shift, share, bias_grad, taste_var, cell, weight)


FIT_CELLS = 20_000  #: judge parameters are fitted on at most about this many answers
REFIT_BUDGET = 4.0e6  #: judgment-rounds the bootstrap's refits may take (about 1 s of CPU)
REFIT_MIN = 20  #: refits at least (their spread is reused for the other resamples)
REFIT_ROUNDS = 8  #: rounds of a warm-started refit
JUDGE_RESAMPLE_MIN = 6  #: judges are resampled too from this many judges up


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
    on = lay.seen
    g = on * (f.scale / f.noise)
    h = on * (f.scale**2 / f.noise)
    y = np.where(lay.conflicted, lay.x - f.bias, lay.x)
    num = (g * np.where(on, y - f.location, 0.0)).sum(1)
    prec = 1.0 / f.v + h.sum(1)
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
    W = np.concatenate(weights, 0) if weights else np.zeros((0, lay.n_items), np.float32)
    B, S, K = W.shape[0], lay.n_students, lay.K
    rng = np.random.default_rng([seed, 29])
    fixed = _fixed_scores(W, sc, f)
    entries = max(int(sub.seen.sum()), 1)
    R = min(B, max(REFIT_MIN, int(budget / (entries * REFIT_ROUNDS))))
    resample_judges = lay.n_judges >= JUDGE_RESAMPLE_MIN
    delta = np.zeros((R, S))
    info = np.zeros((R, K))
    scale = np.zeros((R, K))
    sub_items = np.unique(sub.cell_item)
    sc_sub = sc if sub is lay else student_scores(sub, f)
    # every refit reports on the scale the fit chose: a refit that happens to measure a
    # reference the fit could not must not switch units under the others
    on_ref = bool(lay.has_reference and measured(f.scale[-1:])[0])
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
        stretch = _reported_scale(lay, g, on_ref)[0]
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


def _fixed_scores(W: np.ndarray, sc: Scores, f: Fit) -> np.ndarray:
    """Reported scores over resamples with the judge parameters held fixed."""
    if W.shape[0] == 0:
        return np.zeros((0, len(sc.score)))
    Wd = W.astype(np.float64)
    num, den = Wd @ sc.num, Wd @ sc.den
    has_item = (sc.den > 0).any(1).astype(np.float64)
    gw = Wd @ has_item
    grand = np.where(gw > 0, (Wd @ (f.mu * has_item)) / np.where(gw > 0, gw, 1.0), sc.grand)
    with np.errstate(invalid="ignore", divide="ignore"):
        theta = grand[:, None] + np.where(den > 1e-12, num / np.where(den > 1e-12, den, 1.0), np.nan)
    out: np.ndarray = sc.stretch * theta + sc.shift
    return out
