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

import copy
import functools
import mmap
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

from coeval.config.model import ModelConfig, TaskConfig
from coeval.evaluators.base import (
    EvaluationCall,
    EvaluationFailed,
    EvaluationRequest,
    Evaluator,
    ModelFreeEvaluator,
    Scorer,
    Scoring,
    as_evaluator,
)
from coeval.evaluators.metric import metric_factors
from coeval.evaluators.routing import judge_factors, routed_to
from coeval.phase_ids import DATA_GENERATION, EVALUATION, RESPONSE_COLLECTION, SHORT_TITLES, TITLES
from coeval.phases._evaluation_inputs import Datapoints, EvaluationState
from coeval.phases._evaluation_records import call_record, model_free_record
from coeval.phases._evaluation_survey import Brief, SurveyState
from coeval.phases._items import LazyItems, LazySpecs, count_later, mode_refusal, then
from coeval.phases.base import PhaseContext, PhaseError, PhaseRefusedError, RunView, Survey
from coeval.phases.evaluation_rounds import adaptive_settings, run_rounds
from coeval.phases.plans import PlannedCalls, plan_evaluation
from coeval.record_schema import (
    DATAPOINT_ID,
    ID,
    JUDGE_MODEL_ID,
    RESPONSE_ID,
    SCORES,
    STUDENT_MODEL_ID,
    TASK_ID,
    TEACHER_MODEL_ID,
)
from coeval.scheduler.work import WorkItem, WorkOutcome
from coeval.storage.record_inputs import stale_evaluation
from coeval.storage.records import OK, evaluation_id, record_status

__all__ = ["EvaluationPhase", "judge_factors"]

#: Kept for code (and tests) written against the earlier private name.
_SurveyState = SurveyState


def _records_of(index: int, counts: list[tuple[int, int]]) -> int:
    return counts[index][0]


def _holds(path: Any, keys: list[bytes]) -> bool:
    with open(path, "rb") as f:
        try:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file
            return False
        with data:
            return any(data.find(key) >= 0 for key in keys)


def _covers(rec: Mapping[str, Any] | None, factors: Sequence[str]) -> bool:
    """An ok record whose scores include every factor."""
    if rec is None or record_status(rec) != OK:
        return False
    scores = rec.get(SCORES)
    return isinstance(scores, Mapping) and all(f in scores for f in factors)


def _evaluators(view: RunView) -> list[Evaluator]:
    return [as_evaluator(entry.value) for entry in view.registries.evaluators]


class _Plan:
    """Each evaluator's factors and scorers, asked once per task where the evaluator says its
    factors do not depend on the datapoint (``factors_per_task``), else once per datapoint."""

    def __init__(self, view: RunView, evaluators: list[Evaluator]) -> None:
        self.evaluators = evaluators
        self.judges = view.callable_models("judge")
        self.run = view.run
        self._factors: dict[tuple[int, str], list[str]] = {}
        self._scorers: dict[tuple[int, str, tuple[str, ...]], list[Scorer]] = {}
        self._applies: dict[tuple[int, str], bool] = {}
        self._carried: dict[tuple[str, ...], bool] = {}

    def applies(self, index: int, task: TaskConfig, rubric: Mapping[str, Any]) -> bool:
        """False when evaluator ``index`` says it scores nothing of ``task`` whatever the
        datapoint (its ``applies(task, rubric)``), or when it scores only datapoints that carry
        one of its ``datapoint_fields`` and no datapoint file holds any of them: then no
        datapoint need be read for it."""
        key = (index, task.name)
        found = self._applies.get(key)
        if found is None:
            ev = self.evaluators[index]
            hook = getattr(ev, "applies", None)
            found = bool(hook(task, rubric)) if callable(hook) else True
            fields = getattr(ev, "datapoint_fields", None)
            if found and fields:
                found = self.carried(tuple(fields))
            self._applies[key] = found
        return found

    def carried(self, fields: tuple[str, ...]) -> bool:
        """Whether any datapoint file holds one of ``fields`` as a JSON key (a byte search, no
        parse: a phase of millions of judgments reads no datapoint for an evaluator of
        benchmark items when the run has none)."""
        found = self._carried.get(fields)
        if found is None:
            keys = [b'"' + f.encode() + b'"' for f in fields]
            found = self._carried[fields] = any(_holds(path, keys) for path in self.run.jsonl_files(DATA_GENERATION))
        return found

    def may_owe(self, index: int, tasks: Sequence[TaskConfig], state: EvaluationState) -> bool:
        """Whether evaluator ``index`` may score something of a task that has a rubric (told
        without reading a datapoint: an evaluator whose factors depend on the datapoint may)."""
        per_task = getattr(self.evaluators[index], "factors_per_task", False)
        for task in tasks:
            rubric = state.rubric(task)
            if rubric is not None and self.applies(index, task, rubric) and (
                    not per_task or self.scorers(index, task, rubric, {})):
                return True
        return False

    def task_level(self, task: TaskConfig, rubric: Mapping[str, Any]) -> bool:
        """Whether every evaluator's scorers for ``task`` are the same for each datapoint."""
        return all(getattr(ev, "factors_per_task", False) or not self.applies(i, task, rubric)
                   for i, ev in enumerate(self.evaluators))

    def scorers(self, index: int, task: TaskConfig, rubric: Mapping[str, Any], dp: Mapping[str, Any]) -> list[Scorer]:
        ev = self.evaluators[index]
        if not self.applies(index, task, rubric):
            return []
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


