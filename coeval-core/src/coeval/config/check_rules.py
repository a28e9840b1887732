"""V-60: the parameters of a rubric factor scored by a deterministic check.

``{evaluator: regex, params: {pattern: "("}}`` would fail every response of a run; this
rule reports it before the run, naming the task, the factor and what is wrong (an unknown
or missing key, a pattern or JSON schema that does not compile, a ``python`` function that
cannot be imported from the config's folder).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coeval.answer_checks.functions import CHECK_NAMES, param_problem

__all__ = ["check_factor_params"]


def check_factor_params(validator: Any) -> None:
    """Add a V-60 issue to ``validator`` for each check factor whose params do not work."""
    folder = str(Path(validator.source).resolve().parent) if validator.source else None
    for i, task in validator.tasks:
        rubric = task.get("rubric")
        for factor, spec in rubric.items() if isinstance(rubric, dict) else ():
            name = spec.get("evaluator") if isinstance(spec, dict) else None
            if name not in CHECK_NAMES:
                continue
            problem = param_problem(str(name), spec.get("params"), folder)
            if problem:
                validator.add("V-60", ("tasks", i, "rubric", factor, "params"), problem,
                              f"see the {name} check in docs/configuration.md (\"Checks without a judge\")")
