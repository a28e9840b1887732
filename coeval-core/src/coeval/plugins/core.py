"""The core's own contributions, registered through the same hooks as any plugin.

Each hook imports what it registers: the plugin manager loads this module for every
command, ``coeval --help`` included, while these hooks run only once registries are built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coeval.contract.hookspecs import hookimpl

if TYPE_CHECKING:
    from coeval.contract.types import RegisterEvaluator, RegisterInterface, RegisterItemCheck, RegisterPhase


@hookimpl
def register_interfaces(register: RegisterInterface) -> None:
    from coeval.interfaces.mock import MOCK_PARAMETER_KEYS, MockInterface, parameter_problem

    # The mock answers the same prompt the same way by design, and phase 3 prompts repeat
    # whenever attribute draws repeat: its duplicates say nothing about a teacher. Its
    # parameter keys are declared so a misspelt one (``qualty``) is refused, not ignored, and
    # its parameters' values are checked by validation, so ``--dry-run`` refuses them too.
    register("mock", MockInterface, requires_model=False, exempt_item_checks=("near_duplicate",),
             sampling_keys=MOCK_PARAMETER_KEYS, parameter_problem=parameter_problem)


@hookimpl
def register_phases(register: RegisterPhase) -> None:
    from coeval.phases.standard import standard_phases

    for phase in standard_phases():
        register(phase)


@hookimpl
def register_evaluators(register: RegisterEvaluator) -> None:
    from coeval.evaluators import standard_evaluators

    for name, evaluator in standard_evaluators().items():
        register(name, evaluator)


@hookimpl
def register_item_checks(register: RegisterItemCheck) -> None:
    from coeval.quality import register_builtin_checks

    register_builtin_checks(register)
