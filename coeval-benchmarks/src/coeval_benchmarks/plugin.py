"""Hook implementations of coeval-benchmarks (registered through the `coeval` entry point).

Registers the ten benchmark adapters, the ``benchmark`` replay interface, the ``gold``
evaluator, the readers of a task's own data (``tasks[].data``: a file or a dataset) and the
``coeval ingest`` command. Imports stay inside the hooks so that loading
plugins costs nothing until something is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coeval.contract.hookspecs import hookimpl

if TYPE_CHECKING:
    from coeval import (
        RegisterBenchmark,
        RegisterEvaluator,
        RegisterInterface,
        RegisterTaskDataReader,
        TaskDataReader,
    )


@hookimpl
def register_benchmarks(register: RegisterBenchmark) -> None:
    from coeval_benchmarks.adapters import builtin_adapters

    for adapter in builtin_adapters():
        register(adapter.name, adapter)


@hookimpl
def register_interfaces(register: RegisterInterface) -> None:
    from coeval_benchmarks.interface import BenchmarkInterface

    register("benchmark", BenchmarkInterface, requires_model=False, virtual_teacher=True)


@hookimpl
def register_evaluators(register: RegisterEvaluator) -> None:
    from coeval_benchmarks.code_tests import CodeTestsEvaluator
    from coeval_benchmarks.gold import GoldEvaluator

    register("gold", GoldEvaluator())
    register("python_tests", CodeTestsEvaluator())


@hookimpl
def register_task_data_readers(register: RegisterTaskDataReader) -> None:
    # ``coeval ingest --file``'s readers, for a file and for a dataset from the hub cache
    register("file", _own_data_reader)
    register("dataset", _own_data_reader)


def _own_data_reader() -> TaskDataReader:
    """:mod:`coeval_benchmarks.task_data`, imported when data is first read."""
    from coeval_benchmarks import task_data

    return task_data


@hookimpl
def register_commands(cli: Any) -> None:
    from coeval_benchmarks.cli import ingest_command

    cli.add_command(ingest_command)
