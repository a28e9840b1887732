"""Sequential stopping: when the question a design asks is answered, and how sure each look is.

A design looks at its data a fixed number of times (after the calibration slice, then after
each round). Each look's pairwise intervals are at level ``1 - alpha_k`` with the ``alpha_k``
summing to ``alpha`` over the looks (*alpha spending*): by the union bound, the chance that a
pair's interval misses its value at the look where the design stops, whichever look that
is and however it was chosen, is at most ``alpha``. The default split is Bonferroni's, equal
at every look: it spends enough early for students far from the question to be let go after
the calibration slice. ``obrien_fleming`` (Lan and DeMets' spending function) keeps nearly
all of ``alpha`` for the last looks, so it stops later and gives narrower final intervals.

The questions (``stop_when``):

* ``{top: 1}`` (the default): the first place is determined, one student above every other;
* ``{top: k}``: the set of the first ``k`` is determined (each of them above each of the rest);
* ``{separated: all, delta: d}``: every adjacent pair of the order is separated, or shown
  within ``d`` of each other (their interval inside ``[-d, d]``);
* ``{width: w}``: every student's score interval, relative to the students' mean, is at most
  ``w`` wide.

Each rule also names the students still *open* (whose answers can still change the answer):
only they are answered and judged in the next round.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

import attrs
import numpy as np
from scipy.stats import norm

__all__ = ["Intervals", "StopRule", "answered", "look_alphas", "open_students", "parse_stop_rule"]

Spending = Literal["bonferroni", "obrien_fleming"]
#: how close two students shown "within delta" must be, on the 0-1 score scale, by default
DEFAULT_DELTA = 0.02


@attrs.frozen
class StopRule:
    """One question: ``kind`` is ``top``, ``separated`` or ``width``."""

    kind: Literal["top", "separated", "width"]
    k: int = 1  #: ``top``: how many first places
    delta: float = DEFAULT_DELTA  #: ``separated``: a difference this small counts as a tie
    width: float = 0.05  #: ``width``: the widest score interval allowed

    def describe(self) -> str:
        if self.kind == "top":
            return "the first place is determined" if self.k == 1 else f"the first {self.k} are determined"
        if self.kind == "separated":
            return f"every adjacent pair is separated or within {self.delta:g}"
        return f"every score interval is at most {self.width:g} wide"


def parse_stop_rule(raw: Mapping[str, Any] | None, n_students: int | None = None) -> StopRule:
    """``stop_when`` as written in a config (``None``: ``{top: 1}``); a ValueError names the
    field and the rule it breaks."""
    if raw is None:
        return StopRule("top")
    if not isinstance(raw, Mapping):
        raise ValueError("stop_when: must be a mapping such as {top: 1}")
    keys = set(raw)
    if keys == {"top"}:
        k = raw["top"]
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"stop_when.top: must be a whole number of places, 1 or more (got {k!r})")
        if n_students is not None and k >= n_students:
            raise ValueError(f"stop_when.top: {k} places of {n_students} students asks nothing; use fewer")
        return StopRule("top", k=k)
    if keys in ({"separated"}, {"separated", "delta"}):
        if raw["separated"] != "all":
            raise ValueError(f"stop_when.separated: the only value is 'all' (got {raw['separated']!r})")
        delta = raw.get("delta", DEFAULT_DELTA)
        if isinstance(delta, bool) or not isinstance(delta, int | float) or not 0 <= delta < 1:
            raise ValueError(f"stop_when.delta: must be a number in [0, 1) (got {delta!r})")
        return StopRule("separated", delta=float(delta))
    if keys == {"width"}:
        w = raw["width"]
        if isinstance(w, bool) or not isinstance(w, int | float) or not 0 < w <= 1:
            raise ValueError(f"stop_when.width: must be a number in (0, 1] (got {w!r})")
        return StopRule("width", width=float(w))
    raise ValueError(f"stop_when: expected one of top, separated (with delta), width (got {', '.join(sorted(keys))})")


def look_alphas(alpha: float, fractions: np.ndarray, spending: Spending = "bonferroni") -> np.ndarray:
    """The error each look may spend, summing to ``alpha``; ``fractions``: the share of the
    datapoints each look has seen (increasing, the last 1)."""
    t = np.asarray(fractions, float)
    if t.size == 0 or np.any(np.diff(t) <= 0) or t[0] <= 0 or not math.isclose(t[-1], 1.0):
        raise ValueError("look fractions must increase from above 0 to 1")
    if spending == "bonferroni":
        return np.full(t.size, alpha / t.size)
    if spending == "obrien_fleming":
        spent = 2.0 - 2.0 * norm.cdf(norm.ppf(1.0 - alpha / 2.0) / np.sqrt(t))
        return np.diff(np.concatenate([[0.0], spent]))
    raise ValueError(f"spending: expected bonferroni or obrien_fleming (got {spending!r})")


@attrs.frozen
class Intervals:
    """One look's estimates: per student a score (relative to the students' mean) with its
    interval, and for every ordered pair the difference ``score[a] - score[b]`` with its."""

    score: np.ndarray  #: (students,)
    score_low: np.ndarray
    score_high: np.ndarray
    diff_low: np.ndarray  #: (students, students): low end of the interval of a - b
    diff_high: np.ndarray

    @property
    def above(self) -> np.ndarray:
        """``above[a, b]``: a is shown above b."""
        out: np.ndarray = self.diff_low > 0
        return out

    def order(self) -> np.ndarray:
        """Students best first (NaN scores last)."""
        return np.argsort(-np.nan_to_num(self.score, nan=-np.inf), kind="stable")


def _top_sets(rule: StopRule, iv: Intervals) -> tuple[np.ndarray, np.ndarray]:
    """(surely among the first k, surely not): above at least n-k others, or below at least k."""
    above = iv.above
    n = above.shape[0]
    inside = above.sum(1) >= n - rule.k
    outside = above.sum(0) >= rule.k
    return inside, outside


def _adjacent_open(rule: StopRule, iv: Intervals) -> np.ndarray:
    """Per adjacent pair of the current order: neither separated nor shown within delta."""
    order = iv.order()
    a, b = order[:-1], order[1:]
    lo, hi = iv.diff_low[a, b], iv.diff_high[a, b]
    separated = (lo > 0) | (hi < 0)
    within = (lo >= -rule.delta) & (hi <= rule.delta)
    out: np.ndarray = ~(separated | within)
    return out


def answered(rule: StopRule, iv: Intervals) -> bool:
    """Whether this look answers the rule's question."""
    if rule.kind == "top":
        inside, outside = _top_sets(rule, iv)
        return int(inside.sum()) == rule.k and int(outside.sum()) == inside.size - rule.k
    if rule.kind == "separated":
        return not _adjacent_open(rule, iv).any()
    return bool(np.all(iv.score_high - iv.score_low <= rule.width))


def open_students(rule: StopRule, iv: Intervals) -> np.ndarray:
    """Boolean per student: whose answers can still change the answer (to be bought next)."""
    n = iv.score.size
    if rule.kind == "top":
        inside, outside = _top_sets(rule, iv)
        out: np.ndarray = ~(inside | outside)
        return out
    if rule.kind == "separated":
        pending = _adjacent_open(rule, iv)
        order = iv.order()
        mask = np.zeros(n, bool)
        mask[order[:-1][pending]] = True
        mask[order[1:][pending]] = True
        return mask
    wide: np.ndarray = iv.score_high - iv.score_low > rule.width
    return wide
