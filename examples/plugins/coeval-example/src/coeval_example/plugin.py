"""The hooks CoEval calls (entry point ``coeval_example.plugin`` in group ``coeval``).

Each hook only registers; heavy imports would go inside the registered objects.
"""

from __future__ import annotations

from coeval import (
    RegisterBatchRunner,
    RegisterEvaluator,
    RegisterInterface,
    RegisterMetric,
    RegisterPhase,
    hookimpl,
)

from coeval_example.batch import EchoBatchRunner
from coeval_example.interface import EchoInterface
from coeval_example.metric import LengthRatio
from coeval_example.pairwise import PairwiseJudge
from coeval_example.phase import AnswerLengthsPhase


@hookimpl
def register_metrics(register: RegisterMetric) -> None:
    register("length_ratio", LengthRatio)


@hookimpl
def register_interfaces(register: RegisterInterface) -> None:
    register("echo", EchoInterface, requires_model=False)


@hookimpl
def register_batch_runners(register: RegisterBatchRunner) -> None:
    register("echo", EchoBatchRunner)   # a config may now batch echo: experiment.batch.echo


@hookimpl
def register_evaluators(register: RegisterEvaluator) -> None:
    register("pairwise", PairwiseJudge())


@hookimpl
def register_phases(register: RegisterPhase) -> None:
    register(AnswerLengthsPhase())
