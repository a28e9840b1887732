"""The shape of ``meta.json``'s fields, checked where a command reads them (``status``,
``run --continue``, ``repair``): a hand-edited or damaged field is one error naming the file
and the field, not a traceback where the value is first used. ``coeval repair`` rebuilds
what it can (:func:`fixable_fields`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["BadRunFile", "check_meta", "meta_problems"]


class BadRunFile(ValueError):
    """A run file whose field does not have its shape."""

    def __init__(self, path: Path, field: str, rule: str) -> None:
        super().__init__(f"{path}: field '{field}' {rule}")
        self.path, self.field, self.rule = path, field, rule


def _is_text(v: Any) -> bool:
    return isinstance(v, str)


def _is_whole(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _is_dollars(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


def _list_of(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, list) and all(check(x) for x in v)


def _map_of(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, dict) and all(isinstance(k, str) and check(x) for k, x in v.items())


def _limit(v: Any) -> bool:
    return v is None or (isinstance(v, dict) and _is_whole(v.get("datapoints_per_task_teacher"))
                         and _map_of(_is_whole)(v.get("full_totals", {})))


def _is_object(v: Any) -> bool:
    return isinstance(v, dict)


#: field -> (its check, the rule a bad value breaks)
_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "experiment_id": (_is_text, "must be a string"),
    "status": (_is_text, "must be a string"),
    "phases_completed": (_list_of(_is_text), "must be a list of phase names"),
    "phases_in_progress": (_list_of(_is_text), "must be a list of phase names"),
    "calls": (_map_of(_is_whole), "must map model names to whole numbers of calls"),
    "spend_usd": (_map_of(_is_dollars), "must map model names to dollars (numbers, at least 0)"),
    "runs": (_list_of(_is_object), "must be a list of objects, one per process"),
    "phase_log": (_list_of(_is_object), "must be a list of objects"),
    "ingest_log": (_list_of(_is_object), "must be a list of objects"),
    "repair_log": (_list_of(_is_object), "must be a list of objects"),
    "limit": (_limit, "must be null or {\"datapoints_per_task_teacher\": N, \"full_totals\": {task: N}}"),
    "forked_from": (lambda v: v is None or isinstance(v, dict), "must be null or an object"),
    "settings": (_is_object, "must be an object"),
    "drift": (_list_of(_is_object), "must be a list of objects"),
}


def meta_problems(meta: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, rule) of every field present whose value does not have its shape."""
    return [(field, rule) for field, (check, rule) in _FIELDS.items()
            if field in meta and not check(meta[field])]


def check_meta(meta: Mapping[str, Any], path: Path) -> None:
    """Raise :class:`BadRunFile` naming the first field of ``meta`` without its shape."""
    problems = meta_problems(meta)
    if problems:
        field, rule = problems[0]
        raise BadRunFile(path, field, rule + "; `coeval repair` rebuilds it")
