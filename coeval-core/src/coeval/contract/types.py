"""The typed contract of the registration hooks: what each ``register`` callable accepts.

Every name here is re-exported from :mod:`coeval.plugins.manager`, so a plugin can annotate its
hooks with, for example, ``register: RegisterInterface`` and a type checker tells it when
a factory has the wrong shape. They are structural :class:`typing.Protocol` types: a plugin
never has to inherit from them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from coeval.config.data_readers import TaskDataFacts, TaskDataReader, TaskDataReaderFactory
from coeval.config.interface_facts import InterfaceFacts, TokenSeconds
from coeval.contract.evaluation import (
    EvaluationCall,
    EvaluationFailed,
    EvaluationRequest,
    EvaluationResult,
    Evaluator,
    Scorer,
    Scoring,
    SubmitCalls,
)

if TYPE_CHECKING:
    from coeval.config.credential_record import Credentials
    from coeval.config.model import ModelConfig
    from coeval.interfaces.base import Interface
    from coeval.interfaces.batch import BatchRunner

__all__ = [
    "BatchRunnerFactory",
    "BenchmarkAdapter",
    "EvaluationCall",
    "EvaluationFailed",
    "EvaluationRequest",
    "EvaluationResult",
    "Evaluator",
    "InterfaceFactory",
    "InterfaceFacts",
    "ItemCheck",
    "Metric",
    "MetricFactory",
    "Phase",
    "RegisterBatchRunner",
    "RegisterBenchmark",
    "RegisterEvaluator",
    "RegisterInterface",
    "RegisterItemCheck",
    "RegisterMetric",
    "RegisterPhase",
    "RegisterReport",
    "RegisterRunEnd",
    "RegisterTaskDataReader",
    "ReportWriter",
    "RunEndAction",
    "Scorer",
    "Scoring",
    "SubmitCalls",
    "TaskDataFacts",
    "TaskDataReader",
    "TaskDataReaderFactory",
    "TokenSeconds",
]

@runtime_checkable
class Phase(Protocol):
    """What the phase registry holds: a phase's id, what runs before it and the modes it
    accepts. :class:`coeval.phases.base.Phase` is this protocol with the run's types
    (``survey(view: RunView) -> Survey``, ``run(ctx: PhaseContext)``), which a phase
    implements; the contract names only its shape, so it imports no phase code."""

    #: Phase id, the key of ``experiment.phases`` (e.g. ``"evaluation"``).
    name: str
    #: Phases that must run before this one (third-party phases run after these).
    after: tuple[str, ...]
    #: Modes this phase accepts.
    modes: tuple[str, ...]

    def survey(self, view: Any, /) -> Any:
        """Expected vs present items under the current config (no calls, no writes)."""
        ...

    async def run(self, ctx: Any, /) -> None:
        """Make the calls ``ctx.mode`` asks for."""
        ...


#: ``factory(model, credentials)`` -> an :class:`coeval.interfaces.Interface` (usually the class itself).
InterfaceFactory = Callable[["ModelConfig", "Credentials | None"], "Interface"]
#: ``factory(model, credentials)`` -> a :class:`coeval.scheduler.batching.BatchRunner`.
BatchRunnerFactory = Callable[["ModelConfig", "Credentials | None"], "BatchRunner"]


@runtime_checkable
class Metric(Protocol):
    """A reference-based score: one value in [0, 1] per (candidate, reference) pair."""

    def score(self, candidates: list[str], references: list[str]) -> list[float]: ...


#: ``factory()`` -> a :class:`Metric` (called once per run, so a model-based metric loads once).
MetricFactory = Callable[[], Metric]


class ReportWriter(Protocol):
    """Writes report files for an analysis into ``out_dir`` and returns their paths."""

    def __call__(self, analysis: Any, out_dir: Path, /) -> Sequence[Path]: ...


@runtime_checkable
class BenchmarkAdapter(Protocol):
    """What the core needs of a ``coeval ingest`` adapter; the full base class is
    :class:`coeval_benchmarks.base.BenchmarkAdapter` (which also names the dataset in
    class attributes ``name``, ``title``, ``hub_id``...)."""

    def item(self, row: Mapping[str, Any], index: int, split: str) -> Any: ...


#: ``check(candidate, context)`` -> None to accept, or the reason to reject (:mod:`coeval.quality`).
ItemCheck = Callable[..., "str | None"]
#: ``action(run_folder)``, called once when ``coeval run`` ends after writing records (what it
#: returns is ignored).
RunEndAction = Callable[[Path], object]


class RegisterInterface(Protocol):
    """``register(name, factory, *, requires_model=True, virtual_teacher=False,
    exempt_item_checks=(), key_env=(), key_fields=None, sampling_keys=None,
    cluster_engines=(), tokens_per_s=None, one_at_a_time=False, seconds_per_token=None,
    parameter_problem=None)`` of ``register_interfaces``: the options are the
    :class:`InterfaceFacts` of the same names. Whether the interface batches is not an
    option: it does when a batch runner is registered under its name."""

    def __call__(
        self,
        name: str,
        factory: InterfaceFactory,
        /,
        *,
        requires_model: bool = True,
        virtual_teacher: bool = False,
        exempt_item_checks: Sequence[str] = (),
        key_env: Sequence[str] = (),
        key_fields: Mapping[str, Sequence[str]] | None = None,
        sampling_keys: Iterable[str] | None = None,
        cluster_engines: Sequence[str] = (),
        tokens_per_s: float | None = None,
        one_at_a_time: bool = False,
        seconds_per_token: Callable[[ModelConfig], float | TokenSeconds | None] | None = None,
        parameter_problem: Callable[[Mapping[str, Any], str], str | None] | None = None,
    ) -> None: ...


class RegisterBatchRunner(Protocol):
    """``register(interface_name, factory)`` of ``register_batch_runners``: the interface
    of that name may then be batched from a config's ``batch:`` block."""

    def __call__(self, name: str, factory: BatchRunnerFactory, /) -> None: ...


