"""Phase 5: every registered evaluator scores every usable response.

For each response that is ``ok`` and non-empty (failed ones are never scored), each
evaluator (:class:`coeval.evaluators.base.Evaluator`) says which factors it scores and
which records it owes (its scorers): the LLM judge (``llm_judge``) one per judge model, in
``single`` mode (record ``{response_id}__{judge}``) or ``per_factor`` mode (record
``{response_id}__{judge}__{factor}``); model-free evaluators (``label``, ``metric``,
``gold``) and plugin evaluators one each (``{response_id}__{evaluator}``). A rubric factor
goes to the judge unless it names another evaluator (``evaluator:``), a metric or a label
attribute (:mod:`coeval.evaluators.routing`).

Each evaluator is then handed the records it still owes, all at once; model-free ones run
first. Those that call a model do so through the scheduler, which writes each record as its
call finishes. A ``single`` record counts as done only if it scores every current factor, so
a rubric extended after the fact gets its new factors scored.

Modes: New (nothing may exist yet), Keep (skip the phase when it has evaluations), Extend
(score what has no ``ok`` record), Model (skip a (task, teacher, scorer, student) group
that already has records: a new student, or a new judge, is scored alone).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from coeval.config.model import ModelConfig, TaskConfig
from coeval.evaluators.base import (
    EvaluationCall,
    EvaluationFailed,
    EvaluationRequest,
    Evaluator,
    Scorer,
    Scoring,
    as_evaluator,
)
from coeval.evaluators.metric import metric_factors
from coeval.evaluators.routing import judge_factors, routed_to
from coeval.phases._evaluation_records import call_record, model_free_record
from coeval.phases._items import LazyItems, mode_refusal
from coeval.phases.base import PhaseContext, PhaseError, PhaseRefusedError, RunView, Survey
from coeval.phases.generation import beyond_slots
from coeval.phases.plans import PlannedCalls, plan_evaluation
from coeval.storage.record_inputs import stale_evaluation
from coeval.storage.records import (
    ID_HEAD,
    OK,
    OK_TAIL,
    evaluation_id,
    load_phase_records,
    match_every_line,
    record_status,
    scan_lines,
    usable_response,
)
from coeval.scheduler.work import WorkItem, WorkOutcome
from coeval.storage.run_folder import loads_record
from coeval.phases.ids import DATA_GENERATION, EVALUATION, RESPONSE_COLLECTION, SHORT_TITLES, TITLES

__all__ = ["EvaluationPhase", "judge_factors"]

class EvaluationState:
    """The phase's inputs, loaded once per survey or run."""

    def __init__(self, view: RunView) -> None:
        self.tasks = {t.name: t for t in view.config.tasks}
        self.datapoints = load_phase_records(view.run, DATA_GENERATION)
        self.all_responses = load_phase_records(view.run, RESPONSE_COLLECTION)
        above = beyond_slots(view, self.datapoints.values())  # a lowered sampling.total leaves them out
        self.responses = [
            r for r in self.all_responses.values()
            if r.get("task_id") in self.tasks and usable_response(r) and r.get("datapoint_id") not in above
        ]
        self.evaluations = load_phase_records(view.run, EVALUATION)
        self._rubrics: dict[str, Mapping[str, Any] | None] = {}
        self.view = view

    def rubric(self, task: TaskConfig) -> Mapping[str, Any] | None:
        if task.name not in self._rubrics:
            self._rubrics[task.name] = self.view.rubric(task)
        return self._rubrics[task.name]


