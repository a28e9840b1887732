"""The canonical prompt templates and the variables each one may use.

Templates use ``{name}`` for a variable and ``{{`` / ``}}`` for literal braces, as the
configuration guide documents. Variable values are inserted verbatim and never re-read, so
task descriptions, datapoints and answers containing braces are always safe.
"""

from __future__ import annotations

__all__ = ["ALIASES", "DEFAULT_TEMPLATES", "TEMPLATE_IDS", "TEMPLATE_VARIABLES"]

TEMPLATE_IDS = (
    "map_target_attrs",
    "map_nuanced_attrs",
    "autorubric",
    "sample",
    "test",
    "evaluate_single",
    "evaluate_per_factor",
)

_TASK = frozenset({"task_name", "task_description", "output_description"})

#: Variable names each template may use (aliases included). A template naming anything
#: else is a validation error.
TEMPLATE_VARIABLES: dict[str, frozenset[str]] = {
    "map_target_attrs": _TASK | {"seed_attributes"},
    "map_nuanced_attrs": _TASK | {"seed_attributes", "target_attributes"},
    "autorubric": _TASK | {"target_attributes", "existing_rubric"},
    "sample": _TASK | {"target_attributes", "nuanced_attributes"},
    "test": _TASK | {"input", "prompt"},
    "evaluate_single": _TASK
    | {"input", "prompt", "response", "reference", "reference_response", "rubric", "target_attributes"},
    "evaluate_per_factor": _TASK
    | {
        "input",
        "prompt",
        "response",
        "reference",
        "reference_response",
        "factor",
        "criterion",
        "rubric_factor_name",
        "rubric_factor_description",
        "target_attributes",
    },
}

#: alias -> canonical variable (legacy names and the documented ones both work).
ALIASES: dict[str, str] = {
    "prompt": "input",
    "reference_response": "reference",
    "rubric_factor_name": "factor",
    "rubric_factor_description": "criterion",
}

#: What both judge templates show the judge: the task, the input, the reference and the
#: answer, each fenced so an answer cannot pose as the reference.
_GRADED_ANSWER = """\
Task: {task_description}
A good answer: {output_description}

Input given to the model:
<input>
{input}
</input>

Reference answer:
<reference>
{reference}
</reference>

Answer to grade:
<answer>
{response}
</answer>
"""


DEFAULT_TEMPLATES: dict[str, str] = {
    "map_target_attrs": """\
You are planning a benchmark that tests language models on one task.

Task: {task_description}
A good answer to the task: {output_description}

Name the dimensions along which test items for this task should differ, so that a set of
items covering every combination exercises the task thoroughly (for example difficulty,
subject area, input length). For each dimension give a short snake_case name and two to
five short snake_case values.

Dimensions already decided (keep them; you may add values): {seed_attributes}

Reply with JSON only, in this form:
{{"attributes": [{{"name": "dimension_name", "values": ["value_one", "value_two"]}}]}}
""",
    "map_nuanced_attrs": """\
You are planning a benchmark that tests language models on one task.

Task: {task_description}
A good answer to the task: {output_description}
Dimensions that already define what each item tests: {target_attributes}

Name dimensions of surface variation (tone, register, writing style, context, noise)
that change how an item is phrased without changing what a correct answer must contain.
They keep the items from all sounding alike. For each give a short snake_case name and two
to five short snake_case values.

Dimensions already decided (keep them; you may add values): {seed_attributes}

Reply with JSON only, in this form:
{{"attributes": [{{"name": "dimension_name", "values": ["value_one", "value_two"]}}]}}
""",
    "autorubric": """\
You are writing the scoring criteria a grader will use to judge answers to one task.

Task: {task_description}
A good answer to the task: {output_description}
Items will vary along: {target_attributes}

Propose three to six criteria. Each criterion has a short snake_case name and one
sentence describing what an excellent answer does on that criterion. Criteria must not
overlap.

Criteria already decided (keep them; add only new ones): {existing_rubric}

Reply with JSON only, in this form:
{{"factors": [{{"name": "criterion_name", "description": "What an excellent answer does."}}]}}
""",
    "sample": """\
Write one test item for a benchmark of the following task.

Task: {task_description}
A good answer to the task: {output_description}

The item must have these characteristics: {target_attributes}
Vary its surface as follows: {nuanced_attributes}

The item has two parts: "prompt", the complete input a model under test will receive,
and "response", an excellent answer to that prompt that a grader can use as reference.

Reply with JSON only, in this form:
{{"prompt": "...", "response": "..."}}
""",
    "test": """\
{input}

Answer format: {output_description}
""",
    "evaluate_single": """\
You are grading one answer to a task. Be strict and consistent.

"""
    + _GRADED_ANSWER
    + """
Rate the answer on each criterion below as High, Medium or Low.
{rubric}

Reply with JSON only: {{"scores": {{"criterion_name": "High" or "Medium" or "Low", ...}},
"rationale": {{"criterion_name": "one sentence on why", ...}}}}
with one entry for every criterion above in each.
""",
    "evaluate_per_factor": """\
You are grading one answer to a task on a single criterion. Be strict and consistent.

"""
    + _GRADED_ANSWER
    + """
Criterion: {factor}: {criterion}

Rate the answer on this criterion only, as High, Medium or Low.
Reply with JSON only: {{"score": "High" or "Medium" or "Low", "rationale": "one sentence on why"}}
""",
}
