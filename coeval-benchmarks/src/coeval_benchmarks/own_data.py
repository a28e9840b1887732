"""``coeval ingest --file``: the user's own rows (JSONL, CSV, Parquet) as a replay teacher.

The file goes through the same path as a named benchmark (ingest.py): same datapoint
records, same idempotence, same row-level errors. Only the field names differ, so this
adapter is configured per call instead of per dataset.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from coeval_benchmarks.base import BenchmarkAdapter, BenchmarkItem, RowError
from coeval_benchmarks.code_program import code_prefix_of

__all__ = ["OWN_DATA_SPLIT", "OwnDataAdapter"]

#: The split name recorded for rows of a user's file (a file has no splits).
OWN_DATA_SPLIT = "file"
#: The attribute that carries ``--label-field`` (scored by exact match, no judge needed).
LABEL_ATTRIBUTE = "label"


class OwnDataAdapter(BenchmarkAdapter):
    """Rows of one file; ``prompt_field`` is required, the other fields are optional."""

    name = "file"
    title = "data file"
    hub_id = "-"
    default_split = OWN_DATA_SPLIT
    gold_metric = "bleu"
    description = "Answer the prompt of each row of the user's data file."
    output_description = "A correct, complete answer to the prompt."
    #: kept only when rows carry a label (ingest drops attributes no item has)
    label_attributes = (LABEL_ATTRIBUTE,)
    rubric: ClassVar[Mapping[str, str]] = {
        "correctness": "The answer is correct and agrees with the reference answer when one is given.",
        "completeness": "The answer addresses every part of the prompt.",
    }

    def __init__(
        self,
        source_file: Path,
        *,
        prompt_field: str = "prompt",
        reference_field: str | None = None,
        label_field: str | None = None,
        id_field: str | None = None,
        label_fields: tuple[str, ...] = (),
        source_files: tuple[Path, ...] = (),
        option_names: dict[str, str] | None = None,
        tests_field: str | None = None,
        entry_point_field: str | None = None,
        code_prefix_field: str | None = None,
    ) -> None:
        self.tests_field = tests_field
        #: the column with the code a reply completes; without it, the prompt when it is such code
        self.code_prefix_field = code_prefix_field
        self.entry_point_field = entry_point_field
        self.source_file = source_file
        #: several files of one split (a hub dataset's shards), read in order
        self.source_files = source_files
        self.prompt_field = prompt_field
        self.reference_field = reference_field
        self.label_field = label_field
        self.id_field = id_field
        #: columns that are labels, each its own attribute named after the column (a config's
        #: ``data.labels``); ``label_field`` is the one attribute ``label`` of ``--label-field``
        self.label_fields = label_fields
        #: how errors name each setting: ``--prompt-field`` on the command line, ``data.prompt`` in a config
        self.option_names = option_names or {}

    def _fields(self) -> list[tuple[str, str]]:
        named = self.option_names
        given = [(named.get("prompt", "--prompt-field"), self.prompt_field),
                 (named.get("reference", "--reference-field"), self.reference_field),
                 (named.get("label", "--label-field"), self.label_field),
                 (named.get("id", "--id-field"), self.id_field),
                 (named.get("tests", "tests"), self.tests_field),
                 (named.get("entry_point", "entry_point"), self.entry_point_field),
                 (named.get("code_prefix", "code_prefix"), self.code_prefix_field),
                 *((named.get("labels", "labels"), f) for f in self.label_fields)]
        return [(option, field) for option, field in given if field]

    def check_row(self, row: Mapping[str, Any]) -> None:
        for option, field in self._fields():
            value = row.get(field)
            if value is None or (isinstance(value, str) and not value.strip()):
                present = ", ".join(sorted(map(str, row))) or "none"
                raise RowError(f"field {field!r} ({option}) is missing or empty; the row has: {present}")
            if isinstance(value, Mapping | list):
                raise RowError(f"field {field!r} ({option}) must be text or a number, not {type(value).__name__}")

    def item(self, row: Mapping[str, Any], index: int, split: str) -> BenchmarkItem:
        native_id = str(row[self.id_field]).strip() if self.id_field else f"row{index + 1:06d}"
        reference = str(row[self.reference_field]) if self.reference_field else ""
        attributes = {LABEL_ATTRIBUTE: str(row[self.label_field]).strip()} if self.label_field else {}
        attributes.update({field: str(row[field]).strip() for field in self.label_fields})
        entry_point = str(row[self.entry_point_field]).strip() if self.entry_point_field else None
        return BenchmarkItem(
            native_id=native_id,
            prompt=str(row[self.prompt_field]),
            reference=reference,
            attributes=attributes,
            gold_metric=self.gold_metric,
            labels=(reference,) if reference else (),
            tests=str(row[self.tests_field]) if self.tests_field else None,
            entry_point=entry_point,
            code_prefix=self._code_prefix(row, entry_point),
        )

    def _code_prefix(self, row: Mapping[str, Any], entry_point: str | None) -> str | None:
        """What a body-only reply completes, as HumanEval's prompt (code tasks only)."""
        if self.code_prefix_field:
            prefix = str(row[self.code_prefix_field])
            return prefix if prefix.endswith("\n") else prefix + "\n"
        return code_prefix_of(str(row[self.prompt_field]), entry_point) if self.tests_field else None
