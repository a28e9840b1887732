"""The typed registries the registration hooks fill: name -> thing, each remembered with the
plugin that registered it. They sit in the contract, below everything that registers or asks
(the plugin manager fills them: :mod:`coeval.plugins.manager`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

import attrs

from coeval.contract.adaptive import EvaluationControllerFactory
from coeval.contract.errors import DuplicateRegistrationError
from coeval.contract.evaluation import Evaluator
from coeval.contract.types import (
    BatchRunnerFactory,
    BenchmarkAdapter,
    InterfaceFactory,
    InterfaceFacts,
    ItemCheck,
    MetricFactory,
    Phase,
    ReportWriter,
    TaskDataReaderFactory,
)

__all__ = ["KIND_OF_HOOK", "Entry", "Registries", "Registry"]

T = TypeVar("T")

#: registration hook -> the kind of thing it registers, as errors name it ("benchmark" is
#: the kind of ``register_benchmarks``' adapters, not the interface of that name)
KIND_OF_HOOK: dict[str, str] = {
    "register_interfaces": "interface",
    "register_batch_runners": "batch runner",
    "register_phases": "phase",
    "register_evaluators": "evaluator",
    "register_metrics": "metric",
    "register_benchmarks": "benchmark",
    "register_reports": "report",
    "register_item_checks": "item check",
    "register_task_data_readers": "task-data reader",
    "register_run_end": "run-end action",
    "register_evaluation_controllers": "evaluation controller",
}


@attrs.frozen
class Entry(Generic[T]):
    """One registered thing, remembered with the plugin that registered it."""

    name: str
    value: T
    plugin: str
    options: dict[str, Any] = attrs.field(factory=dict)


class Registry(Generic[T]):
    """Name -> thing, filled by one registration hook."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Entry[T]] = {}

    def add(self, name: str, value: T, plugin: str, **options: Any) -> None:
        if name in self._entries:
            raise DuplicateRegistrationError(self.kind, name, self._entries[name].plugin, plugin)
        self._entries[name] = Entry(name, value, plugin, dict(options))

    def get(self, name: str) -> T:
        return self._entries[name].value

    def entry(self, name: str) -> Entry[T]:
        return self._entries[name]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[Entry[T]]:
        return iter(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> list[str]:
        return list(self._entries)

    def by_plugin(self, plugin: str) -> list[str]:
        return [e.name for e in self._entries.values() if e.plugin == plugin]


def _registry(hook: str) -> Callable[[], Registry[Any]]:
    return lambda: Registry(KIND_OF_HOOK[hook])


@attrs.define
class Registries:
    """Everything all enabled plugins registered."""

    interfaces: Registry[InterfaceFactory] = attrs.field(factory=_registry("register_interfaces"))
    batch_runners: Registry[BatchRunnerFactory] = attrs.field(factory=_registry("register_batch_runners"))
    phases: Registry[Phase] = attrs.field(factory=_registry("register_phases"))
    evaluators: Registry[Evaluator] = attrs.field(factory=_registry("register_evaluators"))
    metrics: Registry[MetricFactory] = attrs.field(factory=_registry("register_metrics"))
    benchmarks: Registry[BenchmarkAdapter] = attrs.field(factory=_registry("register_benchmarks"))
    reports: Registry[ReportWriter] = attrs.field(factory=_registry("register_reports"))
    item_checks: Registry[ItemCheck] = attrs.field(factory=_registry("register_item_checks"))
    task_data_readers: Registry[TaskDataReaderFactory] = attrs.field(factory=_registry("register_task_data_readers"))
    evaluation_controllers: Registry[EvaluationControllerFactory] = attrs.field(
        factory=_registry("register_evaluation_controllers"))

    def by_hook(self) -> dict[str, Registry[Any]]:
        """Registration hook name -> the registry it fills. ``register_run_end`` is collected
        only when a run ends (``collect("register_run_end")``): its hooks may import what a
        run-end action needs, which no other command should pay for."""
        return {
            "register_interfaces": self.interfaces,
            "register_batch_runners": self.batch_runners,
            "register_phases": self.phases,
            "register_evaluators": self.evaluators,
            "register_metrics": self.metrics,
            "register_benchmarks": self.benchmarks,
            "register_reports": self.reports,
            "register_item_checks": self.item_checks,
            "register_task_data_readers": self.task_data_readers,
            "register_evaluation_controllers": self.evaluation_controllers,
        }

    def interface_facts(self, name: str) -> InterfaceFacts | None:
        """What the interface registered as ``name`` declared; None when no plugin did."""
        if name not in self.interfaces:
            return None
        options = self.interfaces.entry(name).options
        return InterfaceFacts(
            name=name,
            requires_model=options.get("requires_model", True) is not False,
            virtual_teacher=bool(options.get("virtual_teacher", False)),
            batches=name in self.batch_runners,
            exempt_item_checks=tuple(options.get("exempt_item_checks", ())),
            key_env=tuple(options.get("key_env", ())),
            key_fields=dict(options.get("key_fields", {})),
            sampling_keys=options.get("sampling_keys"),
            cluster_engines=tuple(options.get("cluster_engines", ())),
            tokens_per_s=options.get("tokens_per_s"),
            one_at_a_time=options.get("one_at_a_time", False) is True,
            seconds_per_token=options.get("seconds_per_token"),
            parameter_problem=options.get("parameter_problem"),
        )

    def runs_one_at_a_time(self, name: str) -> bool:
        """Whether the interface registered as ``name`` runs one call at a time (a local
        engine such as llama.cpp); False when no plugin registered it."""
        facts = self.interface_facts(name)
        return facts is not None and facts.one_at_a_time

    def all(self) -> dict[str, Registry[Any]]:
        return {
            "interfaces": self.interfaces,
            "batch_runners": self.batch_runners,
            "phases": self.phases,
            "evaluators": self.evaluators,
            "metrics": self.metrics,
            "benchmarks": self.benchmarks,
            "reports": self.reports,
            "item_checks": self.item_checks,
            "task_data_readers": self.task_data_readers,
            "evaluation_controllers": self.evaluation_controllers,
        }

