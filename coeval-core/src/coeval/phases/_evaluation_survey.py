"""Phase 5's survey inputs, small enough for a run of a million evaluations: each answer
as its ids and each evaluation as a shared brief, read with one regular expression per
file of a finished run."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from coeval.phase_ids import EVALUATION, RESPONSE_COLLECTION
from coeval.phases._evaluation_inputs import Datapoints, EvaluationState, brief_answers
from coeval.phases.base import RunView
from coeval.phases.evaluation_rounds import design_scope
from coeval.phases.generation import above_slots_test
from coeval.record_schema import DATAPOINT_ID, ERROR_KIND, SCORES, STATUS, TASK_ID
from coeval.storage.records import ID_HEAD, OK, OK_TAIL, match_every_line, record_status, scan_lines
from coeval.storage.run_folder import loads_record

__all__ = ["Brief", "SurveyState"]

#: An ok evaluation as our writer lays it out: ``{"id": ..., "scores": {...}, ..., "status": "ok"``.
_OK_EVALUATION = (ID_HEAD, re.compile(rb'"scores": (\{[^}\n]*\})[^\n]*' + OK_TAIL, re.M))

Brief = tuple[str, "frozenset[str] | None", "str | None"]


class SurveyState(EvaluationState):
    """What a survey needs, small enough for a run of a million evaluations: each response
    as its ids, each evaluation as a shared ``(status, scored factors, error kind)``.

    Files of a finished run (every line an ok record in our writer's layout) are read with
    one regular expression each instead of a JSON parse per line; any other file (failed or
    old records, a cut line) is parsed line by line, with the same result."""

    def __init__(self, view: RunView) -> None:
        self.tasks = {t.name: t for t in view.config.tasks}
        self.view = view
        self.datapoints = Datapoints(view.run)
        self.above = above_slots_test(view)
        self.scope = design_scope(view.run)  # a finished adaptive run expects only what its design asked
        self._shared: dict[Any, Any] = {}  # one copy of each repeated value
        self.all_responses = {}
        responses: dict[str, dict[str, Any] | None] = {}
        for path in view.run.jsonl_files(RESPONSE_COLLECTION):
            brief_answers(path.read_bytes(), self.tasks, responses, self._shared)
        self.responses = [r for r in responses.values()  # none above a lowered sampling.total
                          if r is not None and not self.above(str(r.get(DATAPOINT_ID)), r[TASK_ID])]
        #: When every evaluation is an ok record in our layout (a finished run): id bytes ->
        #: its scores segment, and each distinct segment's factors. Else None, and
        #: ``evaluations`` holds a brief per id.
        self.ok_segments: dict[bytes, bytes] | None = {}
        self.segment_factors: dict[bytes, frozenset[str]] = {}
        self.evaluations = {}
        files = view.run.jsonl_files(EVALUATION)
        for path in files:
            data = path.read_bytes()
            found = match_every_line(_OK_EVALUATION, data)
            if found is None or not self._add_segments(found):
                self.ok_segments = None
                break
            self.ok_segments.update(found)
        if self.ok_segments is None:
            for path in files:
                scan_lines(path.read_bytes(), self._brief_evaluation, self.evaluations)  # type: ignore[arg-type]
        self._rubrics = {}

    def _factor_set(self, scores: Mapping[str, Any]) -> frozenset[str]:
        key = tuple(scores)
        factors = self._shared.get(key)
        if factors is None:
            factors = self._shared[key] = frozenset(key)
        return factors

    def _brief(self, status: str, factors: frozenset[str] | None, kind: Any) -> Brief:
        brief = (status, factors, None if kind is None else str(kind))
        shared: Brief = self._shared.setdefault(("brief", brief), brief)
        return shared

    def _brief_evaluation(self, rec: dict[str, Any]) -> Brief:
        scores = rec.get(SCORES)
        factors = self._factor_set(scores) if isinstance(scores, dict) else None
        status = OK if rec.get(STATUS) == OK or record_status(rec) == OK else "failed"
        return self._brief(status, factors, rec.get(ERROR_KIND))

    def _add_segments(self, found: list[tuple[bytes, bytes]]) -> bool:
        """Learn the factors of each new scores segment (a few dozen in a million records)."""
        for segment in {seg for _, seg in found} - self.segment_factors.keys():
            try:
                scores = loads_record(segment)
            except ValueError:  # a brace inside a factor name cut the segment short
                return False
            self.segment_factors[segment] = self._factor_set(scores)
        return True