class _Owed:
    """The scorings a mode asks for, per evaluator, listed afresh on each pass: a phase of
    millions of judgments holds its responses, not a scoring per judgment. A mode that
    refuses the phase (New over records) raises on construction, before any call."""

    def __init__(self, phase: EvaluationPhase, view: RunView, mode: str, in_scope: Callable[[str], bool],
                 state: EvaluationState, evaluators: list[Evaluator], existing: list[dict[str, Any]]) -> None:
        self.phase, self.mode, self.in_scope, self.state = phase, mode, in_scope, state
        self.plan = _Plan(view, evaluators)
        self.groups_with_records = phase._groups(state, existing) if existing else set()
        self.any_existing = bool(existing)
        #: ids of stale ok records listed for scoring again: the new record replaces the old line
        self.replacing: set[str] = set()
        if mode == "New" and self.groups_with_records:
            for index in range(len(evaluators)):
                for _ in self.scorings(index):
                    pass

    def scorings(self, index: int, log: Any = None) -> Iterator[Scoring]:
        """Evaluator ``index``'s scorings this mode asks for (in scope, not yet covered)."""
        groups, mode, in_scope, evaluations = self.groups_with_records, self.mode, self.in_scope, self.state.evaluations
        stale = 0
        for _, scoring in self.phase._expected(self.plan, self.state, index):
            scorer, resp = scoring.scorer, scoring.response
            if scorer.model is not None and not in_scope(scorer.model.name):
                continue
            if groups:
                key = (scoring.task.name, resp.get(TEACHER_MODEL_ID), scorer.name, resp.get(STUDENT_MODEL_ID))
                if key in groups:
                    if mode == "Model":
                        continue
                    if mode == "New" and scorer.model is not None:
                        raise PhaseRefusedError(mode_refusal(self.phase.name, f"{key[0]} x {key[1]} x {key[2]}"))
            recorded = evaluations.get(scoring.record_id) if evaluations else None
            if _covers(recorded, scorer.factors):
                assert recorded is not None
                if not stale_evaluation(recorded, resp):
                    continue
                stale += 1
                self.replacing.add(scoring.record_id)
            yield scoring
        if stale and log is not None:
            log.warning(f"{stale} judgments scored an older version of their answer; scoring again",
                        phase=self.phase.name, stale=stale)

    async def in_rounds(self, ctx: PhaseContext, adaptive: Mapping[str, Any]) -> None:
        """The evaluators that call models, in rounds over their full grid (:mod:`.evaluation_rounds`)."""
        plan, calling = self.plan, [i for i, ev in enumerate(self.plan.evaluators) if not isinstance(ev, ModelFreeEvaluator)]
        grid = [scoring for i in calling for _, scoring in self.phase._expected(plan, self.state, i)]  # recorded or not
        await run_rounds(ctx, adaptive, grid, calling, self.scorings,
                         lambda i, batch: self.phase._evaluate(ctx, plan.evaluators[i], batch, self.replacing))

    def counts(self) -> list[tuple[int, int]]:
        """Per evaluator, (scorings, those that call a model), without listing them where
        the phase has no records yet: then the answers' ids tell how many each task and
        datapoint has, and each task's scorers (or, for an evaluator whose factors depend on
        the datapoint, each datapoint's, read one file at a time) how many records each owes."""
        plan, state, in_scope = self.plan, self.state, self.in_scope
        indexes = range(len(plan.evaluators))
        if self.any_existing:
            return [self._listed(index) for index in indexes]

        def wanted(scorers: list[Scorer]) -> tuple[int, int]:
            kept = [s for s in scorers if s.model is None or in_scope(s.model.name)]
            return len(kept), sum(1 for s in kept if s.model is not None)

        per_dp = state.usable_per_datapoint()
        per_task: Counter[str] = Counter()
        for (name, _), n in per_dp.items():
            per_task[name] += n
        out = [[0, 0] for _ in indexes]
        by_datapoint: dict[str, list[int]] = {}  # task -> the evaluators that ask each datapoint
        for name, responses in per_task.items():
            task = state.tasks[name]
            rubric = state.rubric(task)
            if rubric is None:
                continue
            for index in indexes:
                if getattr(plan.evaluators[index], "factors_per_task", False) or not plan.applies(index, task, rubric):
                    each, each_model = wanted(plan.scorers(index, task, rubric, {}))
                    out[index][0] += responses * each
                    out[index][1] += responses * each_model
                else:
                    by_datapoint.setdefault(name, []).append(index)
        if by_datapoint:
            seen: set[tuple[str, str]] = set()
            for dp in state.each_datapoint():
                key = (str(dp.get(TASK_ID)), str(dp.get(ID)))
                if key[0] not in by_datapoint or key not in per_dp or key in seen:
                    continue
                seen.add(key)
                self._add(out, by_datapoint[key[0]], key[0], dp, per_dp[key], wanted)
            for key, n in per_dp.items():  # answers whose datapoint is missing
                if key[0] in by_datapoint and key not in seen:
                    self._add(out, by_datapoint[key[0]], key[0], {}, n, wanted)
        return [(n, n_model) for n, n_model in out]

    def _add(self, out: list[list[int]], indexes: list[int], task_name: str, dp: Mapping[str, Any], answers: int,
             wanted: Callable[[list[Scorer]], tuple[int, int]]) -> None:
        task = self.state.tasks[task_name]
        rubric = self.state.rubric(task)
        assert rubric is not None
        for index in indexes:
            each, each_model = wanted(self.plan.scorers(index, task, rubric, dp))
            out[index][0] += answers * each
            out[index][1] += answers * each_model

    def _listed(self, index: int) -> tuple[int, int]:
        n = n_model = 0
        for scoring in self.scorings(index):
            n += 1
            n_model += scoring.scorer.model is not None
        return n, n_model


