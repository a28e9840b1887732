"""Datapoints above the slots of their (task, teacher): what a lowered ``sampling.total`` leaves
out of a run.

A config teacher writes datapoint ``{task}__{teacher}__{n:05d}`` into slot ``n`` of
``sampling.total`` (more for ``target_attributes: complete``). When the config of a run is
given a lower total (drift, let through with ``--allow-drift``), the datapoints above it stay
on disk, and the run, ``coeval status`` and ``coeval analyze`` all leave them out, with their
answers and judgments. Datapoints no teacher of the config wrote by slot are never left out
by this rule: those of a task with its own ``data``, of a benchmark teacher (``coeval
ingest``), or of a teacher the config does not have.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from coeval.phases.base import RunView
from coeval.phases.generation import sampler_for
from coeval.storage.records import datapoint_slot

__all__ = ["beyond_slots", "slot_counts"]


def slot_counts(view: RunView) -> dict[tuple[str, str], int]:
    """(task, teacher) -> slots, for each task without its own data and each config teacher
    that makes calls."""
    out: dict[tuple[str, str], int] = {}
    for task in view.config.tasks:
        if task.data is not None:
            continue
        for teacher in view.callable_models("teacher"):
            sampler = sampler_for(view, task, teacher.name)
            out[(task.name, teacher.name)] = sampler.slots() if sampler is not None else task.sampling.total
    return out


def beyond_slots(view: RunView, datapoints: Iterable[Mapping[str, Any]],
                 slots: Mapping[tuple[str, str], int] | None = None) -> set[str]:
    """Ids of the ``datapoints`` above the slots of their (task, teacher)."""
    slots = slot_counts(view) if slots is None else slots
    out: set[str] = set()
    for dp in datapoints:
        limit = slots.get((str(dp.get("task_id")), str(dp.get("teacher_model_id"))))
        seq = datapoint_slot(str(dp.get("id", ""))) if limit is not None else None
        if seq is not None and limit is not None and seq > limit:
            out.add(str(dp["id"]))
    return out
