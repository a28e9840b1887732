"""Hook implementations of coeval-benchmarks (registered through the `coeval` entry point).

Registers the ten benchmark adapters, the ``benchmark`` replay interface, the ``gold``
evaluator and the ``coeval ingest`` command. Imports stay inside the hooks so that loading
plugins costs nothing until something is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coeval.contract.hookspecs import hookimpl

if TYPE_CHECKING:
    from coeval import RegisterBenchmark, RegisterEvaluator, RegisterInterface


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
def register_commands(cli: Any) -> None:
    from coeval_benchmarks.cli import ingest_command

    cli.add_command(ingest_command)