def _record_id(scoring: Scoring) -> str:
    """A scoring's judgment id: its item's key, known before its judge prompt is rendered."""
    return scoring.record_id


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
    def _expected(plan: _Plan, state: EvaluationState, only: int | None = None) -> Iterator[tuple[int, Scoring]]:
        """(evaluator index, scoring) of every record the config expects (of evaluator
        ``only`` alone when given)."""
        indexes = range(len(plan.evaluators)) if only is None else (only,)
        for resp in state.responses:
            task = state.tasks[resp[TASK_ID]]
            rubric = state.rubric(task)
            if rubric is None:
                continue
            dp = state.datapoint_of(resp)
            for index in indexes:
                for scorer in plan.scorers(index, task, rubric, dp):
                    rid = evaluation_id(resp[ID], scorer.name, scorer.factor)
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
            task = state.tasks[resp[TASK_ID]]
            rubric = state.rubric(task)
            if rubric is None:
                continue
            dp = {} if plan.task_level(task, rubric) else state.datapoints.get(str(resp.get(DATAPOINT_ID)), {})
            rid = resp[ID]
            for index in range(len(plan.evaluators)):
                for scorer in plan.scorers(index, task, rubric, dp):
                    if state.scope is not None and not state.scope.wants(resp, scorer):  # adaptive: what it asked
                        continue
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
            by_task[resp[TASK_ID]].append(resp)
        for task_name, responses in by_task.items():
            task = state.tasks[task_name]
            rubric = state.rubric(task)
            if rubric is None:
                continue
            # responses grouped by their evaluators' scorer lists (one list per task, usually)
            ids_of: dict[int, tuple[list[Scorer], list[bytes]]] = {}
            if plan.task_level(task, rubric):  # the same scorers for every answer: listed once
                rids = [resp[ID].encode() for resp in responses]
                for index in range(len(plan.evaluators)):
                    if scorers := plan.scorers(index, task, rubric, {}):
                        ids_of.setdefault(id(scorers), (scorers, []))[1].extend(rids)
            else:
                for resp in responses:
                    dp = state.datapoints.get(str(resp.get(DATAPOINT_ID)), {})
                    rid = resp[ID].encode()
                    for index in range(len(plan.evaluators)):
                        if scorers := plan.scorers(index, task, rubric, dp):
                            ids_of.setdefault(id(scorers), (scorers, []))[1].append(rid)
            pairs = [(scorer, ids) for scorers, ids in ids_of.values() for scorer in scorers]
            pairs = state.scope.keep(pairs, responses) if state.scope is not None else pairs  # adaptive: what it asked
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
        existing = [e for e in state.evaluations.values() if e.get(TASK_ID) in state.tasks]
        if ctx.mode == "Keep" and existing:
            ctx.log.info("phase kept: evaluations exist", phase=self.name)
            return
        owed = _Owed(self, ctx, ctx.mode, ctx.in_scope, state, evaluators, existing)
        # What the phase owes is counted in a thread while the calls go out (a pass over every
        # answer: seconds at millions of judgments); progress gets its total when it is known.
        counter = copy.copy(owed)  # its own datapoint reader and plan: the listing uses owed's
        counter.state = copy.copy(state)
        if isinstance(state.datapoints, Datapoints):
            counter.state.datapoints = Datapoints(ctx.run)
        counter.plan = _Plan(ctx, evaluators)
        counter.state.stop = stop = threading.Event()

        def count() -> list[tuple[int, int]]:
            counts = counter.counts()
            calls = sum(n_model for _, n_model in counts)
            ctx.log.info("phase planned", phase=self.name, mode=ctx.mode, judge_calls=calls,
                         evaluator_records=sum(n for n, _ in counts) - calls)
            return counts

        counts = count_later(count, start=ctx.first_done, deferred=not ctx.wants_totals)
        # model-free evaluators first: their records are written in seconds
        order = sorted(range(len(evaluators)), key=lambda i: not isinstance(evaluators[i], ModelFreeEvaluator))
        tasks = list(state.tasks.values())
        adaptive = adaptive_settings(ctx)  # an adaptive run's evaluators that call models go in rounds
        order = [i for i in order if not adaptive or isinstance(evaluators[i], ModelFreeEvaluator)]
        try:
            for index in order:
                if not owed.plan.may_owe(index, tasks, state):
                    continue
                total = then(counts, functools.partial(_records_of, index))
                if total.done() and not total.exception() and not total.result():
                    continue  # counted already: nothing owed
                scorings = LazySpecs(functools.partial(owed.scorings, index, ctx.log), total)
                await self._evaluate(ctx, evaluators[index], scorings, owed.replacing)
            if adaptive:
                await owed.in_rounds(ctx, adaptive)
        finally:
            stop.set()  # a count still running is not wanted any more

    def owed(self, view: RunView, mode: str, in_scope: Callable[[str], bool]) -> list[Scoring]:
        """The scorings ``mode`` asks for (what ``run`` hands the evaluators), for the
        estimate of remaining work; [] when the mode keeps the phase."""
        state = EvaluationState(view)
        existing = [e for e in state.evaluations.values() if e.get(TASK_ID) in state.tasks]
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
        return self._groups(state, [e for e in state.evaluations.values() if e.get(TASK_ID) in state.tasks])

    @staticmethod
    def _groups(state: EvaluationState, existing: list[dict[str, Any]]) -> set[tuple[Any, Any, Any, Any]]:
        return {
            (e.get(TASK_ID), e.get(TEACHER_MODEL_ID), e.get(JUDGE_MODEL_ID), e.get(STUDENT_MODEL_ID)
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
        owed = _Owed(self, view, mode, in_scope, state, evaluators, existing)
        return [list(owed.scorings(index, log)) for index in range(len(evaluators))]

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

    async def _evaluate(self, ctx: PhaseContext, ev: Evaluator, scorings: Sequence[Scoring],
                        replacing: Collection[str] = frozenset()) -> None:
        """Hand one evaluator the scorings it owes; write the records it returns (replacing
        the stale ones of the ids in ``replacing``)."""

        async def submit(batch: Sequence[Scoring], build: Callable[[Scoring], EvaluationCall]) -> None:
            await ctx.submit(self.name, LazyItems(batch, lambda s: self._item(ctx, ev, s, build(s), replacing),  # type: ignore[arg-type]
                                                  key=_record_id))

        try:
            results = await ev.evaluate(EvaluationRequest(scorings), submit)
        except (PhaseError, OSError):  # a full disk is the runner's to report, as in every phase
            raise
        except Exception as exc:
            raise PhaseError(f"evaluator {ev.name!r} failed: {type(exc).__name__}: {exc}") from exc
        if len(results) != len(scorings):
            raise PhaseError(f"evaluator {ev.name!r} returned {len(results)} results for {len(scorings)} scorings")
        if all(result is None for result in results):
            return  # every record was written as its call finished: no second pass over the scorings
        logged: set[tuple[str, str]] = set()
        for scoring, result in zip(scorings, results, strict=True):
            if result is None:
                continue
            dp_id = str(scoring.response.get(DATAPOINT_ID))
            if isinstance(result, EvaluationFailed) and (dp_id, result.error) not in logged:
                logged.add((dp_id, result.error))
                ctx.log.warning("evaluator failed", evaluator=ev.name, datapoint=dp_id, error=result.error)
            if not ctx.writers.write(self._path(ctx, scoring), model_free_record(ev, scoring, result),
                                     replaces=scoring.record_id in replacing):
                continue  # a pipelined phase's earlier pass wrote it
            if ctx.result is not None:
                if isinstance(result, EvaluationFailed):
                    ctx.result.failed += 1
                else:
                    ctx.result.written += 1

    @staticmethod
    def _path(ctx: PhaseContext, scoring: Scoring) -> Any:
        teacher = str(scoring.response.get(TEACHER_MODEL_ID))
        return ctx.run.evaluations_path(scoring.task.name, teacher, scoring.scorer.file_name)

    def _item(self, ctx: PhaseContext, ev: Evaluator, scoring: Scoring, call: EvaluationCall,
              replacing: Collection[str] = frozenset()) -> WorkItem:
        model = scoring.scorer.model
        if not isinstance(model, ModelConfig):
            raise PhaseError(f"evaluator {ev.name!r} submitted scorer {scoring.scorer.name!r}, which names no model")
        path = self._path(ctx, scoring)

        def done(outcome: WorkOutcome) -> None:
            if outcome.status != "skipped":
                ctx.writers.write(path, call_record(ev, scoring, call, outcome),
                                  replaces=scoring.record_id in replacing)
            ctx.outcome(outcome)

        return WorkItem(key=scoring.record_id, phase=self.name, model=model, request=call.request,
                        parse=call.parse, on_done=done, meta=dict(call.meta))


def _student_of(evaluation: Mapping[str, Any], state: EvaluationState) -> Any:
    """Old records have no student_model_id: recover it from the response they score."""
    resp = state.all_responses.get(str(evaluation.get(RESPONSE_ID)))
    return resp.get(STUDENT_MODEL_ID) if resp else None