#: A usable (ok, non-empty) response as our writer lays it out: id, datapoint_id and
#: task_id first, an answer that starts with a visible character, status ok.
_OK_RESPONSE = (
    re.compile(rb'\n\{"id": "([^"\\\n]*)", "datapoint_id": "([^"\\\n]*)", "task_id": "([^"\\\n]*)"'),
    re.compile(rb'"response": "[^\s"\\][^\n]*' + OK_TAIL, re.M),
)
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
        self.datapoints = load_phase_records(view.run, DATA_GENERATION)
        self._shared: dict[Any, Any] = {}  # one copy of each repeated value
        self.all_responses = {}
        responses: dict[str, dict[str, Any] | None] = {}
        for path in view.run.jsonl_files(RESPONSE_COLLECTION):
            data = path.read_bytes()
            found = match_every_line(_OK_RESPONSE, data)
            if found is None:
                scan_lines(data, self._brief_response, responses)
                continue
            for (rid, dp_id, task_id), _ in found:
                task = task_id.decode()
                responses[rid.decode()] = (
                    {"id": rid.decode(), "task_id": self._shared.setdefault(task, task), "datapoint_id": dp_id.decode()}
                    if task in self.tasks else None
                )
        above = beyond_slots(view, self.datapoints.values())  # a lowered sampling.total leaves them out
        self.responses = [r for r in responses.values() if r is not None and r.get("datapoint_id") not in above]
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
        self.view = view

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

    def _brief_response(self, rec: dict[str, Any]) -> dict[str, Any] | None:
        if rec.get("task_id") not in self.tasks or not usable_response(rec):
            return None
        return {"id": rec["id"], "task_id": self._shared.setdefault(rec["task_id"], rec["task_id"]),
                "datapoint_id": rec.get("datapoint_id")}

    def _brief_evaluation(self, rec: dict[str, Any]) -> Brief:
        scores = rec.get("scores")
        factors = self._factor_set(scores) if isinstance(scores, dict) else None
        status = OK if rec.get("status") == OK or record_status(rec) == OK else "failed"
        return self._brief(status, factors, rec.get("error_kind"))

    def _add_segments(self, found: list[tuple[bytes, bytes]]) -> bool:
        """Learn the factors of each new scores segment (a few dozen in a million records)."""
        for segment in {seg for _, seg in found} - self.segment_factors.keys():
            try:
                scores = loads_record(segment)
            except ValueError:  # a brace inside a factor name cut the segment short
                return False
            self.segment_factors[segment] = self._factor_set(scores)
        return True


#: Kept for code (and tests) written against the earlier private name.
_SurveyState = SurveyState


def _covers(rec: Mapping[str, Any] | None, factors: Sequence[str]) -> bool:
    """An ok record whose scores include every factor."""
    if rec is None or record_status(rec) != OK:
        return False
    scores = rec.get("scores")
    return isinstance(scores, Mapping) and all(f in scores for f in factors)


def _evaluators(view: RunView) -> list[Evaluator]:
    return [as_evaluator(entry.value) for entry in view.registries.evaluators]


class _Plan:
    """Each evaluator's factors and scorers, asked once per task where the evaluator says its
    factors do not depend on the datapoint (``factors_per_task``), else once per datapoint."""

    def __init__(self, view: RunView, evaluators: list[Evaluator]) -> None:
        self.evaluators = evaluators
        self.judges = view.callable_models("judge")
        self._factors: dict[tuple[int, str], list[str]] = {}
        self._scorers: dict[tuple[int, str, tuple[str, ...]], list[Scorer]] = {}

    def scorers(self, index: int, task: TaskConfig, rubric: Mapping[str, Any], dp: Mapping[str, Any]) -> list[Scorer]:
        ev = self.evaluators[index]
        if getattr(ev, "factors_per_task", False):
            factors = self._factors.get((index, task.name))
            if factors is None:
                factors = self._factors[(index, task.name)] = ev.factors(task, rubric, dp)
        else:
            factors = ev.factors(task, rubric, dp)
        if not factors:
            return []
        key = (index, task.name, tuple(factors))
        scorers = self._scorers.get(key)
        if scorers is None:
            scorers = self._scorers[key] = ev.scorers(task, factors, self.judges)
        return scorers


