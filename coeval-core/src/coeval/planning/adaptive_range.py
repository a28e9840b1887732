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

When every student and judge is a ``mock`` model, the range comes instead from rehearsing
the design (:data:`REHEARSALS` runs over grids drawn as those mock judges grade, by the
evaluation controller's ``rehearse``): from the fewest calls a rehearsed run bought to the
most, with how often each judge was stopped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from coeval.config.model import AdaptiveConfig, Config, ModelConfig
from coeval.contract.adaptive import CONTROLLER, Rehearsal, RehearsalOutcome, RehearsedJudge
from coeval.interfaces.mock import played_quality
from coeval.phase_ids import EVALUATION
from coeval.phases.evaluation_rounds import MIN_CALIBRATION
from coeval.plugins.manager import registries as installed

__all__ = ["REHEARSALS", "AdaptiveRange", "adaptive_range", "expected_screened", "rehearsal_of"]

#: rehearsed runs of a design on mock judges
REHEARSALS = 20
#: datapoints a rehearsal draws at most (the share of calls bought is what it measures)
REHEARSED_DATAPOINTS = 160
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


def rehearsal_of(config: Config, settings: Mapping[str, Any], datapoints: int) -> Rehearsal | None:
    """The design to rehearse when every student and judge is a mock model (None otherwise)."""
    students, judges = config.students, config.judges
    if not students or not judges or any(m.interface != "mock" for m in (*students, *judges)):
        return None
    family = {m.name: m.family or m.name for m in students}
    played = []
    for j in judges:
        quality, faults = played_quality(j.parameters, j.name)
        bias = {s.name: faults.shift_for((s.name, s.family)) for s in students} if faults is not None else {}
        played.append(RehearsedJudge(j.name, j.family or j.name, quality, faults.noise if faults else 0.0, bias,
                                     faults.flat if faults else None))
    teachers = max(len(config.teachers), 1)
    n = min(datapoints, REHEARSED_DATAPOINTS)
    per_teacher = tuple(n // teachers + (1 if k < n % teachers else 0) for k in range(teachers))
    return Rehearsal({s.name: played_quality(s.parameters, s.name)[0] for s in students}, family, tuple(played),
                     tuple(p for p in per_teacher if p > 0), dict(settings), int(config.experiment.seed), REHEARSALS)


def _rehearsed(config: Config, settings: Mapping[str, Any], datapoints: int) -> RehearsalOutcome | None:
    rehearsal = rehearsal_of(config, settings, datapoints)
    regs = installed()
    if rehearsal is None or CONTROLLER not in regs.evaluation_controllers:
        return None
    rehearse = getattr(regs.evaluation_controllers.get(CONTROLLER)(), "rehearse", None)
    return rehearse(rehearsal) if callable(rehearse) else None


def _from_rehearsal(outcome: RehearsalOutcome, calls: Mapping[str, int], usd: Mapping[str, float | None]
                    ) -> AdaptiveRange:
    """The range of the rehearsed runs, scaled per judge to the plan's calls."""
    def spend(run: Mapping[str, int], per: Mapping[str, float | None]) -> float | None:
        total = 0.0
        for judge, full in outcome.full.items():
            value = per.get(judge)
            if value is None:
                return None
            total += float(value) * run.get(judge, 0) / full if full else 0.0
        return total

    runs = sorted(outcome.bought, key=lambda run: spend(run, calls) or 0.0)
    low, high = runs[0], runs[-1]
    stopped = [f"{j} {share:.0%}" for j, share in outcome.stopped.items() if share > 0]
    basis = (f"{len(runs)} rehearsals of the design on grids drawn as these mock judges grade; judges stopped "
             f"after the calibration slice (share of rehearsals): {', '.join(stopped) or 'none'}")
    full_usd = None if any(v is None for v in usd.values()) else sum(float(v or 0) for v in usd.values())
    return AdaptiveRange(sum(calls.values()), round(spend(low, calls) or 0), round(spend(high, calls) or 0),
                         full_usd, spend(low, usd), spend(high, usd),
                         tuple(j for j, share in outcome.stopped.items() if share >= 0.5), basis)


def adaptive_range(config: Config, cells: Iterable[Any], settings: Mapping[str, Any]) -> AdaptiveRange:
    """The range from the plan's phase-5 ``cells`` (``task, phase, model, calls, cost_usd``):
    rehearsed when the models are mock ones, else the heuristic range of the module's docstring."""
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
    outcome = _rehearsed(config, settings, datapoints)
    if outcome is not None:
        return _from_rehearsal(outcome, calls, usd)
    share = min(1.0, max(float(settings.get("calibration", AdaptiveConfig().calibration)), MIN_CALIBRATION / datapoints))
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