class RegisterPhase(Protocol):
    """``register(phase)`` of ``register_phases``: the phase declares its own id."""

    def __call__(self, phase: Phase, /) -> None: ...


class RegisterEvaluator(Protocol):
    """``register(name, evaluator)`` of ``register_evaluators``."""

    def __call__(self, name: str, evaluator: Evaluator, /) -> None: ...


class RegisterMetric(Protocol):
    """``register(name, factory)`` of ``register_metrics``."""

    def __call__(self, name: str, factory: MetricFactory, /) -> None: ...


class RegisterBenchmark(Protocol):
    """``register(name, adapter)`` of ``register_benchmarks``."""

    def __call__(self, name: str, adapter: BenchmarkAdapter, /) -> None: ...


class RegisterReport(Protocol):
    """``register(name, writer, *, default=True)`` of ``register_reports``; a report
    registered with ``default=False`` is written only when asked for by name."""

    def __call__(self, name: str, writer: ReportWriter, /, *, default: bool = True) -> None: ...


class RegisterItemCheck(Protocol):
    """``register(rule_id, check, *, kinds=("datapoint",), options=None)`` of
    ``register_item_checks``; ``options`` are the rule's defaults, which a config may override."""

    def __call__(
        self,
        rule_id: str,
        check: ItemCheck,
        /,
        *,
        kinds: Sequence[str] = ("datapoint",),
        options: Mapping[str, Any] | None = None,
    ) -> None: ...


class RegisterTaskDataReader(Protocol):
    """``register(source, factory)`` of ``register_task_data_readers``: ``source`` is the
    ``tasks[].data`` key whose data the reader reads (``file`` or ``dataset``)."""

    def __call__(self, source: str, factory: TaskDataReaderFactory, /) -> None: ...


class RegisterRunEnd(Protocol):
    """``register(name, action)`` of ``register_run_end``."""

    def __call__(self, name: str, action: RunEndAction, /) -> None: ...
