"""Phase 5's inputs read as it needs them: the answers one file at a time, each answer
as its ids alone where only counts are wanted, the datapoints one (task, teacher) file at
a time. A phase of millions of judgments holds none of them all at once."""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from coeval.config.model import TaskConfig
from coeval.phase_ids import DATA_GENERATION, EVALUATION, RESPONSE_COLLECTION
from coeval.phases._items import raise_if_stopped
from coeval.phases.base import RunView
from coeval.phases.generation import above_slots_test
from coeval.record_schema import DATAPOINT_ID, ID, TASK_ID, TEACHER_MODEL_ID
from coeval.storage.records import (
    OK_TAIL,
    load_file_records,
    load_phase_records,
    match_every_line,
    scan_lines,
    usable_response,
)
from coeval.storage.run_folder import RunFolder

__all__ = ["Answers", "Datapoints", "EvaluationState", "brief_answers", "read_response_file"]

#: A usable (ok, non-empty) response as our writer lays it out: id, datapoint_id and
#: task_id first, an answer that starts with a visible character, status ok.
_OK_RESPONSE = (
    re.compile(rb'\n\{"id": "([^"\\\n]*)", "datapoint_id": "([^"\\\n]*)", "task_id": "([^"\\\n]*)"'),
    re.compile(rb'"response": "[^\s"\\][^\n]*' + OK_TAIL, re.M),
)


def read_response_file(path: Path) -> Iterator[dict[str, Any]]:
    """The records of one answers file, the last per id, in file order."""
    return iter(load_file_records(path).values())


class Answers:
    """The usable answers of the config's tasks, read afresh one file at a time on each
    pass: a phase of millions of judgments never holds every answer's text."""

    def __init__(self, run: RunFolder, tasks: Mapping[str, TaskConfig], above: Callable[[str, str], bool]) -> None:
        self.files = run.jsonl_files(RESPONSE_COLLECTION)
        self.tasks = tasks
        self.above = above  # a datapoint above a lowered sampling.total: its answers are left out

    def __iter__(self) -> Iterator[dict[str, Any]]:
        tasks, above = self.tasks, self.above
        for path in self.files:
            for rec in read_response_file(path):
                if (rec.get(TASK_ID) in tasks and usable_response(rec)
                        and not above(str(rec.get(DATAPOINT_ID)), str(rec[TASK_ID]))):
                    yield rec


class Datapoints:
    """The datapoints, read when first asked for: those of one (task, teacher) file at a
    time for the answers being listed (answers come file by file, each file one teacher's),
    every one at once only for a look-up by id alone."""

    def __init__(self, run: RunFolder) -> None:
        self.run = run
        self._all: dict[str, dict[str, Any]] | None = None
        self._file: tuple[Any, dict[str, dict[str, Any]]] | None = None

    def get(self, key: str, default: Any = None) -> Any:
        if self._all is None:
            self._all = load_phase_records(self.run, DATA_GENERATION)
        return self._all.get(key, default)

    def of(self, resp: Mapping[str, Any]) -> Mapping[str, Any]:
        """The datapoint ``resp`` answers ({} when there is none)."""
        key = str(resp.get(DATAPOINT_ID))
        if self._all is not None:
            return self._all.get(key, {})
        where = (resp.get(TASK_ID), resp.get(TEACHER_MODEL_ID))
        if self._file is None or self._file[0] != where:
            path = self.run.datapoints_path(str(where[0]), str(where[1]))
            self._file = (where, load_file_records(path) if path.is_file() else {})
        found = self._file[1].get(key)
        return found if found is not None else self.get(key, {})


