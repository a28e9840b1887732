"""``llm_judge``: every judge model scores the rubric factors no other evaluator takes.

``single`` mode asks each judge once per response for all its factors (record
``{response_id}__{judge}``); ``per_factor`` mode once per factor (record
``{response_id}__{judge}__{factor}``). Replies are parsed by :mod:`coeval.prompts.judging`; one
that cannot be read is retried and then written as ``failed``, never scored. All calls go
to the scheduler in one lazy batch, so a million judge calls never hold a million prompts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from coeval.config.model import ModelConfig, TaskConfig
from coeval.evaluators.base import (
    EvaluationCall,
    EvaluationRequest,
    EvaluationResult,
    Scorer,
    Scoring,
    SubmitCalls,
)
from coeval.evaluators.routing import JUDGE_EVALUATOR, judge_factors
from coeval.interfaces.base import GenerateRequest, GenerateResult
from coeval.prompts import render_prompt
from coeval.prompts.judging import parse_per_factor, parse_rationale, parse_single
from coeval.prompts.schemas import JUDGE_FACTOR_SCHEMA, judge_single_schema
from coeval.record_schema import (
    EVALUATION_MODE,
    FACTOR,
    INPUT,
    PROMPT,
    RATIONALE,
    REFERENCE_RESPONSE,
    RESPONSE,
    SAMPLED_TARGET_ATTRIBUTES,
    SCORES,
    STUDENT_MODEL_ID,
)
from coeval.scheduler.work import WorkOutcome

__all__ = ["LLMJudge", "criterion"]


def criterion(spec: Any) -> str:
    """The criterion text of a rubric factor (plain text or ``{description: ...}``)."""
    if isinstance(spec, Mapping):
        return str(spec.get("description") or spec.get("criterion") or "")
    return str(spec)


class LLMJudge:
    """The LLM judge as an evaluator: its scorers are the run's judge models."""

    name = JUDGE_EVALUATOR
    kind = JUDGE_EVALUATOR
    #: Its factors depend on the task's rubric only, so phase 5 asks once per task.
    factors_per_task = True

    def factors(self, task: TaskConfig, rubric: Mapping[str, Any], datapoint: Mapping[str, Any]) -> list[str]:
        return judge_factors(task, rubric)

    def scorers(self, task: TaskConfig, factors: Sequence[str], judges: Sequence[ModelConfig]) -> list[Scorer]:
        if not factors:
            return []
        if task.evaluation_mode == "per_factor":
            return [Scorer(j.name, (f,), f, j) for j in judges for f in factors]
        return [Scorer(j.name, tuple(factors), None, j) for j in judges]

    async def evaluate(self, request: EvaluationRequest, submit: SubmitCalls) -> list[EvaluationResult]:
        await submit(request.scorings, self.call)
        return [None] * len(request.scorings)

    def call(self, scoring: Scoring) -> EvaluationCall:
        """The judge call of one scoring: prompt, reply schema, parser, record fields."""
        task, dp, resp, scorer = scoring.task, scoring.datapoint, scoring.response, scoring.scorer
        assert scorer.model is not None
        variables: dict[str, Any] = {
            "task_name": task.name,
            "task_description": task.description.strip(),
            "output_description": task.output_description.strip(),
            "input": resp.get(INPUT) or dp.get(PROMPT, ""),
            "response": resp.get(RESPONSE, ""),
            "reference": dp.get(REFERENCE_RESPONSE, ""),
            "target_attributes": dp.get(SAMPLED_TARGET_ATTRIBUTES) or {},
        }
        factors = list(scorer.factors)
        factor = scorer.factor
        if factor is None:
            variables["rubric"] = "\n".join(f"- {f}: {criterion(scoring.rubric.get(f))}" for f in factors)
            template, schema, schema_name = "evaluate_single", judge_single_schema(scorer.factors), "judge_single"

            def parse(result: GenerateResult) -> Mapping[str, Any]:
                return parse_single(result.text, factors)
        else:
            variables["factor"] = factor
            variables["criterion"] = criterion(scoring.rubric.get(factor))
            template, schema, schema_name = "evaluate_per_factor", JUDGE_FACTOR_SCHEMA, "judge_factor"

            def parse(result: GenerateResult) -> Mapping[str, Any]:
                return {factor: parse_per_factor(result.text, factor)}

        def fields(outcome: WorkOutcome) -> dict[str, Any]:
            out: dict[str, Any] = {EVALUATION_MODE: task.evaluation_mode}
            if factor is not None:
                out[FACTOR] = factor
            out[SCORES] = dict(outcome.value) if outcome.status == "ok" else {}
            out[RATIONALE] = parse_rationale(outcome.raw, [factor] if factor else factors)
            return out

        judge = scorer.model
        prompt = render_prompt(template, variables, prompt_library=task.prompt_library, model_name=judge.name)
        return EvaluationCall(
            request=GenerateRequest(
                prompt=prompt,
                params=judge.params_for("judge"),
                role="judge",
                json_schema=schema,
                schema_name=schema_name,
            ),
            parse=parse,
            fields=fields,
            meta={"task": task.name, "judge": judge.name, "student": resp.get(STUDENT_MODEL_ID)},
        )
