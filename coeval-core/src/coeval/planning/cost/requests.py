"""The prompts each phase will send, rendered with the pipeline's own templates.

Input tokens are counted on real rendered prompts: phases 1-2 use the mapping phases' own
request builders; phases 3-5 fill the same templates with the same variables as the
phases do. What does not exist yet (a datapoint before phase 3, an answer before phase 4)
is stood in for by text of the expected length, or by what sample calls returned.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from coeval.config.model import Config, ModelConfig, TaskConfig
from coeval.config.validate import judged_factors
from coeval.interfaces.base import GenerateRequest
from coeval.phase_ids import (
    ATTRIBUTE_MAPPING,
    DATA_GENERATION,
    EVALUATION,
    RESPONSE_COLLECTION,
    ROLES,
    RUBRIC_MAPPING,
)
from coeval.phases.base import RunView
from coeval.phases.evaluation import judge_factors
from coeval.phases.generation import sampler_for
from coeval.phases.mapping import AttributeMappingPhase, RubricMappingPhase
from coeval.planning.cost.tokens import TOKENS_PER_WORD, filler_text
from coeval.prompts import render_prompt
from coeval.prompts.lengths import typical_words
from coeval.prompts.schemas import DATAPOINT_SCHEMA, JUDGE_FACTOR_SCHEMA, judge_single_schema
from coeval.storage.run_folder import RunFolder

if TYPE_CHECKING:
    from coeval.plugins.manager import Registries

__all__ = ["KNOWN_PHASES", "RequestBuilder", "TaskTexts", "expected_output_tokens", "max_output_tokens"]

#: Typical reply sizes (tokens) when the task's output description names no length; capped
#: by max_tokens.
_TYPICAL_OUTPUT = {
    ATTRIBUTE_MAPPING: 150,
    RUBRIC_MAPPING: 200,
    DATA_GENERATION: 400,
    RESPONSE_COLLECTION: 300,
}
_ROLE = ROLES
#: Tokens of one criterion's part of a judge's reply: its score and a one-sentence rationale
#: (the embedded SmolLM2 wrote 52 tokens for two criteria in the quick start).
_JUDGE_REPLY_PER_FACTOR = 28
#: Phases whose requests this module can build (a plugin phase's are unknown before it runs).
KNOWN_PHASES = tuple(_ROLE)
#: Stand-in rubric while phase 2 has not written one.
_PLACEHOLDER_RUBRIC = {
    "accuracy": "The response is correct and consistent with the reference.",
    "completeness": "The response addresses every part of the request.",
    "clarity": "The response is clear, well organised and easy to follow.",
    "relevance": "The response stays on the request without padding.",
}
_PLACEHOLDER_DRAW = {"difficulty": "medium", "format": "paragraph"}


def max_output_tokens(model: ModelConfig, role: str) -> int | None:
    params = model.params_for(role)
    for key in ("max_tokens", "max_new_tokens", "max_output_tokens", "max_completion_tokens"):
        value = params.get(key)
        if isinstance(value, int) and value > 0:
            return value
    return None


#: Tokens an answer has besides its words (the reply's last punctuation and line ends).
_ANSWER_EXTRA_TOKENS = 4
#: Tokens of the JSON a datapoint reply wraps its prompt and reference in.
_DATAPOINT_JSON_TOKENS = 12
#: An item's prompt, when the task names an answer length: half the answer, within these.
_ITEM_PROMPT_TOKENS = (15.0, 150.0)


def typical_item_tokens(task: TaskConfig) -> tuple[float, float] | None:
    """Tokens of a typical datapoint's prompt and of its reference answer, when the task's
    output description names a length ("one or two sentences", "150-200 words"); None when
    it names none (the phase's typical size then applies)."""
    words = typical_words(task.output_description)
    if words is None:
        return None
    answer = words * TOKENS_PER_WORD + _ANSWER_EXTRA_TOKENS
    low, high = _ITEM_PROMPT_TOKENS
    return min(max(answer / 2, low), high), answer


def expected_output_tokens(phase: str, task: TaskConfig, model: ModelConfig) -> float:
    """Heuristic reply size of one call, never above max_tokens: for datapoints and answers,
    the length the task's output description names, else a typical size per phase; for
    judges, a score and a one-sentence rationale per criterion."""
    item = typical_item_tokens(task)
    typical: float
    if phase == EVALUATION:  # a score and a one-sentence rationale per criterion, as the judge prompt asks
        factors = judged_factors(task)
        n = len(factors) if factors else len(_PLACEHOLDER_RUBRIC)
        typical = _JUDGE_REPLY_PER_FACTOR if task.evaluation_mode == "per_factor" else 6 + _JUDGE_REPLY_PER_FACTOR * n
    elif item is not None and phase == DATA_GENERATION:
        typical = item[0] + item[1] + _DATAPOINT_JSON_TOKENS
    elif item is not None and phase == RESPONSE_COLLECTION:
        typical = item[1]
    else:
        typical = _TYPICAL_OUTPUT.get(phase, _TYPICAL_OUTPUT[RESPONSE_COLLECTION])
    role = _ROLE.get(phase)
    cap = max_output_tokens(model, role) if role is not None else None
    return float(min(typical, cap) if cap else typical)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if value else "(none)"


def _criterion(spec: Any) -> str:
    if isinstance(spec, Mapping):
        return str(spec.get("description") or spec.get("criterion") or "")
    return str(spec)


@attrs.define
class TaskTexts:
    """What a task's later prompts quote: a datapoint, its reference, a student's answer."""

    datapoint_prompt: str
    reference: str
    response: str
    target_draw: dict[str, str] = attrs.field(factory=dict)
    from_samples: bool = False


class _AnticipatedView(RunView):
    """The run as it will look: artifacts on disk or in the config first, then what sample
    calls of phases 1-2 proposed (merged across teachers as the phases merge them)."""

    def __init__(self, config: Config, run: RunFolder, registries: Registries) -> None:
        super().__init__(config, run, registries)
        self.anticipated: dict[str, dict[str, Any]] = {"target": {}, "nuanced": {}, "rubric": {}}

    def target_attributes(self, task: TaskConfig) -> dict[str, list[str]] | None:
        return super().target_attributes(task) or self.anticipated["target"].get(task.name)

    def nuanced_attributes(self, task: TaskConfig) -> dict[str, list[str]] | None:
        return super().nuanced_attributes(task) or self.anticipated["nuanced"].get(task.name)

    def rubric(self, task: TaskConfig) -> dict[str, Any] | None:
        return super().rubric(task) or self.anticipated["rubric"].get(task.name)


class RequestBuilder:
    """Builds, per (phase, task, model), the requests that phase will send."""

    def __init__(self, config: Config, run: RunFolder | None = None, *, registries: Registries) -> None:
        self.config = config
        run = run or RunFolder.for_experiment(config.experiment.storage_folder, config.experiment.id)
        #: phase 1 sees only what exists before it runs; later phases also what samples anticipated
        self.base_view = RunView(config, run, registries)
        self.view = _AnticipatedView(config, run, self.base_view.registries)

    def anticipate(self, kind: str, task: str, value: Mapping[str, Any]) -> None:
        """Record what phases 1-2 are expected to write for ``task`` (``kind``: target,
        nuanced or rubric), so later prompts quote it."""
        if value:
            self.view.anticipated[kind][task] = dict(value)

    # ---- stand-in texts ---------------------------------------------------------------------
    def default_texts(self, task: TaskConfig) -> TaskTexts:
        teacher = self.config.teachers[0] if self.config.teachers else None
        dp_tokens = expected_output_tokens(DATA_GENERATION, task, teacher) if teacher else 400
        student = self.config.students[0] if self.config.students else None
        answer_tokens = expected_output_tokens(RESPONSE_COLLECTION, task, student) if student else 300
        item = typical_item_tokens(task)
        if item is None:  # no length named: the datapoint's reply split as prompt 40%, reference 55%
            prompt_tokens, reference_tokens = dp_tokens * 0.4, dp_tokens * 0.55
        else:  # the named length, scaled down where the teacher's max_tokens cuts the reply
            share = min(1.0, dp_tokens / (item[0] + item[1] + _DATAPOINT_JSON_TOKENS))
            prompt_tokens, reference_tokens = item[0] * share, item[1] * share
        return TaskTexts(
            datapoint_prompt=filler_text(int(prompt_tokens)),
            reference=filler_text(int(reference_tokens)),
            response=filler_text(int(answer_tokens)),
            target_draw=self.draw(task, teacher.name if teacher else "teacher")[0],
        )

    def draw(self, task: TaskConfig, teacher: str, seq: int = 1) -> tuple[dict[str, str], dict[str, str]]:
        """The attributes phase 3 draws for slot ``seq`` (a stand-in while phase 1 is pending)."""
        sampler = sampler_for(self.view, task, teacher)
        if sampler is None:
            return dict(_PLACEHOLDER_DRAW), {}
        slots = max(1, sampler.slots())
        d = sampler.draw((seq - 1) % slots + 1)
        return dict(d.target), dict(d.nuanced)

    def rubric(self, task: TaskConfig) -> Mapping[str, Any]:
        return self.view.rubric(task) or _PLACEHOLDER_RUBRIC

    def judge_factors(self, task: TaskConfig) -> list[str]:
        return judge_factors(task, self.rubric(task))

    # ---- requests -----------------------------------------------------------------------------
    def requests(
        self, phase: str, task: TaskConfig, model: ModelConfig, texts: TaskTexts, seq: int = 1
    ) -> list[GenerateRequest]:
        """The distinct requests one (task, model) sends in ``phase`` (one per call shape)."""
        task_vars = {
            "task_name": task.name,
            "task_description": task.description.strip(),
            "output_description": task.output_description.strip(),
        }
        if phase == ATTRIBUTE_MAPPING:
            kinds = [
                k
                for k, spec in (("target", task.target_attributes), ("nuanced", task.nuanced_attributes))
                if isinstance(spec, str)
            ]
            return [AttributeMappingPhase().request(self.base_view, task, k, model)[0] for k in kinds]
        if phase == RUBRIC_MAPPING:
            return [RubricMappingPhase().request(self.view, task, "rubric", model)[0]]
        if phase == DATA_GENERATION:
            target, nuanced = self.draw(task, model.name, seq)
            prompt = render_prompt(
                "sample",
                {**task_vars, "target_attributes": _json(target), "nuanced_attributes": _json(nuanced)},
                prompt_library=task.prompt_library,
                model_name=model.name,
            )
            return [
                GenerateRequest(
                    prompt=prompt,
                    params=model.params_for("teacher"),
                    role="teacher",
                    json_schema=DATAPOINT_SCHEMA,
                    schema_name="datapoint",
                )
            ]
        if phase == RESPONSE_COLLECTION:
            prompt = render_prompt(
                "test",
                {**task_vars, "input": texts.datapoint_prompt},
                prompt_library=task.prompt_library,
                model_name=model.name,
            )
            return [GenerateRequest(prompt=prompt, params=model.params_for("student"), role="student")]
        if phase == EVALUATION:
            rubric = self.rubric(task)
            factors = self.judge_factors(task)
            if not factors:
                return []
            variables = {
                **task_vars,
                "input": texts.datapoint_prompt,
                "response": texts.response,
                "reference": texts.reference,
                "target_attributes": texts.target_draw,
            }
            params = model.params_for("judge")
            if task.evaluation_mode == "per_factor":
                return [
                    GenerateRequest(
                        prompt=render_prompt(
                            "evaluate_per_factor",
                            {**variables, "factor": f, "criterion": _criterion(rubric.get(f))},
                            prompt_library=task.prompt_library,
                            model_name=model.name,
                        ),
                        params=params,
                        role="judge",
                        json_schema=JUDGE_FACTOR_SCHEMA,
                        schema_name="judge_factor",
                    )
                    for f in factors
                ]
            lines = "\n".join(f"- {f}: {_criterion(rubric.get(f))}" for f in factors)
            prompt = render_prompt(
                "evaluate_single",
                {**variables, "rubric": lines},
                prompt_library=task.prompt_library,
                model_name=model.name,
            )
            return [
                GenerateRequest(
                    prompt=prompt,
                    params=params,
                    role="judge",
                    json_schema=judge_single_schema(factors),
                    schema_name="judge_single",
                )
            ]
        return []
