"""Phase 3: teachers write ``(prompt, reference_response)`` datapoints.

Each (task, teacher) has ``sampling.total`` slots (more for ``target_attributes: complete``,
which covers the whole cross-product). Slot ``n`` is datapoint ``{task}__{teacher}__{n:05d}``
and always draws the same attributes, so a retried or resumed slot keeps its id and its
spec, and Extend fills exactly the slots that have no ``ok`` record.

Modes: New (nothing may exist yet), Keep (skip the phase when it has datapoints), Extend
(fill missing and failed slots), Model (skip a (task, teacher) that already has datapoints).
Teachers on a virtual interface (``benchmark``) make no calls: their datapoints come from
``coeval ingest``. A task with its own ``data`` gets its rows instead (:mod:`.own_data`).

A lowered ``sampling.total`` (drift let through with ``--allow-drift``) leaves the datapoints
above the slots (:func:`beyond_slots`) on disk, and the run, ``coeval status`` and ``coeval
analyze`` leave them out with their answers and judgments; so are those whose rows left a
task's data file. Datapoints no config teacher wrote
by slot (a task's own data, a benchmark teacher's, a teacher the config lacks) never are.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import attrs

from coeval.config.model import ModelConfig, TaskConfig
from coeval.interfaces.base import GenerateRequest
from coeval.phase_ids import DATA_GENERATION, RUBRIC_MAPPING, SHORT_TITLES, TITLES
from coeval.phases._items import LazyItems, mode_refusal
from coeval.phases._sampling import AttributeDraw, AttributeSampler
from coeval.phases.base import PhaseContext, PhaseRefusedError, RunView, Survey
from coeval.phases.item_gate import gate_for
from coeval.phases.own_data import left_out_rows, survey_task_data, write_task_data
from coeval.phases.plans import PlannedCalls, plan_data_generation
from coeval.prompts import render_prompt
from coeval.prompts.schemas import DATAPOINT_SCHEMA, parse_datapoint
from coeval.quality import ItemGate
from coeval.record_schema import (
    ERROR_KIND,
    GENERATED_AT,
    ID,
    PROMPT,
    REFERENCE_RESPONSE,
    SAMPLED_NUANCED_ATTRIBUTES,
    SAMPLED_TARGET_ATTRIBUTES,
    TASK_ID,
    TEACHER_MODEL_ID,
)
from coeval.scheduler.work import WorkItem, WorkOutcome
from coeval.storage.records import (
    above_slots,
    call_fields,
    datapoint_id,
    is_ok,
    load_file_records,
    record_status,
    utc_now,
)

__all__ = ["DataGenerationPhase", "above_slots_test", "beyond_slots", "sampler_for", "slot_counts"]


def sampler_for(view: RunView, task: TaskConfig, teacher: str) -> AttributeSampler | None:
    """The attribute sampler of (task, teacher), or None while phase 1 has no artifact."""
    target = view.target_attributes(task)
    nuanced = view.nuanced_attributes(task)
    if target is None:
        return None
    return AttributeSampler(
        target_attributes=target,
        nuanced_attributes=nuanced or {},
        sampling=task.sampling,
        seed=view.config.experiment.seed,
        task=task.name,
        teacher=teacher,
        complete=task.target_attributes == "complete",
        always_include=task.label_attributes,
    )


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
    """Ids of the ``datapoints`` above the slots of their (task, teacher), and of those whose
    rows left their task's data file (:func:`~coeval.phases.own_data.left_out_rows`)."""
    slots = slot_counts(view) if slots is None else slots
    rows_gone = left_out_rows(view.run)
    return {str(dp[ID]) for dp in datapoints
            if above_slots(slots, str(dp.get(TASK_ID)), str(dp.get(TEACHER_MODEL_ID)), str(dp.get(ID, "")))
            or str(dp.get(ID, "")) in rows_gone}


def above_slots_test(view: RunView) -> Callable[[str, str], bool]:
    """``above(datapoint_id, task)``: True for a config teacher's datapoint above its slots
    (a lowered ``sampling.total``), told from the id alone, so answers can be filtered as
    they stream without reading their datapoints."""
    slots = slot_counts(view)
    rows_gone = left_out_rows(view.run)

    def above(datapoint: str, task: str) -> bool:
        if datapoint in rows_gone:
            return True
        head = f"{task}__"
        if not datapoint.startswith(head):
            return False
        teacher = datapoint[len(head):].rpartition("__")[0]  # ids are {task}__{teacher}__{seq}
        return above_slots(slots, task, teacher, datapoint)

    return above