def brief_answers(data: bytes, tasks: Mapping[str, Any], out: dict[str, dict[str, Any] | None],
                   shared: dict[Any, Any]) -> None:
    """Each answer of one file's bytes as its ids (None when unusable or of another task),
    into ``out``: one regular expression for a file in our writer's layout, else a parse
    per line."""
    found = match_every_line(_OK_RESPONSE, data)
    if found is None:
        def brief(rec: dict[str, Any]) -> dict[str, Any] | None:
            if rec.get(TASK_ID) not in tasks or not usable_response(rec):
                return None
            return {ID: rec[ID], TASK_ID: shared.setdefault(rec[TASK_ID], rec[TASK_ID]),
                    DATAPOINT_ID: rec.get(DATAPOINT_ID)}

        scan_lines(data, brief, out)
        return
    for (rid, dp_id, task_id), _ in found:
        task = task_id.decode()
        out[rid.decode()] = (
            {ID: rid.decode(), TASK_ID: shared.setdefault(task, task), DATAPOINT_ID: dp_id.decode()}
            if task in tasks else None
        )


class EvaluationState:
    """The phase's inputs: the answers streamed file by file, the datapoints read as
    needed, the evaluations loaded once per run."""

    def __init__(self, view: RunView) -> None:
        self.tasks = {t.name: t for t in view.config.tasks}
        self.datapoints: Any = Datapoints(view.run)
        self.above = above_slots_test(view)
        self.responses: Iterable[dict[str, Any]] = Answers(view.run, self.tasks, self.above)
        self._all_responses: dict[str, dict[str, Any]] | None = None
        self.evaluations = load_phase_records(view.run, EVALUATION)
        self._rubrics: dict[str, Mapping[str, Any] | None] = {}
        self.view = view
        #: set when the phase ends: a count still reading files for it gives up (CountStopped)
        self.stop: threading.Event | None = None

    @property
    def all_responses(self) -> dict[str, dict[str, Any]]:
        """Every answer by id (read when first asked: only old records need it)."""
        if self._all_responses is None:
            self._all_responses = load_phase_records(self.view.run, RESPONSE_COLLECTION)
        return self._all_responses

    @all_responses.setter
    def all_responses(self, value: dict[str, dict[str, Any]]) -> None:
        self._all_responses = value

    def datapoint_of(self, resp: Mapping[str, Any]) -> Mapping[str, Any]:
        of = getattr(self.datapoints, "of", None)
        if callable(of):
            found: Mapping[str, Any] = of(resp)
            return found
        return self.datapoints.get(str(resp.get(DATAPOINT_ID)), {})  # type: ignore[no-any-return]

    def usable_per_datapoint(self) -> Counter[tuple[str, str]]:
        """Usable answers per (task, datapoint id), counted from their ids alone (no
        record is kept)."""
        out: Counter[tuple[str, str]] = Counter()
        tasks = {name.encode() for name in self.tasks}
        for path in self.view.run.jsonl_files(RESPONSE_COLLECTION):
            raise_if_stopped(self.stop)
            data = path.read_bytes()
            found = match_every_line(_OK_RESPONSE, data)
            if found is not None:  # our layout, every answer usable: (id, datapoint, task) bytes
                last = {rid: (task, dp) for (rid, dp, task), _ in found if task in tasks}
                for (task, dp), n in Counter(last.values()).items():
                    out[(task.decode(), dp.decode())] += n
            else:
                briefs: dict[str, Any] = {}
                brief_answers(data, self.tasks, briefs, {})
                out.update((r[TASK_ID], str(r[DATAPOINT_ID])) for r in briefs.values() if r is not None)
        for task, dp in [key for key in out if self.above(key[1], key[0])]:
            del out[(task, dp)]
        return out

    def each_datapoint(self) -> Iterator[dict[str, Any]]:
        """Every datapoint (the last per id of each file), read one file at a time."""
        for path in self.view.run.jsonl_files(DATA_GENERATION):
            raise_if_stopped(self.stop)
            yield from load_file_records(path).values()

    def rubric(self, task: TaskConfig) -> Mapping[str, Any] | None:
        if task.name not in self._rubrics:
            self._rubrics[task.name] = self.view.rubric(task)
        return self._rubrics[task.name]
