"""V-60 for evaluators that take ``params`` on a rubric factor and say what is wrong with them.

An evaluator registered by a plugin may define ``param_problem(params) -> str | None``
(``python_tests`` does, for ``workers`` and ``timeout_s``); a factor that routes to it with
params it rejects stops validation with exit code 2, naming the task, the factor and the
problem, instead of failing every record of the run in phase 5.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["check_evaluator_params", "evaluator_param_checks"]


def evaluator_param_checks(registry: Any) -> dict[str, Callable[[Any], str | None]]:
    """Registered evaluator name -> its ``param_problem`` (only the evaluators that have one)."""
    out = {}
    for name in registry.names():
        check = getattr(registry.get(name), "param_problem", None)
        if callable(check):
            out[name] = check
    return out


def check_evaluator_params(validator: Any) -> None:
    """Add a V-60 issue for each factor whose evaluator rejects its ``params``."""
    checks = getattr(validator, "evaluator_params", {})
    for i, task in validator.tasks:
        rubric = task.get("rubric")
        for factor, spec in rubric.items() if isinstance(rubric, dict) else ():
            check = checks.get(spec.get("evaluator")) if isinstance(spec, dict) else None
            problem = check(spec.get("params")) if check is not None else None
            if problem:
                validator.add("V-60", ("tasks", i, "rubric", factor, "params"), problem,
                              f"fix the params of the {spec['evaluator']} evaluator, or leave them out (its defaults)")
