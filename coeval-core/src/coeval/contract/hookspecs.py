"""The hooks a CoEval plugin can implement.

Every hook is a *registration* hook: it receives a ``register`` callable and calls it once
per thing it contributes, so one plugin can add several interfaces, metrics or commands.
pluggy has no async hooks, so hooks only register; the core owns the event loop and calls
what was registered. Plugins must keep imports of heavy libraries (torch, provider SDKs)
out of module import time and out of these hooks: import them when an adapter is first used.

A plugin is a module (or object) with functions decorated by :data:`hookimpl`, published
through the ``coeval`` entry-point group::

    [project.entry-points.coeval]
    my_plugin = "my_package.coeval_plugin"
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import click
import pluggy

if TYPE_CHECKING:
    from coeval.config.model import ModelConfig
    from coeval.contract.adaptive import RegisterEvaluationController
    from coeval.contract.types import (
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
    )

PROJECT_NAME = "coeval"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def register_interfaces(register: RegisterInterface) -> None:
    """Register model interfaces.

    Call ``register(name, factory)`` where ``factory(model, credentials)`` returns an
    :class:`coeval.interfaces.Interface`. ``name`` is the value users write in
    ``models[].interface``. Keyword options declare the interface's facts, which validation
    and planning ask (the core keeps no table of interfaces): ``requires_model=False`` when
    its models need no ``parameters.model``, ``virtual_teacher=True`` when its models make no
    calls (their datapoints come from ``coeval ingest``), ``exempt_item_checks=(rule, ...)``
    for item-quality rules that say nothing about its teachers. It batches when a batch
    runner is registered under the same name (:func:`register_batch_runners`).
    """


@hookspec
def register_batch_runners(register: RegisterBatchRunner) -> None:
    """Register provider batch runners.

    Call ``register(interface_name, factory)`` where ``factory(model, credentials)``
    returns a :class:`coeval.scheduler.batching.BatchRunner`. At most one runner per interface. A
    config may then batch that interface (``experiment.batch.<interface>`` or a model's
    ``batch_enabled: true``), whichever plugin provides it.
    """


@hookspec
def register_phases(register: RegisterPhase) -> None:
    """Register pipeline phases.

    Call ``register(phase)`` with an object implementing :class:`coeval.phases.Phase`.
    The five standard phases are registered by the core this way; a third party can add
    a phase, which runs after the phases it declares in ``after``.

    A phase declares its id (``name``), the ``modes`` a config may give it in
    ``experiment.phases``, and the calls it will make (``plan(view)`` returning
    :class:`coeval.plugins.manager.PlannedCalls`), from which ``coeval plan``, the cost estimate
    and ``coeval status`` are derived. Optional: ``title`` and ``short`` (its labels in
    tables) and ``roles`` (the model roles whose interfaces it needs). Changed in 0.2:
    ``plan``; a phase without it is counted as making no calls, with a note.
    """


@hookspec
def register_evaluators(register: RegisterEvaluator) -> None:
    """Register phase-5 evaluators (LLM judge, label exact-match, metric scorers, yours).

    Call ``register(name, evaluator)`` where ``evaluator`` implements
    :class:`coeval.plugins.manager.Evaluator`: ``factors``, ``scorers`` and an async
    ``evaluate(request, submit)`` whose model calls go through ``submit`` (the scheduler).
    A rubric factor routes to it with ``evaluator: NAME``. Changed in 0.2: evaluators with
    the 0.1 synchronous ``evaluate(task, rubric, datapoint, responses)`` are adapted.
    """


@hookspec
def register_metrics(register: RegisterMetric) -> None:
    """Register reference-based metrics such as ``bleu``, ``bertscore``, ``exact_match``.

    Call ``register(name, factory)`` where ``factory()`` returns an object with
    ``score(candidates: list[str], references: list[str]) -> list[float]`` in [0, 1].
    Rubric factors name them with ``{metric: NAME}``.
    """


@hookspec
def register_benchmarks(register: RegisterBenchmark) -> None:
    """Register benchmark ingest adapters for ``coeval ingest``.

    Call ``register(name, adapter)`` with an instance of
    :class:`coeval_benchmarks.base.BenchmarkAdapter` (the core only stores it; its typed
    shape is :class:`coeval.plugins.manager.BenchmarkAdapter`).
    """


@hookspec
def register_task_data_readers(register: RegisterTaskDataReader) -> None:
    """Register the readers of a task's own data (``tasks[].data``).

    Call ``register(source, factory)`` where ``source`` is the ``data`` key the reader reads
    (``file``: a JSONL, JSON, CSV or Parquet file; ``dataset``: a Hugging Face dataset) and
    ``factory()`` returns a :class:`coeval.contract.types.TaskDataReader`. Validation,
    loading and phase 3 read a task's data through the reader of its source; a config with
    data that no installed plugin reads is a validation error (V-61).
    """


@hookspec
def register_evaluation_controllers(register: RegisterEvaluationController) -> None:
    """Register the controller of adaptive evaluation (``experiment.adaptive``).

    Call ``register(name, factory)`` where ``factory()`` returns a
    :class:`coeval.contract.adaptive.EvaluationController`; the core asks for the one named
    ``adaptive`` (coeval-analysis registers it). An adaptive run's phase 5 goes in rounds, and
    after each the controller's ``look(round_look)`` says which judges to stop, which students
    are still open and whether the question is answered. Register a factory that imports
    what the controller needs when called: the hook runs whenever plugins are collected.
    """


@hookspec
def register_item_checks(register: RegisterItemCheck) -> None:
    """Register item-quality checks for teacher replies in phases 1-3.

    Call ``register(rule_id, check, kinds=("datapoint",), options={...})`` where
    ``check(candidate, context)`` returns None to accept or a reason to reject
    (:mod:`coeval.quality`). ``kinds``: datapoint, target, nuanced, rubric.
    """


@hookspec
def register_commands(cli: click.Group) -> None:
    """Add subcommands to the ``coeval`` click group ``cli`` (``cli.add_command(...)``)."""


@hookspec
def register_reports(register: RegisterReport) -> None:
    """Register analysis report writers: ``register(name, writer, default=True)``; a writer
    registered with ``default=False`` runs only when ``coeval analyze --report NAME`` asks.

    ``writer(analysis, out_dir)`` writes files into ``out_dir`` and returns their paths.
    """


@hookspec
def register_run_end(register: RegisterRunEnd) -> None:
    """Register actions run when ``coeval run`` ends on its own after writing records (not a
    ``--continue`` that found nothing to do): ``register(name, action)``;
    ``action(run_folder)`` is called once per run (the analysis distribution builds the
    viewer's database of a big run this way). An action that raises is logged and skipped:
    it never changes the run's outcome.
    """


@hookspec(firstresult=True)
def resolve_auto_interface(model: ModelConfig, has_credentials: Callable[[str], bool]) -> str | None:
    """Pick a concrete interface for a model configured with ``interface: auto``.

    ``model`` is the model's :class:`coeval.config.model.ModelConfig` (``interface`` is
    ``"auto"``; ``parameters["model"]`` names the model), like the ``model`` an interface
    factory takes (it was the raw model mapping: read ``model.parameters``, not
    ``model["parameters"]``);
    ``has_credentials(interface) -> bool`` says whether credentials exist for an interface.
    Return the interface name, or None to let another plugin decide.
    """


@hookspec(firstresult=True)
def model_price(interface: str, model_id: str) -> Mapping[str, float] | None:
    """Price of a model as ``{"input": usd_per_1m, "output": usd_per_1m, "batch_discount": 0.5}``
    (``batch_discount`` is the price multiplier in batch mode), or None when unknown."""
