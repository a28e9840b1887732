"""V-60: the parameters of a rubric factor scored by a deterministic check; V-63: factor weights.

``{evaluator: regex, params: {pattern: "("}}`` would fail every response of a run; this
rule reports it before the run, naming the task, the factor and what is wrong (an unknown
or missing key, a pattern or JSON schema that does not compile, a ``python`` function that
cannot be imported from the config's folder).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coeval.answer_checks.functions import CHECK_NAMES, param_problem

__all__ = ["check_factor_params", "check_factor_weights"]


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


#: what a factor scored without a rubric entry is called: code tests, and gold answers
_UNLISTED_FACTORS = {"pass@1": "code tests (checker: python_tests)", "gold": "gold answers"}


def _weight_only(spec: Any) -> bool:
    """A rubric entry that only weights a factor another evaluator scores (``pass@1: {weight: 2}``)."""
    return isinstance(spec, dict) and set(spec) == {"weight"}


def check_factor_weights(validator: Any) -> None:
    """V-63: a rubric ``weight`` is a number >= 0, some factor of the task weighs more than 0,
    and a weight-only entry names a factor an evaluator scores (``pass@1`` of code tests, a
    label attribute, ``gold``)."""
    for i, task in validator.tasks:
        rubric = task.get("rubric")
        if not isinstance(rubric, dict) or not rubric:
            continue
        name = task.get("name", f"#{i + 1}")
        labels = task.get("label_attributes") if isinstance(task.get("label_attributes"), list) else []
        weights: dict[str, float] = {}
        for factor, spec in rubric.items():
            weight = spec.get("weight", 1) if isinstance(spec, dict) else 1
            path = ("tasks", i, "rubric", factor, "weight")
            if isinstance(weight, bool) or not isinstance(weight, int | float):
                continue  # the schema reports a weight that is not a number
            if weight < 0:
                validator.add("V-63", path, f"task '{name}': factor '{factor}' has a negative weight ({weight})",
                              "write a weight >= 0 (0 reports the factor without counting it)")
            weights[str(factor)] = float(weight)
            if _weight_only(spec) and factor not in _UNLISTED_FACTORS and factor not in labels:
                known = ", ".join([*_UNLISTED_FACTORS, *map(str, labels)])
                validator.add("V-63", ("tasks", i, "rubric", factor),
                              f"task '{name}': weight for unknown factor '{factor}' (no judge criterion, "
                              "check or metric, and no evaluator scores a factor of that name)",
                              f"add a description for the judges, or weight one of: {known}")
        if weights and all(w == 0 for w in weights.values()):
            factor = next(iter(weights))
            validator.add("V-63", ("tasks", i, "rubric", factor, "weight"),
                          f"task '{name}': every factor has weight 0 (first: '{factor}'), so nothing would count",
                          "give at least one factor a weight above 0")
