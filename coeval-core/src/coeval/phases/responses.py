"""Phase 4: students answer every usable datapoint.

A datapoint is answered when it is ``ok`` with a non-empty prompt (failed or empty ones
never are), whichever teacher wrote it: config teachers, teachers of a run forked through
``resume_from``, or a benchmark ingested with ``coeval ingest``. Response ids are
``{datapoint_id}__{student}``; an empty answer is retried and then recorded as failed.

Modes: New (nothing may exist yet), Keep (skip the phase when it has responses), Extend
(answer what has no ``ok`` response), Model (skip a (task, teacher, student) group that
already has responses: adds new students, or a new teacher's datapoints, only).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import attrs

from coeval.config.model import ModelConfig, TaskConfig
from coeval.interfaces.base import GenerateRequest, GenerateResult
from coeval.phase_ids import DATA_GENERATION, RESPONSE_COLLECTION, SHORT_TITLES, TITLES
from coeval.phases._items import LazyItems, Total, count_later, mode_refusal, raise_if_stopped
from coeval.phases.base import PhaseContext, PhaseRefusedError, RunView, Survey
from coeval.phases.generation import beyond_slots, slot_counts
from coeval.phases.limit_slice import within_limit
from coeval.phases.plans import PlannedCalls, plan_response_collection
from coeval.prompts import render_prompt
from coeval.prompts.errors import OutputParseError
from coeval.record_schema import (
    DATAPOINT_ID,
    ERROR_KIND,
    GENERATED_AT,
    ID,
    INPUT,
    PROMPT,
    RESPONSE,
    SAMPLE,
    STUDENT_MODEL_ID,
    TASK_ID,
    TEACHER_MODEL_ID,
    ResponseRecord,
)
from coeval.scheduler.work import WorkItem, WorkOutcome
from coeval.storage.record_inputs import DATAPOINT_HASH, datapoint_version, stale_response
from coeval.storage.records import (
    call_fields,
    is_ok,
    load_file_records,
    load_phase_records,
    record_status,
    response_id,
    scan_ok_phase,
    usable_datapoint,
    utc_now,
)

__all__ = ["ResponseCollectionPhase", "parse_answer", "samples_of", "usable_datapoints"]


def parse_answer(result: GenerateResult) -> str:
    if not isinstance(result.text, str) or not result.text.strip():
        raise OutputParseError("empty answer")
    return result.text


def samples_of(view: RunView, datapoint: dict[str, Any]) -> int:
    """How many answers each student gives to ``datapoint`` (its task's ``samples``)."""
    for task in view.config.tasks:
        if task.name == datapoint.get(TASK_ID):
            return task.samples
    return 1


def usable_datapoints(view: RunView) -> list[dict[str, Any]]:
    """Datapoints of the config's tasks that students may answer, in file order (under
    ``--limit N``, N per (task, teacher); none above a lowered ``sampling.total``)."""
    return list(UsableDatapoints(view))


class UsableDatapoints:
    """What :func:`usable_datapoints` lists, read afresh one datapoint file at a time on each
    pass: phase 4's first call goes out once the first file is read, not all of them (the
    last record per id of each file; files are per (task, teacher), so ids do not span them)."""

    def __init__(self, view: RunView, stop: threading.Event | None = None) -> None:
        self.view = view
        self.tasks = {t.name for t in view.config.tasks}
        self.is_callable = {m.name for m in view.callable_models("teacher")}.__contains__
        self.slots = slot_counts(view)
        self.stop = stop  # set: a count for a phase that has ended gives up (CountStopped)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        view, tasks = self.view, self.tasks
        for path in view.run.jsonl_files(DATA_GENERATION):
            raise_if_stopped(self.stop)
            datapoints = load_file_records(path)
            above = beyond_slots(view, datapoints.values(), self.slots)
            usable = (dp for dp in datapoints.values()
                      if dp.get(TASK_ID) in tasks and usable_datapoint(dp) and dp.get(ID) not in above)
            yield from within_limit(view.config, usable, self.is_callable)


@attrs.frozen
class _Ask:
    task: TaskConfig
    student: ModelConfig
    datapoint: dict[str, Any]
    sample: int = 1
    replaces: bool = False  #: its ok answer is stale (made from an older datapoint): dropped once redone


@attrs.frozen
class _OwedAnswers:
    """The answers a mode asks for, listed afresh on each pass: a phase of a million answers
    holds its datapoints, not a million asks."""

    phase: str
    tasks: Mapping[str, TaskConfig]
    responses: Mapping[str, Any]  # the phase's records (empty when it has none of these tasks)
    groups_with_records: set[tuple[Any, Any, Any]]
    students: list[ModelConfig]
    datapoints: Iterable[dict[str, Any]]  # a list, or UsableDatapoints (read on each pass)
    mode: str

    def asks(self, log: Any = None) -> Iterator[_Ask]:
        responses, groups = self.responses, self.groups_with_records
        stale = 0
        for dp in self.datapoints:
            task = self.tasks[dp[TASK_ID]]
            for student in self.students:
                if self.mode == "Model" and (task.name, dp.get(TEACHER_MODEL_ID), student.name) in groups:
                    continue
                for sample in range(1, task.samples + 1):
                    rec = responses.get(response_id(dp[ID], student.name, sample)) if responses else None
                    replaces = False
                    if is_ok(rec):
                        assert rec is not None
                        if not stale_response(rec, dp):
                            continue
                        stale += 1
                        replaces = True
                    yield _Ask(task, student, dp, sample, replaces)
        if stale and log is not None:
            log.warning(f"{stale} answers were made from an older version of their datapoint; answering again",
                        phase=self.phase, stale=stale)

    def count(self) -> int:
        if not self.responses:  # nothing answered yet: every (datapoint, student, sample)
            return len(self.students) * sum(self.tasks[dp[TASK_ID]].samples for dp in self.datapoints)
        return sum(1 for _ in self.asks())


def _answer_key(ask: _Ask) -> str:
    """The id of the answer ``ask`` asks for: its item's key, known before its prompt is rendered."""
    return response_id(ask.datapoint[ID], ask.student.name, ask.sample)


class ResponseCollectionPhase:
    name = RESPONSE_COLLECTION
    #: the models it calls
    roles = ("student",)
    after: tuple[str, ...] = (DATA_GENERATION,)
    modes: tuple[str, ...] = ("New", "Keep", "Extend", "Model")
    title = TITLES[RESPONSE_COLLECTION]
    short = SHORT_TITLES[RESPONSE_COLLECTION]

    def plan(self, view: RunView) -> PlannedCalls:
        return plan_response_collection(view, self.name)

    def survey(self, view: RunView) -> Survey:
        s = Survey(self.name)
        # (status, error kind) per response: whole records of a big run would not fit
        statuses = scan_ok_phase(view.run, self.name, lambda r: (record_status(r), r.get(ERROR_KIND)), ("ok", None))
        students = view.callable_models("student")
        for dp in usable_datapoints(view):
            samples = samples_of(view, dp)
            for student in students:
                counts = s.group(student.name)
                for sample in range(1, samples + 1):
                    counts.expected += 1
                    brief = statuses.get(response_id(dp[ID], student.name, sample))
                    if brief is None:
                        continue
                    if brief[0] == "ok":
                        counts.ok += 1
                    else:
                        counts.failed += 1
                        s.failures[str(brief[1] or "error")] += 1
        return s

    def owed(self, view: RunView, mode: str, in_scope: Callable[[str], bool], *, log: Any = None) -> list[_Ask]:
        """The answers ``mode`` asks for: what ``run`` calls, and what the estimate of
        remaining work counts."""
        owed = self._owed(view, mode, in_scope, log=log)
        return list(owed.asks(log)) if owed is not None else []

    def _owed(self, view: RunView, mode: str, in_scope: Callable[[str], bool], *,
              log: Any = None) -> _OwedAnswers | None:
        """What ``mode`` asks for, its answers listed lazily; None when the mode keeps the
        phase. A mode that refuses the phase raises here, before any call."""
        tasks = {t.name: t for t in view.config.tasks}
        responses = load_phase_records(view.run, self.name)
        existing = [r for r in responses.values() if r.get(TASK_ID) in tasks]
        if mode == "Keep" and existing:
            if log is not None:
                log.info("phase kept: responses exist", phase=self.name)
            return None
        groups = {(r.get(TASK_ID), r.get(TEACHER_MODEL_ID), r.get(STUDENT_MODEL_ID)) for r in existing}
        students = [m for m in view.callable_models("student") if in_scope(m.name)]
        owed = _OwedAnswers(self.name, tasks, responses if existing else {}, groups, students,
                            UsableDatapoints(view), mode)
        if mode == "New" and groups:
            for dp in owed.datapoints:
                for student in students:
                    group = (dp[TASK_ID], dp.get(TEACHER_MODEL_ID), student.name)
                    if group in groups:
                        raise PhaseRefusedError(mode_refusal(self.name, f"{group[0]} x {group[1]} x {student.name}"))
        return owed

    async def run(self, ctx: PhaseContext) -> None:
        owed = self._owed(ctx, ctx.mode, ctx.in_scope, log=ctx.log)
        if owed is None:
            return

        stop = threading.Event()
        counter = attrs.evolve(owed, datapoints=UsableDatapoints(ctx, stop)) \
            if isinstance(owed.datapoints, UsableDatapoints) else owed

        def count() -> int:
            total = counter.count()
            ctx.log.info("phase planned", phase=self.name, mode=ctx.mode, items=total)
            return total

        # counted in a thread (a pass over every datapoint) once the first calls are made
        total: Total = count_later(count, start=ctx.first_done, deferred=not ctx.wants_totals)
        try:
            await ctx.submit(self.name, LazyItems(  # type: ignore[arg-type]
                lambda: owed.asks(ctx.log), lambda a: self._item(ctx, a), total, key=_answer_key))
        finally:
            stop.set()

    def _item(self, ctx: PhaseContext, ask: _Ask) -> WorkItem:
        dp, task, student = ask.datapoint, ask.task, ask.student
        variables = {
            "task_name": task.name,
            "task_description": task.description.strip(),
            "output_description": task.output_description.strip(),
            "input": dp[PROMPT],
        }
        prompt = render_prompt("test", variables, prompt_library=task.prompt_library, model_name=student.name)
        rid = response_id(dp[ID], student.name, ask.sample)
        return WorkItem(
            key=rid,
            phase=self.name,
            model=student,
            request=GenerateRequest(prompt=prompt, params=student.params_for("student"), role="student"),
            parse=parse_answer,
            on_done=self._on_done(ctx, ask, rid),
            meta={"task": task.name, "teacher": dp.get(TEACHER_MODEL_ID), "student": student.name},
        )

    def _on_done(self, ctx: PhaseContext, ask: _Ask, rid: str) -> Callable[[WorkOutcome], None]:
        dp = ask.datapoint
        teacher = str(dp.get(TEACHER_MODEL_ID))
        path = ctx.run.responses_path(ask.task.name, teacher, ask.student.name)

        def done(outcome: WorkOutcome) -> None:
            if outcome.status != "skipped":
                record: ResponseRecord = {
                    ID: rid,
                    DATAPOINT_ID: dp[ID],
                    TASK_ID: ask.task.name,
                    TEACHER_MODEL_ID: teacher,
                    STUDENT_MODEL_ID: ask.student.name,
                    INPUT: dp[PROMPT],
                    DATAPOINT_HASH: datapoint_version(dp),
                    RESPONSE: outcome.value if outcome.status == "ok" else "",
                    **({SAMPLE: ask.sample} if ask.task.samples > 1 else {}),
                    GENERATED_AT: utc_now(),
                    **call_fields(outcome),
                }
                ctx.writers.write(path, record, replaces=ask.replaces)
            ctx.outcome(outcome)

        return done
