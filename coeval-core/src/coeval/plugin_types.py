"""The typed contract of the registration hooks: what each ``register`` callable accepts.

Every name here is re-exported from :mod:`coeval.plugins`, so a plugin can annotate its
hooks with, for example, ``register: RegisterInterface`` and a type checker tells it when
a factory has the wrong shape. They are structural :class:`typing.Protocol` types: a plugin
never has to inherit from them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from coeval.evaluators.base import (
    EvaluationCall,
    EvaluationFailed,
    EvaluationRequest,
    EvaluationResult,
    Evaluator,
    ModelFreeEvaluator,
    Scorer,
    Scoring,
    SubmitCalls,
)

if TYPE_CHECKING:
    from coeval.batching.base import BatchRunner
    from coeval.config.model import ModelConfig
    from coeval.credentials import Credentials
    from coeval.interfaces.base import Interface
    from coeval.phases.base import Phase

__all__ = [
    "BatchRunnerFactory",
    "BenchmarkAdapter",
    "EvaluationCall",
    "EvaluationFailed",
    "EvaluationRequest",
    "EvaluationResult",
    "Evaluator",
    "InterfaceFactory",
    "Metric",
    "MetricFactory",
    "ModelFreeEvaluator",
    "RegisterBatchRunner",
    "RegisterBenchmark",
    "RegisterEvaluator",
    "RegisterInterface",
    "RegisterMetric",
    "RegisterPhase",
    "RegisterReport",
    "ReportWriter",
    "Scorer",
    "Scoring",
    "SubmitCalls",
]

#: ``factory(model, credentials)`` -> an :class:`coeval.interfaces.Interface` (usually the class itself).
InterfaceFactory = Callable[["ModelConfig", "Credentials | None"], "Interface"]
#: ``factory(model, credentials)`` -> a :class:`coeval.batching.BatchRunner`.
BatchRunnerFactory = Callable[["ModelConfig", "Credentials | None"], "BatchRunner"]


@runtime_checkable
class Metric(Protocol):
    """A reference-based score: one value in [0, 1] per (candidate, reference) pair."""

    def score(self, candidates: list[str], references: list[str]) -> list[float]: ...


#: ``factory()`` -> a :class:`Metric` (called once per run, so a model-based metric loads once).
MetricFactory = Callable[[], Metric]


class ReportWriter(Protocol):
    """Writes report files for an analysis into ``out_dir`` and returns their paths."""

    def __call__(self, analysis: Any, out_dir: Path) -> Sequence[Path]: ...


@runtime_checkable
class BenchmarkAdapter(Protocol):
    """What the core needs of a ``coeval ingest`` adapter; the full base class is
    :class:`coeval_benchmarks.base.BenchmarkAdapter` (which also names the dataset in
    class attributes ``name``, ``title``, ``hub_id``...)."""

    def item(self, row: Mapping[str, Any], index: int, split: str) -> Any: ...


class RegisterInterface(Protocol):
    """``register(name, factory, *, requires_model=True, **options)`` of ``register_interfaces``."""

    def __call__(self, name: str, factory: InterfaceFactory, /, **options: Any) -> None: ...


class RegisterBatchRunner(Protocol):
    """``register(interface_name, factory)`` of ``register_batch_runners``."""

    def __call__(self, name: str, factory: BatchRunnerFactory, /, **options: Any) -> None: ...


class RegisterPhase(Protocol):
    """``register(phase)`` of ``register_phases``."""

    def __call__(self, phase: Phase, /, **options: Any) -> None: ...


class RegisterEvaluator(Protocol):
    """``register(name, evaluator)`` of ``register_evaluators``."""

    def __call__(self, name: str, evaluator: Evaluator, /, **options: Any) -> None: ...


class RegisterMetric(Protocol):
    """``register(name, factory)`` of ``register_metrics``."""

    def __call__(self, name: str, factory: MetricFactory, /, **options: Any) -> None: ...


class RegisterBenchmark(Protocol):
    """``register(name, adapter)`` of ``register_benchmarks``."""

    def __call__(self, name: str, adapter: BenchmarkAdapter, /, **options: Any) -> None: ...


class RegisterReport(Protocol):
    """``register(name, writer)`` of ``register_reports``."""

    def __call__(self, name: str, writer: ReportWriter, /, **options: Any) -> None: ...
