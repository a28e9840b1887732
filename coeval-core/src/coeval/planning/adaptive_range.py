"""The range of phase-5 calls and dollars an adaptive design may spend (``coeval plan``).

An adaptive run cannot know in advance at which look its question is answered, so the
plan gives a range, with its basis:

* **fewest**: the question answered at the first look, after the calibration slice, which
  every judge grades;
* **most**: never answered, every student open to the last datapoint, bought from the judges
  screening is expected to keep. Only ``mock`` judges say what they are: one configured to
  say nothing (``parameters.judge.flat``), to guess (``quality`` at most
  :data:`GUESSING_QUALITY`) or blurred (``judge.noise`` at least :data:`BLURRED_NOISE`) is
  expected to be stopped; of any other judge nothing is known, so it is counted kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from coeval.config.model import Config, ModelConfig
from coeval.phases.evaluation_rounds import MIN_CALIBRATION
from coeval.phases.ids import EVALUATION

__all__ = ["AdaptiveRange", "adaptive_range", "expected_screened"]

GUESSING_QUALITY = 0.2
BLURRED_NOISE = 0.5
#: judges screening needs (with fewer none is stopped)
SCREEN_MIN_JUDGES = 3


@attrs.frozen
class AdaptiveRange:
    full_calls: int
    low_calls: int
    high_calls: int
    full_usd: float | None
    low_usd: float | None
    high_usd: float | None
    screened: tuple[str, ...]  #: judges expected to be stopped after the calibration slice
    basis: str

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)

    def lines(self) -> list[str]:
        def usd(v: float | None) -> str:
            return "?" if v is None else f"${v:,.2f}"

        saved = 1 - self.high_calls / self.full_calls if self.full_calls else 0.0
        return [
            f"adaptive phase 5: {self.low_calls:,} to {self.high_calls:,} calls of {self.full_calls:,} for the full grid "
            f"({usd(self.low_usd)} to {usd(self.high_usd)} of {usd(self.full_usd)}; at least {saved:.0%} saved)",
            f"  basis: {self.basis}",
        ]


def expected_screened(judges: Iterable[ModelConfig]) -> list[str]:
    """The mock judges whose parameters say they tell answers apart too little."""
    out = []
    for m in judges:
        if m.interface != "mock":
            continue
        params = m.parameters
        given = params.get("judge")
        faults: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
        quality = params.get("quality")
        noise = faults.get("noise", 0)
        if faults.get("flat") is not None or (isinstance(quality, int | float) and quality <= GUESSING_QUALITY) \
                or (isinstance(noise, int | float) and noise >= BLURRED_NOISE):
            out.append(m.name)
    return out


def adaptive_range(config: Config, cells: Iterable[Any], settings: Mapping[str, Any]) -> AdaptiveRange:
    """The range from the plan's phase-5 ``cells`` (``task, phase, model, calls, cost_usd``)."""
    judges = config.judges
    calls: dict[str, int] = {}
    usd: dict[str, float | None] = {}
    for c in cells:
        if c.phase != EVALUATION:
            continue
        calls[c.model] = calls.get(c.model, 0) + int(c.calls)
        cost = usd.get(c.model, 0.0)
        usd[c.model] = None if cost is None or c.cost_usd is None else cost + float(c.cost_usd)
    students = max(len(config.students), 1)
    per_judge = max(calls.values(), default=0)
    datapoints = max(per_judge // students, 1)
    share = min(1.0, max(float(settings.get("calibration", 0.2)), MIN_CALIBRATION / datapoints))
    screened = expected_screened(judges) if settings.get("screen", True) and len(judges) >= SCREEN_MIN_JUDGES else []
    if len(screened) >= len(judges):  # the judge that agrees most is never stopped
        screened = screened[1:]
    full = sum(calls.values())
    kept = sum(n for j, n in calls.items() if j not in screened)
    low = round(share * full)
    high = round(share * full + (1 - share) * kept)

    def dollars(fraction_all: float, fraction_kept: float) -> float | None:
        if any(v is None for v in usd.values()):
            return None
        return sum(float(v or 0) * (fraction_all + (fraction_kept if j not in screened else 0.0))
                   for j, v in usd.items())

    known = f"judges expected to be screened out: {', '.join(screened)} (mock judges configured flat, guessing " \
            "or blurred)" if screened else "nothing is known of the judges, so none is counted screened out"
    basis = (f"fewest: answered at the first look, after the calibration slice ({share:.0%} of the datapoints, "
             f"every judge); most: never answered, every student judged to the last datapoint; {known}")
    return AdaptiveRange(full, low, high, dollars(1.0, 0.0), dollars(share, 0.0), dollars(share, 1 - share),
                         tuple(screened), basis)
