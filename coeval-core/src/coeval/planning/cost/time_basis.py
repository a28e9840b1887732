"""What a time estimate rests on, and how far the run may land from it.

Each call's latency comes from somewhere: the calls of a past run or of this run
(``history``), live sample calls (``samples``), the model's own setting (the mock's
``latency_ms``: ``setting``), a local engine's measured token speed (``engine``), or a
guess from the interface's typical speed (``heuristic``: no latency known); a code task's
programs take the sandbox's time per program (``programs``). A source that measured this
server or this machine leaves a narrow range; a guess leaves a wide one. The estimate says
which sources carry its time and gives the range their shares of the time imply, so a
weak basis reads as "2-20 min", not as one confident number.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping

import attrs

__all__ = ["SPREAD", "TimeBasis", "time_basis"]

#: source -> (lowest, highest) run time per estimated second that the source leaves open
SPREAD: Mapping[str, tuple[float, float]] = {
    "history": (0.8, 1.25),
    "pace": (0.8, 1.25),
    "setting": (0.8, 1.25),
    "engine": (0.6, 1.7),
    "programs": (0.5, 2.0),
    "heuristic": (0.2, 3.0),
}
#: a range wider than this (highest / lowest) is shown as a range, not as one number
WEAK_RATIO = 1.8
#: sources that carry less of the time than this are not named in the basis
_NAMED_SHARE = 0.1


def _sample_spread(timed_calls: int) -> tuple[float, float]:
    """Sampled latency: the mean of few calls, and the load a run adds that a sample does
    not see (20%), narrowing as calls add up."""
    spread = 0.2 + 1.0 / math.sqrt(max(1, timed_calls))
    return 1.0 / (1.0 + spread), 1.0 + spread


@attrs.frozen
class TimeBasis:
    """``text`` ("from 40 sampled calls"), and the run's time as a share of the estimate:
    between ``low`` and ``high``."""

    text: str
    low: float = 1.0
    high: float = 1.0

    @property
    def weak(self) -> bool:
        return self.high / self.low > WEAK_RATIO if self.low > 0 else True


def _describe(source: str, sampled_calls: int, continuing: bool) -> str:
    return {
        "samples": f"from {sampled_calls} sampled call{'s' if sampled_calls != 1 else ''}",
        "history": "from this run's history" if continuing else "from a past run of this config",
        "pace": "at a past run's pace",
        "setting": "from the models' latency settings",
        "engine": "from the local engine's measured speed",
        "programs": "the sandbox's time per program",
        "heuristic": "heuristic: no latency known",
    }.get(source, source)


def time_basis(seconds_by_source: Iterable[tuple[str, float]], *, sampled_calls: int = 0,
               continuing: bool = False) -> TimeBasis:
    """The basis of an estimate whose time splits over sources as ``seconds_by_source``
    ((source, seconds) pairs; ``sampled_calls``: the timed sample calls behind ``samples``)."""
    shares: dict[str, float] = defaultdict(float)
    for source, seconds in seconds_by_source:
        if seconds > 0:
            shares[source] += seconds
    total = sum(shares.values())
    if total <= 0:
        return TimeBasis("no time to estimate")
    low = high = 0.0
    for source, seconds in shares.items():
        lo, hi = _sample_spread(sampled_calls) if source == "samples" else SPREAD.get(source, SPREAD["heuristic"])
        low += lo * seconds / total
        high += hi * seconds / total
    named = sorted(((s, v / total) for s, v in shares.items() if v / total >= _NAMED_SHARE), key=lambda sv: -sv[1])
    parts = [_describe(s, sampled_calls, continuing) + (f" ({share:.0%} of the time)" if len(named) > 1 else "")
             for s, share in named]
    return TimeBasis("; ".join(parts), low, high)
