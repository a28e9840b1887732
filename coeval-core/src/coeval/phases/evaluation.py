"""Phase 5: judges score every usable response; evaluators score what needs no judge.

For each response that is ``ok`` and non-empty (failed ones are never judged):

* every judge scores the rubric's *judge factors* (all factors except ``label_attributes``
  and ``{metric: ...}`` factors): ``single`` mode in one call (record
  ``{response_id}__{judge}``), ``per_factor`` mode in one call per factor (record
  ``{response_id}__{judge}__{factor}``). Replies are parsed by :mod:`coeval.judging`; one
  that cannot be read is retried and then written as ``failed``, never scored.
* every registered evaluator that applies (``label`` exact match, ``metric``) writes one
  record ``{response_id}__{evaluator}`` with scores in [0, 1], without a model call.

A ``single`` record counts as done only if it scores every current judge factor, so a
rubric extended after the fact gets its new factors scored.

Modes: New (nothing may exist yet), Keep (skip the phase when it has evaluations), Extend
(score what has no ``ok`` record), Model (skip a (task, teacher, judge, student) group that
already has records: a new student, or a new judge, is scored alone).
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from coeval.config.model import ModelConfig, TaskConfig
from coeval.evaluators.metric import metric_factors
from coeval.interfaces.base import GenerateRequest
from coeval.judging import parse_per_factor, parse_rationale, parse_single
from coeval.phases._items import LazyItems, mode_refusal
from coeval.phases.base import PhaseContext, PhaseError, PhaseRefusedError, RunView, Survey
from coeval.phases.plans import PlannedCalls, plan_evaluation
from coeval.prompts import render_prompt
from coeval.prompts.schemas import JUDGE_FACTOR_SCHEMA, judge_single_schema
from coeval.records import (
    ID_HEAD,
    OK,
    OK_TAIL,
    call_fields,
    evaluation_id,
    load_phase_records,
    match_every_line,
    record_status,
    scan_lines,
    usable_response,
    utc_now,
)
from coeval.scheduler.work import WorkItem, WorkOutcome
from coeval.storage.run_folder import loads_record

__all__ = ["EvaluationPhase", "judge_factors"]


def judge_factors(task: TaskConfig, rubric: Mapping[str, Any]) -> list[str]:
    """Rubric factors an LLM judge scores (the rest are scored without a call)."""
    metric = metric_factors(rubric)
    labels = set(task.label_attributes)
    return [str(f) for f in rubric if f not in metric and f not in labels]


def _criterion(spec: Any) -> str:
    if isinstance(spec, Mapping):
        return str(spec.get("description") or spec.get("criterion") or "")
    return str(spec)


def _covers(rec: Mapping[str, Any] | None, factors: list[str]) -> bool:
    """An ok record whose scores include every factor."""
    if rec is None or record_status(rec) != OK:
        return False
    scores = rec.get("scores")
    return isinstance(scores, Mapping) and all(f in scores for f in factors)


@attrs.frozen
class _Judgement:
    task: TaskConfig
    judge: ModelConfig
    response: dict[str, Any]
    datapoint: dict[str, Any]
    factors: tuple[str, ...]
    factor: str | None  # per_factor: the one factor; single: None
    rubric: Mapping[str, Any]


class _State:
    """The phase's inputs, loaded once per survey or run."""

    def __init__(self, view: RunView) -> None:
        self.tasks = {t.name: t for t in view.config.tasks}
        self.datapoints = load_phase_records(view.run, "data_generation")
        self.all_responses = load_phase_records(view.run, "response_collection")
        self.responses = [
            r for r in self.all_responses.values() if r.get("task_id") in self.tasks and usable_response(r)
        ]
        self.evaluations = load_phase_records(view.run, "evaluation")
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


class _SurveyState(_State):
    """What a survey needs, small enough for a run of a million evaluations: each response
    as its ids, each evaluation as a shared ``(status, scored factors, error kind)``.

    Files of a finished run (every line an ok record in our writer's layout) are read with
    one regular expression each instead of a JSON parse per line; any other file (failed or
    old records, a cut line) is parsed line by line, with the same result."""

    def __init__(self, view: RunView) -> None:
        self.tasks = {t.name: t for t in view.config.tasks}
        self.datapoints = load_phase_records(view.run, "data_generation")
        self._shared: dict[Any, Any] = {}  # one copy of each repeated value
        self.all_responses = {}
        responses: dict[str, dict[str, Any] | None] = {}
        for path in view.run.jsonl_files("response_collection"):
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
        self.responses = [r for r in responses.values() if r is not None]
        #: When every evaluation is an ok record in our layout (a finished run): id bytes ->
        #: its scores segment, and each distinct segment's factors. Else None, and
        #: ``evaluations`` holds a brief per id.
        self.ok_segments: dict[bytes, bytes] | None = {}
        self.segment_factors: dict[bytes, frozenset[str]] = {}
        self.evaluations = {}
        files = view.run.jsonl_files("evaluation")
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


