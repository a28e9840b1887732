"""V-64: ``experiment.adaptive``, the rules its schema cannot say: the shape of ``stop_when``
and what it asks of the configured students, and screening's need of three judges."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["STOP_RULE_KEYS", "check_adaptive"]

RULE = "V-64"
#: the forms ``stop_when`` takes, by their keys
STOP_RULE_KEYS = ({"top"}, {"separated"}, {"separated", "delta"}, {"width"})
#: judges screening needs: with two, neither can be told to be the poor one
SCREEN_MIN_JUDGES = 3


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _stop_when_problem(raw: Any, students: int) -> tuple[str, str] | None:
    """(message, fix) for a ``stop_when`` that asks nothing answerable; None when it is fine."""
    fix = "write one of  {top: 1},  {separated: all, delta: 0.02}  or  {width: 0.05}"
    if not isinstance(raw, Mapping) or set(raw) not in STOP_RULE_KEYS:
        keys = ", ".join(sorted(map(str, raw))) if isinstance(raw, Mapping) else repr(raw)
        return f"stop_when must be one of top, separated (with delta) or width, got {keys}", fix
    if "top" in raw:
        k = raw["top"]
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            return f"stop_when.top must be a whole number of places, 1 or more, got {k!r}", "write e.g. top: 1"
        if students and k >= students:
            return (f"stop_when.top: {k} first places of {students} students asks nothing",
                    f"write a number below {students}, e.g. top: 1")
    if "separated" in raw and raw["separated"] != "all":
        return f"stop_when.separated must be 'all', got {raw['separated']!r}", "write separated: all"
    if "delta" in raw and not (_number(raw["delta"]) and 0 <= raw["delta"] < 1):
        return f"stop_when.delta must be a number from 0 up to (not including) 1, got {raw['delta']!r}", \
            "write e.g. delta: 0.02"
    if "width" in raw and not (_number(raw["width"]) and 0 < raw["width"] <= 1):
        return f"stop_when.width must be a number above 0 and at most 1, got {raw['width']!r}", \
            "write e.g. width: 0.05"
    return None


def check_adaptive(validator: Any) -> None:
    """V-64 on ``experiment.adaptive`` (its types and ranges are the schema's)."""
    adaptive = validator.experiment.get("adaptive")
    if adaptive is True:  # the defaults
        adaptive = {}
    if not isinstance(adaptive, Mapping):
        return
    roles = [m.get("roles") for _, m in validator.models]
    students = sum(1 for r in roles if isinstance(r, list) and "student" in r)
    judges = sum(1 for r in roles if isinstance(r, list) and "judge" in r)
    path = ("experiment", "adaptive")
    if "stop_when" in adaptive:
        problem = _stop_when_problem(adaptive["stop_when"], students)
        if problem is not None:
            validator.add(RULE, (*path, "stop_when"), *problem)
    if students and students < 2:
        validator.add(RULE, path, "adaptive evaluation ranks students; this config has one",
                      "add a student, or remove experiment.adaptive")
    if adaptive.get("screen", True) is True and 0 < judges < SCREEN_MIN_JUDGES:
        validator.add(RULE, (*path, "screen"),
                      f"judge screening needs {SCREEN_MIN_JUDGES} judges or more (this config has {judges}): "
                      "no judge will be stopped", "add judges, or write screen: false", severity="warning")