class EvaluationPhase:
    name = EVALUATION
    #: the models it calls
    roles = ("judge",)
    after: tuple[str, ...] = (RESPONSE_COLLECTION,)
    modes: tuple[str, ...] = ("New", "Keep", "Extend", "Model")
    title = TITLES[EVALUATION]
    short = SHORT_TITLES[EVALUATION]

    def plan(self, view: RunView) -> PlannedCalls:
        return plan_evaluation(view, self.name)

    # ---- what is expected ---------------------------------------------------------------
    @staticmethod
    def _expected(plan: _Plan, state: EvaluationState) -> Iterator[tuple[int, Scoring]]:
        """(evaluator index, scoring) of every record the config expects."""
        for resp in state.responses:
            task = state.tasks[resp["task_id"]]
            rubric = state.rubric(task)
            if rubric is None:
                continue
            dp = state.datapoints.get(str(resp.get("datapoint_id")), {})
            for index in range(len(plan.evaluators)):
                for scorer in plan.scorers(index, task, rubric, dp):
                    rid = evaluation_id(resp["id"], scorer.name, scorer.factor)
                    yield index, Scoring(rid, scorer, task, rubric, dp, resp)

    def survey(self, view: RunView) -> Survey:
        s = Survey(self.name)
        state = SurveyState(view)
        for task in view.config.tasks:
            if state.rubric(task) is None:
                s.notes.append(f"{task.name}: no rubric yet (phase 2 incomplete)")
        plan = _Plan(view, _evaluators(view))
        if state.ok_segments is not None:
            self._tally_finished(s, state, plan)
            return s
        briefs: Mapping[str, Brief] = state.evaluations  # type: ignore[assignment]
        for resp in state.responses:
            task = state.tasks[resp["task_id"]]
            rubric = state.rubric(task)
            if rubric is None:
                continue
            dp = state.datapoints.get(str(resp.get("datapoint_id")), {})
            rid = resp["id"]
            for index in range(len(plan.evaluators)):
                for scorer in plan.scorers(index, task, rubric, dp):
                    counts = s.groups.get(scorer.name) or s.group(scorer.name)
                    counts.expected += 1
                    suffix = f"__{scorer.name}" if scorer.factor is None else f"__{scorer.name}__{scorer.factor}"
                    brief = briefs.get(rid + suffix)
                    if brief is None:
                        continue
                    if brief[0] == OK:
                        if brief[1] is not None and brief[1].issuperset(scorer.factors):
                            counts.ok += 1
                    else:
                        counts.failed += 1
                        s.failures[brief[2] or "error"] += 1
        return s

    @staticmethod
    def _tally_finished(s: Survey, state: SurveyState, plan: _Plan) -> None:
        """The survey of a run whose evaluations are all ok (the usual --continue of a
        finished run): ids grouped by scorer, looked up as bytes."""
        segments = state.ok_segments
        assert segments is not None
        covers: dict[tuple[bytes | None, tuple[str, ...]], bool] = {}
        by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for resp in state.responses:
            by_task[resp["task_id"]].append(resp)
        for task_name, responses in by_task.items():
            task = state.tasks[task_name]
            rubric = state.rubric(task)
            if rubric is None:
                continue
            # responses grouped by their evaluators' scorer lists (one list per task, usually)
            ids_of: dict[int, tuple[list[Scorer], list[bytes]]] = {}
            for resp in responses:
                dp = state.datapoints.get(str(resp.get("datapoint_id")), {})
                rid = resp["id"].encode()
                for index in range(len(plan.evaluators)):
                    scorers = plan.scorers(index, task, rubric, dp)
                    if scorers:
                        ids_of.setdefault(id(scorers), (scorers, []))[1].append(rid)
            pairs = [(scorer, ids) for scorers, ids in ids_of.values() for scorer in scorers]
            for scorer, ids in pairs:
                counts = s.groups.get(scorer.name) or s.group(scorer.name)
                counts.expected += len(ids)
                tail = f"__{scorer.name}" if scorer.factor is None else f"__{scorer.name}__{scorer.factor}"
                suffix = tail.encode()
                for seg, n in Counter([segments.get(i + suffix) for i in ids]).items():
                    key = (seg, scorer.factors)
                    if key not in covers:
                        covers[key] = seg is not None and state.segment_factors[seg].issuperset(scorer.factors)
                    if covers[key]:
                        counts.ok += n

    # ---- running ------------------------------------------------------------------------
    async def run(self, ctx: PhaseContext) -> None:
        state = EvaluationState(ctx)
        evaluators = _evaluators(ctx)
        self._check_names(ctx, evaluators)
        self._check_metrics(ctx, state)
        self._check_routes(ctx, state, evaluators)
        existing = [e for e in state.evaluations.values() if e.get("task_id") in state.tasks]
        if ctx.mode == "Keep" and existing:
            ctx.log.info("phase kept: evaluations exist", phase=self.name)
            return
        owed = self._owed(ctx, ctx.mode, ctx.in_scope, state, evaluators, existing, ctx.log)
        calls = sum(1 for scorings in owed for s in scorings if s.scorer.model is not None)
        ctx.log.info("phase planned", phase=self.name, mode=ctx.mode, judge_calls=calls,
                     evaluator_records=sum(len(scorings) for scorings in owed) - calls)
        # model-free evaluators first: their records are written in seconds
        order = sorted(range(len(evaluators)), key=lambda i: any(s.scorer.model is not None for s in owed[i]))
        for index in order:
            if owed[index]:
                await self._evaluate(ctx, evaluators[index], owed[index])

    def owed(self, view: RunView, mode: str, in_scope: Callable[[str], bool]) -> list[Scoring]:
        """The scorings ``mode`` asks for (what ``run`` hands the evaluators), for the
        estimate of remaining work; [] when the mode keeps the phase."""
        state = EvaluationState(view)
        existing = [e for e in state.evaluations.values() if e.get("task_id") in state.tasks]
        if mode == "Keep" and existing:
            return []
        owed = self._owed(view, mode, in_scope, state, _evaluators(view), existing)
        return [scoring for scorings in owed for scoring in scorings]

    def calls_per_response(
        self, view: RunView, task: TaskConfig, in_scope: Callable[[str], bool]
    ) -> Counter[tuple[str, str]]:
        """(scorer, model) -> calls one response of ``task`` not written yet will cost here
        (the scorers that name a model); the rubric is the run's, or the config's static one."""
        rubric = view.rubric(task)
        if rubric is None:  # phase 2 has not written it: the judge scores it, one call each
            return Counter({(j.name, j.name): 1 for j in view.callable_models("judge") if in_scope(j.name)})
        plan = _Plan(view, _evaluators(view))
        out: Counter[tuple[str, str]] = Counter()
        for index in range(len(plan.evaluators)):
            for scorer in plan.scorers(index, task, rubric, {}):
                if scorer.model is not None and in_scope(scorer.model.name):
                    out[(scorer.name, scorer.model.name)] += 1
        return out

    def groups_with_records(self, view: RunView) -> set[tuple[Any, Any, Any, Any]]:
        """(task, teacher, scorer, student) groups that have evaluation records (mode Model
        skips them)."""
        state = EvaluationState(view)
        return self._groups(state, [e for e in state.evaluations.values() if e.get("task_id") in state.tasks])

    @staticmethod
    def _groups(state: EvaluationState, existing: list[dict[str, Any]]) -> set[tuple[Any, Any, Any, Any]]:
        return {
            (e.get("task_id"), e.get("teacher_model_id"), e.get("judge_model_id"), e.get("student_model_id")
             or _student_of(e, state))
            for e in existing
        }

    def _owed(
        self,
        view: RunView,
        mode: str,
        in_scope: Callable[[str], bool],
        state: EvaluationState,
        evaluators: list[Evaluator],
        existing: list[dict[str, Any]],
        log: Any = None,
    ) -> list[list[Scoring]]:
        """Per evaluator, the scorings this mode asks for (in scope, not yet covered)."""
        groups_with_records = self._groups(state, existing)
        owed: list[list[Scoring]] = [[] for _ in evaluators]
        stale = 0
        for index, scoring in self._expected(_Plan(view, evaluators), state):
            scorer, resp = scoring.scorer, scoring.response
            if scorer.model is not None and not in_scope(scorer.model.name):
                continue
            key = (scoring.task.name, resp.get("teacher_model_id"), scorer.name, resp.get("student_model_id"))
            if key in groups_with_records:
                if mode == "Model":
                    continue
                if mode == "New" and scorer.model is not None:
                    raise PhaseRefusedError(mode_refusal(self.name, f"{key[0]} x {key[1]} x {key[2]}"))
            recorded = state.evaluations.get(scoring.record_id)
            if _covers(recorded, scorer.factors):
                assert recorded is not None
                if not stale_evaluation(recorded, resp):
                    continue
                stale += 1
            owed[index].append(scoring)
        if stale and log is not None:
            log.warning(f"{stale} judgments scored an older version of their answer; scoring again",
                        phase=self.name, stale=stale)
        return owed

    @staticmethod
    def _check_names(ctx: PhaseContext, evaluators: list[Evaluator]) -> None:
        judge_names = {m.name for m in ctx.config.models}
        for ev in evaluators:
            if ev.name in judge_names:
                raise PhaseError(
                    f"model name {ev.name!r} is also the name of the {ev.kind!r} evaluator, so their records "
                    "would share ids; rename the model"
                )

    @staticmethod
    def _check_metrics(ctx: PhaseContext, state: EvaluationState) -> None:
        """Every metric a rubric names must be registered, before any judge is called."""
        missing: dict[str, list[str]] = {}
        for task in ctx.config.tasks:
            for name in metric_factors(state.rubric(task) or {}).values():
                if name not in ctx.registries.metrics:
                    missing.setdefault(name, []).append(task.name)
        if missing:
            what = "; ".join(f"{m} (task {', '.join(sorted(set(t)))})" for m, t in sorted(missing.items()))
            raise PhaseError(f"rubric metrics not installed: {what}. pip install coeval-analysis provides bleu, "
                             "bertscore and exact_match; other metrics come from plugins (register_metrics)")

    @staticmethod
    def _check_routes(ctx: PhaseContext, state: EvaluationState, evaluators: list[Evaluator]) -> None:
        """Every evaluator a rubric factor names must be registered, before any call."""
        names = {ev.name for ev in evaluators}
        for task in ctx.config.tasks:
            for factor, spec in (state.rubric(task) or {}).items():
                wanted = routed_to(spec)
                if wanted is not None and wanted not in names:
                    raise PhaseError(f"task {task.name}: rubric factor {factor!r} names evaluator {wanted!r}, which "
                                     f"no installed plugin registers (known: {', '.join(sorted(names))})")

    async def _evaluate(self, ctx: PhaseContext, ev: Evaluator, scorings: list[Scoring]) -> None:
        """Hand one evaluator the scorings it owes; write the records it returns."""

        async def submit(batch: Sequence[Scoring], build: Callable[[Scoring], EvaluationCall]) -> None:
            await ctx.submit(self.name, LazyItems(batch, lambda s: self._item(ctx, ev, s, build(s))))  # type: ignore[arg-type]

        try:
            results = await ev.evaluate(EvaluationRequest(scorings), submit)
        except (PhaseError, OSError):  # a full disk is the runner's to report, as in every phase
            raise
        except Exception as exc:
            raise PhaseError(f"evaluator {ev.name!r} failed: {type(exc).__name__}: {exc}") from exc
        if len(results) != len(scorings):
            raise PhaseError(f"evaluator {ev.name!r} returned {len(results)} results for {len(scorings)} scorings")
        logged: set[tuple[str, str]] = set()
        for scoring, result in zip(scorings, results, strict=True):
            if result is None:
                continue
            dp_id = str(scoring.response.get("datapoint_id"))
            if isinstance(result, EvaluationFailed) and (dp_id, result.error) not in logged:
                logged.add((dp_id, result.error))
                ctx.log.warning("evaluator failed", evaluator=ev.name, datapoint=dp_id, error=result.error)
            ctx.writers.write(self._path(ctx, scoring), model_free_record(ev, scoring, result))
            if ctx.result is not None:
                if isinstance(result, EvaluationFailed):
                    ctx.result.failed += 1
                else:
                    ctx.result.written += 1

    @staticmethod
    def _path(ctx: PhaseContext, scoring: Scoring) -> Any:
        teacher = str(scoring.response.get("teacher_model_id"))
        return ctx.run.evaluations_path(scoring.task.name, teacher, scoring.scorer.file_name)

    def _item(self, ctx: PhaseContext, ev: Evaluator, scoring: Scoring, call: EvaluationCall) -> WorkItem:
        model = scoring.scorer.model
        if not isinstance(model, ModelConfig):
            raise PhaseError(f"evaluator {ev.name!r} submitted scorer {scoring.scorer.name!r}, which names no model")
        path = self._path(ctx, scoring)

        def done(outcome: WorkOutcome) -> None:
            if outcome.status != "skipped":
                ctx.writers.write(path, call_record(ev, scoring, call, outcome))
            ctx.outcome(outcome)

        return WorkItem(key=scoring.record_id, phase=self.name, model=model, request=call.request,
                        parse=call.parse, on_done=done, meta=dict(call.meta))


def _student_of(evaluation: Mapping[str, Any], state: EvaluationState) -> Any:
    """Old records have no student_model_id: recover it from the response they score."""
    resp = state.all_responses.get(str(evaluation.get("response_id")))
    return resp.get("student_model_id") if resp else None
