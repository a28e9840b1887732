"""The contract of adaptive evaluation: the core runs phase 5 in rounds, a plugin decides.

The core chooses each round's datapoints (a seeded random order spread over tasks and
teachers), buys their judgments, and keeps the record (``meta.json``'s ``adaptive``). After
each round it shows the judgments so far to the *evaluation controller* a plugin registered
(``register_evaluation_controllers``; coeval-analysis registers ``adaptive``), which says
which judges to stop (after the calibration slice), which students are still open, and
whether the question is answered. The controller reads the run folder; it buys nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import attrs

__all__ = [
    "CONTROLLER",
    "EvaluationController",
    "EvaluationControllerFactory",
    "JudgeDecision",
    "RegisterEvaluationController",
    "Rehearsal",
    "RehearsalOutcome",
    "RehearsedJudge",
    "RoundDecision",
    "RoundLook",
]

#: the controller name the core asks for
CONTROLLER = "adaptive"


@attrs.frozen
class RoundLook:
    """What the controller is shown after a round."""

    run_folder: Path
    look: int  #: 0: after the calibration slice
    #: share of the datapoints seen at each look of the design (increasing, the last 1)
    fractions: tuple[float, ...]
    calibration: frozenset[str]  #: datapoint ids of the calibration slice
    seen: frozenset[str]  #: datapoint ids of this look and the ones before
    judges: tuple[str, ...]  #: every LLM judge of the config
    students: tuple[str, ...]  #: every student of the config
    settings: Mapping[str, Any]  #: ``experiment.adaptive`` (screen, calibration, stop_when, looks, alpha)
    seed: int


@attrs.frozen
class JudgeDecision:
    """One judge's screening: its evidence and what was decided on it."""

    judge: str
    agreement: float  #: with the other judges' consensus, within datapoints
    bound: float  #: the agreement's upper confidence bound
    stopped: bool
    reason: str


@attrs.frozen
class RoundDecision:
    """What the controller concluded at one look."""

    answered: bool  #: the question of ``stop_when`` is answered: no more rounds
    open_students: tuple[str, ...]  #: whose answers the next round still judges
    alpha: float  #: the level of this look's intervals (its share of the design's alpha)
    question: str  #: ``stop_when`` in words
    judges: tuple[JudgeDecision, ...] = ()  #: the screening (taken at the calibration look)
    #: per student: (score, low, high), relative to the students' mean, at level ``1 - alpha``
    scores: Mapping[str, tuple[float, float, float]] = attrs.field(factory=dict)


@attrs.frozen
class RehearsedJudge:
    """A judge as a rehearsal plays it: it follows an answer's quality with probability
    ``reliability`` (else it guesses), shifted by ``bias[student]`` and blurred by ``noise``,
    or gives every answer the one level ``flat``."""

    name: str
    family: str
    reliability: float
    noise: float = 0.0
    bias: Mapping[str, float] = attrs.field(factory=dict)  #: student -> shift, resolved
    flat: str | None = None  #: high | medium | low


@attrs.frozen
class Rehearsal:
    """A design to rehearse before paying for it (``coeval plan --adaptive``): the students'
    qualities, the judges, and the datapoints each teacher writes."""

    students: Mapping[str, float]  #: name -> quality (share of solid sentences)
    families: Mapping[str, str]  #: student -> family
    judges: tuple[RehearsedJudge, ...]
    datapoints: tuple[int, ...]  #: per teacher
    settings: Mapping[str, Any]
    seed: int
    runs: int = 20


@attrs.frozen
class RehearsalOutcome:
    """What the rehearsed runs bought, per run and judge, against the full grid's per judge."""

    full: Mapping[str, int]  #: judge -> judgments of the full grid
    bought: tuple[Mapping[str, int], ...]  #: per run, judge -> judgments bought
    stopped: Mapping[str, float]  #: judge -> share of the runs that stopped it


class EvaluationController(Protocol):
    """Decides, from the judgments of the datapoints seen, what the next round buys; it may
    also rehearse a design (``rehearse(rehearsal) -> RehearsalOutcome``) for the plan."""

    def look(self, look: RoundLook, /) -> RoundDecision: ...


#: ``factory()`` -> an :class:`EvaluationController` (called when an adaptive run reaches phase 5)
EvaluationControllerFactory = Any


class RegisterEvaluationController(Protocol):
    """``register(name, factory)`` of ``register_evaluation_controllers``."""

    def __call__(self, name: str, factory: EvaluationControllerFactory, /) -> None: ...
