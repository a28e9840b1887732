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


class EvaluationController(Protocol):
    """Decides, from the judgments of the datapoints seen, what the next round buys."""

    def look(self, look: RoundLook, /) -> RoundDecision: ...


#: ``factory()`` -> an :class:`EvaluationController` (called when an adaptive run reaches phase 5)
EvaluationControllerFactory = Any


class RegisterEvaluationController(Protocol):
    """``register(name, factory)`` of ``register_evaluation_controllers``."""

    def __call__(self, name: str, factory: EvaluationControllerFactory, /) -> None: ...
