"""Plugin discovery and the typed registries that hooks fill.

It sits above the phases, the evaluators and the item checks, since it registers the core
plugin (:mod:`coeval.plugins.core`) that provides them; the hooks, their typed shapes and
the registries it fills are the contract's (:mod:`coeval.contract`), below them.

The core's own contributions (the five phases, the ``mock`` interface, the LLM judge) are
registered as a plugin named ``core`` exactly like third-party ones; other plugins come
from the ``coeval`` entry-point group. ``COEVAL_DISABLE_PLUGINS=name,...`` blocks plugins
by name before they are imported.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click
import pluggy

from coeval.config.credentials import use_interface_facts
from coeval.contract import hookspecs
from coeval.contract.errors import DISABLE_ENV, DuplicateRegistrationError, disabled_plugin_names
from coeval.contract.plans import PlannedCalls
from coeval.contract.registries import KIND_OF_HOOK, Entry, Registries, Registry
from coeval.contract.types import (
    BatchRunnerFactory,
    BenchmarkAdapter,
    EvaluationCall,
    EvaluationFailed,
    EvaluationRequest,
    EvaluationResult,
    Evaluator,
    InterfaceFactory,
    InterfaceFacts,
    ItemCheck,
    Metric,
    MetricFactory,
    Phase,
    RegisterBatchRunner,
    RegisterBenchmark,
    RegisterEvaluator,
    RegisterInterface,
    RegisterItemCheck,
    RegisterMetric,
    RegisterPhase,
    RegisterReport,
    RegisterRunEnd,
    RegisterTaskDataReader,
    ReportWriter,
    RunEndAction,
    Scorer,
    Scoring,
    SubmitCalls,
    TaskDataReader,
    TaskDataReaderFactory,
    TokenSeconds,
)
from coeval.plugins import core as builtin_plugin

if TYPE_CHECKING:
    from coeval.config.model import ModelConfig

__all__ = [
    "DISABLE_ENV",
    "BatchRunnerFactory",
    "BenchmarkAdapter",
    "DuplicateRegistrationError",
    "Entry",
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
    "PlannedCalls",
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
    "Registries",
    "Registry",
    "ReportWriter",
    "RunEndAction",
    "Scorer",
    "Scoring",
    "SubmitCalls",
    "TaskDataReader",
    "TaskDataReaderFactory",
    "TokenSeconds",
    "collect",
    "collect_registries",
    "disabled_plugin_names",
    "get_plugin_manager",
    "new_plugin_manager",
    "registries",
    "reset_plugins",
    "use_plugin_manager",
]

CORE_PLUGIN = "core"

_pm: pluggy.PluginManager | None = None
_registries: Registries | None = None
#: the plugins ``_registries`` were collected from (a plugin registered since makes them stale)
_collected_from: frozenset[int] = frozenset()


def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager, loading plugins on first use."""
    global _pm
    if _pm is None:
        _pm = new_plugin_manager()
    return _pm


def new_plugin_manager(*, entry_points: bool = True) -> pluggy.PluginManager:
    """A plugin manager with the core plugin and, unless ``entry_points`` is False, the
    installed ones, minus those ``COEVAL_DISABLE_PLUGINS`` names. Tests build one per test
    (and make it the process's with :func:`use_plugin_manager`), as pluggy's ``pm`` fixture does."""
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    disabled = disabled_plugin_names()
    for name in disabled:
        pm.set_blocked(name)
    if CORE_PLUGIN not in disabled:
        pm.register(builtin_plugin, name=CORE_PLUGIN)
    if entry_points:
        pm.load_setuptools_entrypoints(hookspecs.PROJECT_NAME)
    pm.check_pending()
    return pm


def use_plugin_manager(pm: pluggy.PluginManager | None) -> None:
    """Make ``pm`` the process-wide plugin manager (None: the installed plugins, loaded again
    on next use)."""
    global _pm, _registries
    _pm, _registries = pm, None


