"""The time of scoring that makes no call but runs something: a code task's programs.

A task with ``checker: python_tests`` (or a rubric factor routed to ``python_tests``) runs
each answer's code against its datapoint's tests in the sandbox: one program per response,
``workers`` of them at once (the factor's ``params: {workers: N}``; by default the CPU
count, as the evaluator runs them). Such a phase costs no call, yet a 48-row task of two
students took 5 to 7 s of sandbox time that an estimate counting calls alone left out.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from coeval.config.model import Config, TaskConfig
from coeval.evaluators.routing import routed_factors
from coeval.phase_ids import RESPONSE_COLLECTION

__all__ = ["CODE_CHECKER", "PROGRAM_S", "ProgramWork", "program_work"]

CODE_CHECKER = "python_tests"
#: Seconds one program takes in the sandbox on the reference machine of
#: :mod:`coeval.planning.cost.machine_speed` (a Python interpreter started with the harness,
#: the answer's code and the tests, then torn down): a HumanEval-sized program passes or
#: fails in about this; a program that loops runs to its ``timeout_s``.
PROGRAM_S = 0.10


class ProgramWork:
    """Programs one phase runs in the sandbox, per task, and how many run at once."""

    def __init__(self, programs: Mapping[str, int], workers: Mapping[str, int]) -> None:
        self.programs = dict(programs)
        self.workers = dict(workers)

    @property
    def total(self) -> int:
        return sum(self.programs.values())

    def seconds(self, per_program_s: float) -> float:
        """Wall seconds of every task's programs, ``workers`` at a time."""
        return sum(n * per_program_s / max(1, self.workers.get(task, 1)) for task, n in self.programs.items())


def _workers(task: TaskConfig) -> int | None:
    """Programs the task's code checker runs at once, or None when it has no code checker."""
    rubric = task.static_rubric or {}
    factors = routed_factors(rubric, CODE_CHECKER)
    if task.checker != CODE_CHECKER and not factors:
        return None
    workers = os.cpu_count() or 1
    for factor in factors:
        params = rubric[factor].get("params") if isinstance(rubric[factor], Mapping) else None
        value = params.get("workers") if isinstance(params, Mapping) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            workers = value
    return workers


def program_work(config: Config, cells: Mapping[tuple[str, str, str], int]) -> ProgramWork:
    """The programs the evaluation phase will run: one per response of a code task that
    the call plan ``cells`` (task, phase, model) -> calls still owes."""
    programs: dict[str, int] = {}
    workers: dict[str, int] = {}
    for task in config.tasks:
        n = _workers(task)
        if n is None:
            continue
        answers = sum(calls for (t, phase, _), calls in cells.items() if t == task.name and phase == RESPONSE_COLLECTION)
        if answers:
            programs[task.name], workers[task.name] = answers, n
    return ProgramWork(programs, workers)