def _attrs_text(values: dict[str, str]) -> str:
    return json.dumps(values, ensure_ascii=False) if values else "(none)"


@attrs.frozen
class _Slot:
    task: TaskConfig
    teacher: ModelConfig
    seq: int
    draw: AttributeDraw


@attrs.frozen
class _Owed:
    """One (task, teacher) whose slots are still to fill: its sampler and the records it has."""

    task: TaskConfig
    teacher: ModelConfig
    sampler: AttributeSampler
    records: Mapping[str, Any]

    def slots(self) -> Iterator[_Slot]:
        task, teacher, records = self.task, self.teacher, self.records
        for seq in range(1, self.sampler.slots() + 1):
            if is_ok(records.get(datapoint_id(task.name, teacher.name, seq))):
                continue
            yield _Slot(task, teacher, seq, self.sampler.draw(seq))

    def count(self) -> int:
        if not self.records:
            return self.sampler.slots()
        task, teacher, records = self.task, self.teacher, self.records
        return sum(1 for seq in range(1, self.sampler.slots() + 1)
                   if not is_ok(records.get(datapoint_id(task.name, teacher.name, seq))))


class DataGenerationPhase:
    name = DATA_GENERATION
    #: the models it calls
    roles = ("teacher",)
    after: tuple[str, ...] = (RUBRIC_MAPPING,)
    modes: tuple[str, ...] = ("New", "Keep", "Extend", "Model")
    title = TITLES[DATA_GENERATION]
    short = SHORT_TITLES[DATA_GENERATION]

    def plan(self, view: RunView) -> PlannedCalls:
        return plan_data_generation(view, self.name)

    def survey(self, view: RunView) -> Survey:
        s = Survey(self.name)
        survey_task_data(view, s)
        for task in view.config.tasks:
            if task.data is not None:
                continue  # its datapoints are its data's rows, surveyed above
            for teacher in view.callable_models("teacher"):
                counts = s.group(teacher.name)
                sampler = sampler_for(view, task, teacher.name)
                slots = sampler.slots() if sampler is not None else task.sampling.total
                if sampler is None:
                    s.notes.append(f"{task.name}: no attributes yet (phase 1 incomplete)")
                records = load_file_records(view.run.datapoints_path(task.name, teacher.name))
                counts.expected += slots
                for seq in range(1, slots + 1):
                    rec = records.get(datapoint_id(task.name, teacher.name, seq))
                    if rec is None:
                        continue
                    if record_status(rec) == "ok":
                        counts.ok += 1
                    else:
                        counts.failed += 1
                        s.failures[str(rec.get(ERROR_KIND) or "error")] += 1
        return s

    def _phase_has_records(self, view: RunView) -> bool:
        tasks = {t.name for t in view.config.tasks}
        return any(rec.get(TASK_ID) in tasks for rec in view.run.iter_records(self.name))

    def owed(
        self,
        view: RunView,
        mode: str,
        in_scope: Callable[[str], bool],
        *,
        log: Any = None,
        gate: ItemGate | None = None,
        unplanned: dict[tuple[str, str], int] | None = None,
    ) -> list[_Slot]:
        """The slots ``mode`` asks for: what ``run`` calls, and what the estimate of remaining
        work counts. ``unplanned`` receives (task, teacher) -> slots that wait for phase 1."""
        groups = self._owed_groups(view, mode, in_scope, log=log, gate=gate, unplanned=unplanned)
        return [slot for group in groups for slot in group.slots()]

    def _owed_groups(
        self,
        view: RunView,
        mode: str,
        in_scope: Callable[[str], bool],
        *,
        log: Any = None,
        gate: ItemGate | None = None,
        unplanned: dict[tuple[str, str], int] | None = None,
    ) -> list[_Owed]:
        """Per (task, teacher) with slots to fill, what it has: its slots are listed lazily
        (:meth:`_Owed.slots`), so a phase of a million datapoints holds none of them. A mode
        that refuses the phase raises here, before any call."""
        if mode == "Keep" and self._phase_has_records(view):
            if log is not None:
                log.info("phase kept: datapoints exist", phase=self.name)
            return []
        groups: list[_Owed] = []
        for task in view.config.tasks:
            if task.data is not None:
                continue  # written from its data file; teachers write none
            for teacher in view.callable_models("teacher"):
                if not in_scope(teacher.name):
                    continue
                path = view.run.datapoints_path(task.name, teacher.name)
                records = load_file_records(path)
                if records and mode == "Model":
                    continue
                if records and mode == "New":
                    raise PhaseRefusedError(mode_refusal(self.name, f"{task.name} x {teacher.name} ({path.name})"))
                sampler = sampler_for(view, task, teacher.name)
                if sampler is None:
                    if log is not None:
                        log.warning("no attributes for task yet; its datapoints wait for phase 1",
                                    phase=self.name, task=task.name)
                    if unplanned is not None:
                        unplanned[(task.name, teacher.name)] = task.sampling.total
                    continue
                if gate is not None:
                    gate.remember(task.name, teacher.name,
                                  (str(r.get(PROMPT, "")) for r in records.values() if is_ok(r)))
                groups.append(_Owed(task, teacher, sampler, records))
        return groups

    async def run(self, ctx: PhaseContext) -> None:
        kept = ctx.mode == "Keep" and self._phase_has_records(ctx)
        gate = gate_for(ctx)
        groups = self._owed_groups(ctx, ctx.mode, ctx.in_scope, log=ctx.log, gate=gate)
        if kept:
            return
        write_task_data(ctx)
        total = sum(group.count() for group in groups)
        ctx.log.info("phase planned", phase=self.name, mode=ctx.mode, items=total)
        try:
            await ctx.submit(self.name, LazyItems(  # type: ignore[arg-type]
                lambda: (slot for group in groups for slot in group.slots()), lambda s: self._item(ctx, s, gate), total))
        finally:
            gate.close()

    def _item(self, ctx: PhaseContext, slot: _Slot, gate: ItemGate) -> WorkItem:
        task, teacher = slot.task, slot.teacher
        variables = {
            "task_name": task.name,
            "task_description": task.description.strip(),
            "output_description": task.output_description.strip(),
            "target_attributes": _attrs_text(slot.draw.target),
            "nuanced_attributes": _attrs_text(slot.draw.nuanced),
        }
        prompt = render_prompt("sample", variables, prompt_library=task.prompt_library, model_name=teacher.name)
        dp_id = datapoint_id(task.name, teacher.name, slot.seq)
        return WorkItem(
            key=dp_id,
            phase=self.name,
            model=teacher,
            request=GenerateRequest(
                prompt=prompt,
                params=teacher.params_for("teacher"),
                role="teacher",
                json_schema=DATAPOINT_SCHEMA,
                schema_name="datapoint",
            ),
            parse=lambda result: gate.datapoint(task, teacher.name, parse_datapoint(result.text), result.text),
            on_done=self._on_done(ctx, slot, dp_id),
            meta={"task": task.name, "teacher": teacher.name, "seq": slot.seq},
        )

    def _on_done(self, ctx: PhaseContext, slot: _Slot, dp_id: str) -> Callable[[WorkOutcome], None]:
        path = ctx.run.datapoints_path(slot.task.name, slot.teacher.name)

        def done(outcome: WorkOutcome) -> None:
            if outcome.status != "skipped":
                value: dict[str, Any] = outcome.value if outcome.status == "ok" else {}
                record: dict[str, Any] = {
                    ID: dp_id,
                    TASK_ID: slot.task.name,
                    TEACHER_MODEL_ID: slot.teacher.name,
                    SAMPLED_TARGET_ATTRIBUTES: slot.draw.target,
                }
                if slot.task.store_nuanced:
                    record[SAMPLED_NUANCED_ATTRIBUTES] = slot.draw.nuanced
                record[PROMPT] = value.get("prompt", "")
                record[REFERENCE_RESPONSE] = value.get("response", "")
                record[GENERATED_AT] = utc_now()
                record.update(call_fields(outcome))
                ctx.writers.write(path, record)
            ctx.outcome(outcome)

        return done
