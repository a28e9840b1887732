"""XSum (EdinburghNLP/xsum): one-sentence summaries of BBC articles.

Hub rows: ``document``, ``summary``, ``id``. Gold score: BERTScore F1 of the reply against the
published summary (BLEU rewards copying the article's wording, which XSum summaries avoid).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from coeval_benchmarks.adapters._common import bucket, row_id, text
from coeval_benchmarks.base import BenchmarkAdapter, BenchmarkItem


class XSum(BenchmarkAdapter):
    name = "xsum"
    title = "XSum"
    hub_id = "EdinburghNLP/xsum"
    default_split = "test"
    gold_metric = "bertscore"
    description = "Write a one-sentence summary of a news article that says what the article is about."
    output_description = "A single sentence."
    rubric: ClassVar[Mapping[str, str]] = {
        "faithfulness": "Everything the summary states is supported by the article.",
        "coverage": "The summary captures the article's main point rather than a side detail.",
        "concision": "The summary is one fluent sentence.",
    }
    required_fields = ("document", "summary")

    def item(self, row: Mapping[str, Any], index: int, split: str) -> BenchmarkItem:
        document = text(row, "document").strip()
        summary = text(row, "summary").strip()
        words = len(document.split())
        native = row.get("id")
        return BenchmarkItem(
            native_id=str(native) if native not in (None, "") else row_id(split, index),
            prompt=f"Summarise the following article in one sentence.\n\nArticle:\n{document}",
            reference=summary,
            attributes={"article_length": bucket(words, [(250, "short"), (500, "medium")], "long")},
            gold_metric="bertscore",
            labels=(summary,),
        )
