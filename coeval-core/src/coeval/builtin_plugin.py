"""The core's own contributions, registered through the same hooks as any plugin."""

from __future__ import annotations

from typing import Any

from coeval.hookspecs import hookimpl


@hookimpl
def register_interfaces(register: Any) -> None:
    from coeval.interfaces.mock import MockInterface

    register("mock", MockInterface, requires_model=False)


@hookimpl
def register_phases(register: Any) -> None:
    from coeval.phases import standard_phases

    for phase in standard_phases():
        register(phase)


@hookimpl
def register_evaluators(register: Any) -> None:
    from coeval.evaluators import standard_evaluators

    for name, evaluator in standard_evaluators().items():
        register(name, evaluator)