def _evaluators(view: RunView) -> list[Any]:
    return [entry.value for entry in view.registries.evaluators]


class EvaluationPhase:
    name = "evaluation"
    after: tuple[str, ...] = ("response_collection",)
    modes: tuple[str, ...] = ("New", "Keep", "Extend", "Model")
    title = "5 evaluation"
    short = "5 evaluations"

    def plan(self, view: RunView) -> PlannedCalls:
        return plan_evaluation(view, self.name)

    # ---- what is expected ---------------------------------------------------------------
    def _expected(self, view: RunView, state: _State) -> Iterator[tuple[Any, ...]]:
        """Yields (group, record id, factors, response, datapoint, task, judge|evaluator, factor)."""
        judges = view.callable_models("judge")
        evaluators = _evaluators(view)
        factors_of: dict[str, list[str]] = {}  # per task: the rubric does not change per response
        for resp in state.responses:
            task = state.tasks[resp["task_id"]]
            rubric = state.rubric(task)
            if rubric is None:
                continue
            dp = state.datapoints.get(str(resp.get("datapoint_id")), {})
            factors = factors_of.get(task.name)
            if factors is None:
                factors = factors_of[task.name] = judge_factors(task, rubric)
            if factors:
                for judge in judges:
                    if task.evaluation_mode == "per_factor":
                        for f in factors:
                            yield (judge.name, evaluation_id(resp["id"], judge.name, f), [f], resp, dp, task, judge, f)
                    else:
                        yield (judge.name, evaluation_id(resp["id"], judge.name), factors, resp, dp, task, judge, None)
            for ev in evaluators:
                ev_factors = ev.factors(task, rubric, dp) if dp else []
                if ev_factors:
                    yield (ev.name, evaluation_id(resp["id"], ev.name), ev_factors, resp, dp, task, ev, None)

    def survey(self, view: RunView) -> Survey:
        s = Survey(self.name)
        state = _SurveyState(view)
        for task in view.config.tasks:
            if state.rubric(task) is None:
                s.notes.append(f"{task.name}: no rubric yet (phase 2 incomplete)")
        # the loop of _expected(), flattened: a finished run of a million evaluations is
        # surveyed on every --continue, so this runs a million times
        briefs: Mapping[str, Brief] = state.evaluations  # type: ignore[assignment]
        judges = [j.name for j in view.callable_models("judge")]
        evaluators = _evaluators(view)
        factors_of: dict[str, tuple[str, ...] | None] = {}

        def tally(group: str, rid: str, factors: tuple[str, ...]) -> None:
            counts = s.groups.get(group) or s.group(group)
            counts.expected += 1
            brief = briefs.get(rid)
            if brief is None:
                return
            if brief[0] == OK:
                if brief[1] is not None and brief[1].issuperset(factors):
                    counts.ok += 1
            else:
                counts.failed += 1
                s.failures[brief[2] or "error"] += 1

        if state.ok_segments is not None:
            self._tally_finished(s, state, judges, evaluators)
            return s
        for resp in state.responses:
            task = state.tasks[resp["task_id"]]
            if task.name not in factors_of:
                rubric = state.rubric(task)
                factors_of[task.name] = None if rubric is None else tuple(judge_factors(task, rubric))
            factors = factors_of[task.name]
            if factors is None:
                continue
            rid = resp["id"]
            if factors:
                if task.evaluation_mode == "per_factor":
                    for judge in judges:
                        for f in factors:
                            tally(judge, f"{rid}__{judge}__{f}", (f,))
                else:
                    for judge in judges:
                        tally(judge, f"{rid}__{judge}", factors)
            if evaluators:
                dp = state.datapoints.get(str(resp.get("datapoint_id")), {})
                rubric = state.rubric(task) or {}
                for ev in evaluators:
                    ev_factors = ev.factors(task, rubric, dp) if dp else []
                    if ev_factors:
                        tally(ev.name, f"{rid}__{ev.name}", tuple(ev_factors))
        return s

    @staticmethod
    def _tally_finished(s: Survey, state: _SurveyState, judges: list[str], evaluators: list[Any]) -> None:
        """The survey of a run whose evaluations are all ok (the usual --continue of a
        finished run): whole groups of ids at a time, looked up as bytes."""
        segments = state.ok_segments
        assert segments is not None
        covers: dict[tuple[bytes | None, tuple[str, ...]], bool] = {}

        def add(group: str, found: list[bytes | None], factors: tuple[str, ...]) -> None:
            counts = s.groups.get(group) or s.group(group)
            counts.expected += len(found)
            for seg, n in Counter(found).items():
                key = (seg, factors)
                if key not in covers:
                    covers[key] = seg is not None and state.segment_factors[seg].issuperset(factors)
                if covers[key]:
                    counts.ok += n

        by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for resp in state.responses:
            by_task[resp["task_id"]].append(resp)
        for task_name, responses in by_task.items():
            task = state.tasks[task_name]
            rubric = state.rubric(task)
            if rubric is None:
                continue
            factors = tuple(judge_factors(task, rubric))
            ids = [resp["id"].encode() for resp in responses]
            for judge in judges:
                if not factors:
                    break
                if task.evaluation_mode == "per_factor":
                    for f in factors:
                        suffix = f"__{judge}__{f}".encode()
                        add(judge, [segments.get(i + suffix) for i in ids], (f,))
                else:
                    suffix = f"__{judge}".encode()
                    add(judge, [segments.get(i + suffix) for i in ids], factors)
            for ev in evaluators:
                suffix = f"__{ev.name}".encode()
                for resp, i in zip(responses, ids, strict=True):
                    dp = state.datapoints.get(str(resp.get("datapoint_id")), {})
                    ev_factors = ev.factors(task, rubric, dp) if dp else []
                    if ev_factors:
                        add(ev.name, [segments.get(i + suffix)], tuple(ev_factors))

    # ---- running ------------------------------------------------------------------------
    async def run(self, ctx: PhaseContext) -> None:
        state = _State(ctx)
        judge_names = {m.name for m in ctx.config.models}
        for ev in _evaluators(ctx):
            if ev.name in judge_names:
                raise PhaseError(
                    f"model name {ev.name!r} is also the name of the {ev.kind!r} evaluator, so their records "
                    "would share ids; rename the model"
                )
        self._check_metrics(ctx, state)
        existing = [e for e in state.evaluations.values() if e.get("task_id") in state.tasks]
        if ctx.mode == "Keep" and existing:
            ctx.log.info("phase kept: evaluations exist", phase=self.name)
            return
        groups_with_records = {
            (e.get("task_id"), e.get("teacher_model_id"), e.get("judge_model_id"), e.get("student_model_id")
             or _student_of(e, state))
            for e in existing
        }
        judgements: list[_Judgement] = []
        by_evaluator: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
        evaluators = _evaluators(ctx)
        for group, rid, factors, resp, dp, task, who, factor in self._expected(ctx, state):
            is_judge = isinstance(who, ModelConfig)
            if is_judge and not ctx.in_scope(who.name):
                continue
            key = (task.name, resp.get("teacher_model_id"), group, resp.get("student_model_id"))
            if key in groups_with_records:
                if ctx.mode == "Model":
                    continue
                if ctx.mode == "New" and is_judge:
                    raise PhaseRefusedError(mode_refusal(self.name, f"{task.name} x {key[1]} x {group}"))
            if _covers(state.evaluations.get(rid), factors):
                continue
            if is_judge:
                judgements.append(
                    _Judgement(task, who, resp, dp, tuple(factors), factor, state.rubric(task) or {})
                )
            else:
                by_evaluator[(evaluators.index(who), str(resp.get("datapoint_id")))].append(resp)
        ctx.log.info("phase planned", phase=self.name, mode=ctx.mode, judge_calls=len(judgements),
                     evaluator_records=sum(len(v) for v in by_evaluator.values()))
        await self._run_evaluators(ctx, state, evaluators, by_evaluator)
        await ctx.submit(self.name, LazyItems(judgements, lambda j: self._item(ctx, j)))  # type: ignore[arg-type]

    @staticmethod
    def _check_metrics(ctx: PhaseContext, state: _State) -> None:
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

    async def _run_evaluators(
        self,
        ctx: PhaseContext,
        state: _State,
        evaluators: list[Any],
        work: Mapping[tuple[int, str], list[dict[str, Any]]],
    ) -> None:
        for (index, dp_id), responses in work.items():
            ev = evaluators[index]
            dp = state.datapoints.get(dp_id, {})
            task = state.tasks[responses[0]["task_id"]]
            rubric = state.rubric(task) or {}
            try:
                scores = await asyncio.to_thread(ev.evaluate, task, rubric, dp, responses)
                error = None
            except Exception as exc:
                scores, error = [{} for _ in responses], f"{type(exc).__name__}: {exc}"
                ctx.log.warning("evaluator failed", evaluator=ev.name, datapoint=dp_id, error=error)
            for resp, sc in zip(responses, scores, strict=True):
                record = self._record_base(resp, ev.name)
                record.update({"evaluator": ev.kind, "scores": sc, "evaluated_at": utc_now(),
                               "status": "ok" if error is None else "failed", "attempts": 0,
                               "usage": {"input_tokens": 0, "output_tokens": 0}, "cost_usd": 0.0})
                if ev.kind == "metric":
                    record["metrics"] = {f: m for f, m in metric_factors(rubric).items() if f in sc}
                if error is not None:
                    record["error"] = f"evaluator: {error}"
                    record["error_kind"] = "evaluator"
                path = ctx.run.evaluations_path(task.name, str(resp.get("teacher_model_id")), ev.name.replace(":", "-"))
                ctx.writers.write(path, record)
                if ctx.result is not None:
                    if error is None:
                        ctx.result.written += 1
                    else:
                        ctx.result.failed += 1

    @staticmethod
    def _record_base(resp: Mapping[str, Any], judge: str, factor: str | None = None) -> dict[str, Any]:
        return {
            "id": evaluation_id(resp["id"], judge, factor),
            "response_id": resp["id"],
            "datapoint_id": resp.get("datapoint_id"),
            "task_id": resp.get("task_id"),
            "teacher_model_id": resp.get("teacher_model_id"),
            "student_model_id": resp.get("student_model_id"),
            "judge_model_id": judge,
        }

    def _item(self, ctx: PhaseContext, j: _Judgement) -> WorkItem:
        task, dp, resp = j.task, j.datapoint, j.response
        variables: dict[str, Any] = {
            "task_name": task.name,
            "task_description": task.description.strip(),
            "output_description": task.output_description.strip(),
            "input": resp.get("input") or dp.get("prompt", ""),
            "response": resp.get("response", ""),
            "reference": dp.get("reference_response", ""),
            "target_attributes": dp.get("sampled_target_attributes") or {},
        }
        if j.factor is None:
            variables["rubric"] = "\n".join(f"- {f}: {_criterion(j.rubric.get(f))}" for f in j.factors)
            template, schema, schema_name = "evaluate_single", judge_single_schema(j.factors), "judge_single"
            factors = list(j.factors)

            def parse(result: Any) -> Any:
                return parse_single(result.text, factors)
        else:
            variables["factor"] = j.factor
            variables["criterion"] = _criterion(j.rubric.get(j.factor))
            template, schema, schema_name = "evaluate_per_factor", JUDGE_FACTOR_SCHEMA, "judge_factor"
            factor = j.factor

            def parse(result: Any) -> Any:
                return {factor: parse_per_factor(result.text, factor)}

        prompt = render_prompt(template, variables, prompt_library=task.prompt_library, model_name=j.judge.name)
        rid = evaluation_id(resp["id"], j.judge.name, j.factor)
        return WorkItem(
            key=rid,
            phase=self.name,
            model=j.judge,
            request=GenerateRequest(
                prompt=prompt,
                params=j.judge.params_for("judge"),
                role="judge",
                json_schema=schema,
                schema_name=schema_name,
            ),
            parse=parse,
            on_done=self._on_done(ctx, j),
            meta={"task": task.name, "judge": j.judge.name, "student": resp.get("student_model_id")},
        )

    def _on_done(self, ctx: PhaseContext, j: _Judgement) -> Callable[[WorkOutcome], None]:
        path = ctx.run.evaluations_path(j.task.name, str(j.response.get("teacher_model_id")), j.judge.name)

        def done(outcome: WorkOutcome) -> None:
            if outcome.status != "skipped":
                record = self._record_base(j.response, j.judge.name, j.factor)
                record["evaluator"] = "llm_judge"
                record["evaluation_mode"] = j.task.evaluation_mode
                if j.factor is not None:
                    record["factor"] = j.factor
                record["scores"] = dict(outcome.value) if outcome.status == "ok" else {}
                record["rationale"] = parse_rationale(outcome.raw, [j.factor] if j.factor else list(j.factors))
                record["evaluated_at"] = utc_now()
                record.update(call_fields(outcome))
                ctx.writers.write(path, record)
            ctx.outcome(outcome)

        return done


def _student_of(evaluation: Mapping[str, Any], state: _State) -> Any:
    """Old records have no student_model_id: recover it from the response they score."""
    resp = state.all_responses.get(str(evaluation.get("response_id")))
    return resp.get("student_model_id") if resp else None
