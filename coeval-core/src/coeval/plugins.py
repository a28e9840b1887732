"""Plugin discovery and the typed registries that hooks fill.

The core's own contributions (the five phases, the ``mock`` interface, the LLM judge) are
registered as a plugin named ``core`` exactly like third-party ones; other plugins come
from the ``coeval`` entry-point group. ``COEVAL_DISABLE_PLUGINS=name,...`` blocks plugins
by name before they are imported.
"""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

import attrs
import click
import pluggy

from coeval import builtin_plugin, hookspecs
from coeval.phases.base import PlannedCalls
from coeval.plugin_errors import DISABLE_ENV, DuplicateRegistrationError
from coeval.plugin_types import (
    BatchRunnerFactory,
    BenchmarkAdapter,
    EvaluationCall,
    EvaluationFailed,
    EvaluationRequest,
    EvaluationResult,
    Evaluator,
    InterfaceFactory,
    Metric,
    MetricFactory,
    ModelFreeEvaluator,
    RegisterBatchRunner,
    RegisterBenchmark,
    RegisterEvaluator,
    RegisterInterface,
    RegisterMetric,
    RegisterPhase,
    RegisterReport,
    ReportWriter,
    Scorer,
    Scoring,
    SubmitCalls,
)

__all__ = [
    "DISABLE_ENV",
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
    "PlannedCalls",
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
    "DuplicateRegistrationError",
    "Entry",
    "Registries",
    "Registry",
    "disabled_plugin_names",
    "get_plugin_manager",
    "registries",
    "reset_plugins",
]

CORE_PLUGIN = "core"

T = TypeVar("T")


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


@attrs.define
class Registries:
    """Everything all enabled plugins registered."""

    interfaces: Registry[Callable[..., Any]] = attrs.field(factory=lambda: Registry("interface"))
    batch_runners: Registry[Callable[..., Any]] = attrs.field(factory=lambda: Registry("batch runner"))
    phases: Registry[Any] = attrs.field(factory=lambda: Registry("phase"))
    evaluators: Registry[Any] = attrs.field(factory=lambda: Registry("evaluator"))
    metrics: Registry[Callable[..., Any]] = attrs.field(factory=lambda: Registry("metric"))
    benchmarks: Registry[Any] = attrs.field(factory=lambda: Registry("benchmark"))
    reports: Registry[Callable[..., Any]] = attrs.field(factory=lambda: Registry("report"))
    item_checks: Registry[Callable[..., Any]] = attrs.field(factory=lambda: Registry("item check"))

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
        }


_pm: pluggy.PluginManager | None = None
_registries: Registries | None = None


def disabled_plugin_names() -> set[str]:
    raw = os.environ.get(DISABLE_ENV, "")
    return {name.strip() for name in raw.split(",") if name.strip()}


def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager, loading plugins on first use."""
    global _pm
    if _pm is None:
        _pm = _load_plugin_manager()
    return _pm


def _load_plugin_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    disabled = disabled_plugin_names()
    for name in disabled:
        pm.set_blocked(name)
    if CORE_PLUGIN not in disabled:
        pm.register(builtin_plugin, name=CORE_PLUGIN)
    pm.load_setuptools_entrypoints(hookspecs.PROJECT_NAME)
    pm.check_pending()
    return pm


def registries() -> Registries:
    """Call every registration hook once and return the filled registries."""
    global _registries
    if _registries is None:
        _registries = _collect(get_plugin_manager())
    return _registries


def _collect(pm: pluggy.PluginManager) -> Registries:
    regs = Registries()
    hooks: dict[str, Registry[Any]] = {
        "register_interfaces": regs.interfaces,
        "register_batch_runners": regs.batch_runners,
        "register_evaluators": regs.evaluators,
        "register_metrics": regs.metrics,
        "register_benchmarks": regs.benchmarks,
        "register_reports": regs.reports,
        "register_item_checks": regs.item_checks,
    }
    for hook_name, registry in hooks.items():
        for impl in getattr(pm.hook, hook_name).get_hookimpls():
            impl.function(register=_registrar(registry, impl.plugin_name))
    for impl in pm.hook.register_phases.get_hookimpls():
        plugin = impl.plugin_name

        def register_phase(phase: Any, _plugin: str = plugin, **options: Any) -> None:
            regs.phases.add(phase.name, phase, _plugin, **options)

        impl.function(register=register_phase)
    _bind_evaluators(regs)
    return regs


def _bind_evaluators(regs: Registries) -> None:
    """Hand the filled registries to evaluators that look things up in them (metrics)."""
    for entry in regs.evaluators:
        bind = getattr(entry.value, "bind_registries", None)
        if callable(bind):
            bind(regs)


def _registrar(registry: Registry[Any], plugin: str) -> Callable[..., None]:
    def register(name: str, value: Any, **options: Any) -> None:
        registry.add(name, value, plugin, **options)

    return register


def plugin_distributions() -> dict[str, str]:
    """Plugin name -> 'distribution version', for ``coeval plugins``."""
    pm = get_plugin_manager()
    out: dict[str, str] = {}
    for plugin, dist in pm.list_plugin_distinfo():
        name = pm.get_name(plugin) or str(plugin)
        out[name] = f"{dist.project_name} {dist.version}"
    if pm.has_plugin(CORE_PLUGIN):
        try:
            out[CORE_PLUGIN] = f"coeval-core {importlib.metadata.version('coeval-core')}"
        except importlib.metadata.PackageNotFoundError:
            out[CORE_PLUGIN] = "coeval-core (source)"
    return out


def commands_by_plugin() -> dict[str, list[str]]:
    """Plugin name -> the subcommands its ``register_commands`` hook adds."""
    pm = get_plugin_manager()
    out: dict[str, list[str]] = {}
    for impl in pm.hook.register_commands.get_hookimpls():
        probe = click.Group()
        impl.function(cli=probe)
        out.setdefault(impl.plugin_name, []).extend(sorted(probe.commands))
    return out


def reset_plugins() -> None:
    """Forget loaded plugins (tests change the environment and reload)."""
    global _pm, _registries
    _pm = None
    _registries = None
