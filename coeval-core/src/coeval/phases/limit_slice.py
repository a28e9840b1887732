"""The datapoints a ``--limit`` run answers: the slice of each (task, teacher) that
``coeval run --limit N`` makes and answers, read where phase 4 lists what it owes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from coeval.config.model import Config
from coeval.record_schema import ID, TASK_ID, TEACHER_MODEL_ID

__all__ = ["within_limit"]


def within_limit(config: Config, datapoints: Iterable[dict[str, Any]], is_callable: Callable[[str], bool]
                 ) -> list[dict[str, Any]]:
    """The datapoints a ``--limit`` run answers: per (task, teacher), a config teacher's
    slots 1..N, and the first N of any other teacher (an ingested file) in file order."""
    limit = config.datapoint_limit
    items = list(datapoints)
    if limit is None:
        return items
    kept: Counter[tuple[Any, Any]] = Counter()
    out = []
    for dp in items:
        teacher = dp.get(TEACHER_MODEL_ID)
        if is_callable(str(teacher)):
            slot = str(dp.get(ID, "")).rsplit("__", 1)[-1]
            if slot.isdigit() and int(slot) <= limit:
                out.append(dp)
            continue
        group = (dp.get(TASK_ID), teacher)
        if kept[group] < limit:
            kept[group] += 1
            out.append(dp)
    return out