def registries() -> Registries:
    """Call every registration hook once and return the filled registries (collected again
    when a plugin was registered with, or removed from, the plugin manager since)."""
    global _registries, _collected_from
    pm = get_plugin_manager()
    plugins = frozenset(id(p) for p in pm.get_plugins())
    if _registries is None or plugins != _collected_from:
        _registries, _collected_from = _collect(pm), plugins
    return _registries


use_interface_facts(lambda name: registries().interface_facts(name))


def collect_registries(pm: pluggy.PluginManager) -> Registries:
    """Every registration hook of ``pm``'s plugins, collected into new registries."""
    return _collect(pm)


def _collect(pm: pluggy.PluginManager) -> Registries:
    regs = Registries()
    for hook_name, registry in regs.by_hook().items():
        collect(hook_name, pm, into=registry)
    _bind_evaluators(regs)
    return regs


def collect(hook_name: str, pm: pluggy.PluginManager | None = None, *, into: Registry[Any] | None = None) -> Registry[Any]:
    """Call one registration hook of every plugin and return what they registered: the one
    way the core collects hooks. A name registered twice raises
    :class:`DuplicateRegistrationError`, whichever hook it is."""
    pm = pm if pm is not None else get_plugin_manager()
    registry = into if into is not None else Registry(KIND_OF_HOOK[hook_name])
    registrar = _REGISTRARS.get(hook_name, _registrar)
    for impl in getattr(pm.hook, hook_name).get_hookimpls():
        impl.function(register=registrar(registry, impl.plugin_name))
    return registry


def _bind_evaluators(regs: Registries) -> None:
    """Hand the filled registries to evaluators that look things up in them (metrics)."""
    for entry in regs.evaluators:
        bind = getattr(entry.value, "bind_registries", None)
        if callable(bind):
            bind(regs)


def _registrar(registry: Registry[Any], plugin: str) -> Callable[..., None]:
    def register(name: str, value: Any, /) -> None:
        registry.add(name, value, plugin)

    return register


def _interface_registrar(registry: Registry[Any], plugin: str) -> RegisterInterface:
    def register(
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
    ) -> None:
        options: dict[str, Any] = {}
        if not requires_model:
            options["requires_model"] = False
        if virtual_teacher:
            options["virtual_teacher"] = True
        if exempt_item_checks:
            options["exempt_item_checks"] = tuple(exempt_item_checks)
        if key_env:
            options["key_env"] = tuple(key_env)
        if key_fields:
            options["key_fields"] = {field: tuple(env) for field, env in key_fields.items()}
        if sampling_keys is not None:
            options["sampling_keys"] = frozenset(sampling_keys)
        if cluster_engines:
            options["cluster_engines"] = tuple(cluster_engines)
        if tokens_per_s is not None:
            options["tokens_per_s"] = tokens_per_s
        if one_at_a_time:
            options["one_at_a_time"] = True
        if seconds_per_token is not None:
            options["seconds_per_token"] = seconds_per_token
        if parameter_problem is not None:
            options["parameter_problem"] = parameter_problem
        registry.add(name, factory, plugin, **options)

    return register


def _phase_registrar(registry: Registry[Any], plugin: str) -> RegisterPhase:
    def register(phase: Phase, /) -> None:
        registry.add(phase.name, phase, plugin)

    return register


def _report_registrar(registry: Registry[Any], plugin: str) -> RegisterReport:
    def register(name: str, writer: ReportWriter, /, *, default: bool = True) -> None:
        registry.add(name, writer, plugin, **({} if default else {"default": False}))

    return register


def _item_check_registrar(registry: Registry[Any], plugin: str) -> RegisterItemCheck:
    def register(
        rule_id: str,
        check: ItemCheck,
        /,
        *,
        kinds: Sequence[str] = ("datapoint",),
        options: Mapping[str, Any] | None = None,
    ) -> None:
        registry.add(rule_id, check, plugin, kinds=tuple(kinds), options=dict(options or {}))

    return register


_REGISTRARS: dict[str, Callable[[Registry[Any], str], Callable[..., None]]] = {
    "register_interfaces": _interface_registrar,
    "register_phases": _phase_registrar,
    "register_reports": _report_registrar,
    "register_item_checks": _item_check_registrar,
}



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
