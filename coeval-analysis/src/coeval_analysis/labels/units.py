"""What can be labelled in a run, and labels as CSV.

A unit is (datapoint, student, rubric factor): an answer that stands today (its phase-4
record did not fail) and a factor an LLM judge scores for its task (metric factors and
label attributes are scored without judgment). :class:`LabelUnits` reads the datapoints,
answers and rubrics once and checks labels against them, so the viewer, ``coeval label``
and the analysis accept and refuse the same things.
"""

from __future__ import annotations

import codecs
import csv
import io
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coeval.storage.run_folder import iter_jsonl
from coeval.storage.safe_files import FILE_MODE, apply_file_mode

from coeval_analysis.labels.human_labels import LEVELS, Answer, HumanLabel, current_answers, level_name
from coeval_analysis.loading.run_files import (
    PHASE3,
    PHASE4,
    jsonl_files,
    label_attributes,
    read_config,
    task_rubrics,
)
from coeval_analysis.loading.score_units import llm_factors
from coeval_analysis.output.csv_safety import neutralise_text, restore_text

__all__ = ["CSV_COLUMNS", "EXPORT_COLUMNS", "LabelUnits", "read_label_csv", "write_label_csv"]

#: what an import needs (``labeler`` optional); other columns are ignored
CSV_COLUMNS = ("datapoint_id", "student", "factor", "level")
EXPORT_COLUMNS = ("datapoint_id", "student", "factor", "level", "labeler", "task", "response_id", "prompt", "answer",
                  "reference")  # fmt: skip
_SHOWN = 8


def _some(names: Iterable[str]) -> str:
    items = sorted(names)
    more = f" ... ({len(items)} in all)" if len(items) > _SHOWN else ""
    return ", ".join(items[:_SHOWN]) + more if items else "(none)"


def _criterion(spec: Any) -> str:
    if isinstance(spec, dict):
        return str(spec.get("description") or spec.get("criterion") or "")
    return "" if spec is None else str(spec)


@dataclass
class LabelUnits:
    """The run's datapoints, today's answers and the factors people may label per task."""

    run: Path
    datapoints: dict[str, dict[str, Any]]  #: id -> {task, prompt, reference}
    answers: dict[tuple[str, str], Answer]
    factors: dict[str, list[str]]  #: task -> rubric factors an LLM judge scores
    criteria: dict[str, dict[str, str]] = field(default_factory=dict)  #: task -> factor -> what it asks
    _texts: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, run: str | Path) -> LabelUnits:
        root = Path(run)
        config = read_config(root)
        label_attrs = label_attributes(config)
        rubrics = task_rubrics(root, config)
        factors = {task: [f for f in llm_factors(rubric) if f not in label_attrs.get(task, [])]
                   for task, rubric in rubrics.items()}  # fmt: skip
        criteria = {task: {f: _criterion(rubric[f]) for f in factors[task]} for task, rubric in rubrics.items()}
        datapoints: dict[str, dict[str, Any]] = {}
        for path in jsonl_files(root, PHASE3):
            for rec in iter_jsonl(path):
                rid = rec.get("id")
                if not isinstance(rid, str) or (rec.get("status") == "failed" and rid in datapoints):
                    continue
                datapoints[rid] = {"task": str(rec.get("task_id") or ""), "prompt": rec.get("prompt") or "",
                                   "reference": rec.get("reference_response") or ""}  # fmt: skip
        return cls(root, datapoints, current_answers(root), factors, criteria)

    def task_of(self, datapoint_id: str) -> str:
        dp = self.datapoints.get(datapoint_id)
        if dp and dp["task"]:
            return str(dp["task"])
        return next((a.task for (d, _s), a in self.answers.items() if d == datapoint_id), "")

    def factors_of(self, datapoint_id: str) -> list[str]:
        return self.factors.get(self.task_of(datapoint_id), [])

    def problem(self, datapoint_id: str, student: str, factor: str, level: str) -> str | None:
        """Why this label cannot be taken (naming the allowed values), or None."""
        known_dps = set(self.datapoints) | {d for d, _ in self.answers}
        if datapoint_id not in known_dps:
            return f"datapoint_id '{datapoint_id}' is not a datapoint of this run (e.g. {_some(known_dps)})"
        ans = self.answers.get((datapoint_id, student))
        if ans is None:
            who = {s for d, s in self.answers if d == datapoint_id}
            return f"student '{student}' has no answer to {datapoint_id}; allowed: {_some(who)}"
        if ans.failed:
            return f"the answer of {student} to {datapoint_id} failed: there is nothing to label"
        allowed = self.factors_of(datapoint_id)
        if factor not in allowed:
            return f"factor '{factor}' is not a rubric factor of task {self.task_of(datapoint_id)}; allowed: {_some(allowed)}"
        if level_name(level) is None:
            return f"level '{level}' is not a level; allowed: {', '.join(LEVELS)}"
        return None

    def label(self, datapoint_id: str, student: str, factor: str, level: str, labeler: str) -> HumanLabel:
        """A label of today's answer (call :meth:`problem` first)."""
        ans = self.answers[(datapoint_id, student)]
        return HumanLabel(datapoint_id, student, factor, str(level_name(level)), labeler,
                          response_id=ans.response_id, answer_sha256=ans.sha256)  # fmt: skip

    def answer_texts(self, response_ids: Iterable[str]) -> dict[str, str]:
        """The text of these answers (read once, then kept)."""
        wanted = set(response_ids) - set(self._texts)
        if wanted:
            for path in jsonl_files(self.run, PHASE4):
                for rec in iter_jsonl(path):
                    rid = rec.get("id")
                    if rid in wanted and (rec.get("status") != "failed" or rid not in self._texts):
                        self._texts[str(rid)] = str(rec.get("response") or "")
        return {r: self._texts.get(r, "") for r in response_ids}


#: what spreadsheets put first: the byte-order marks that name an encoding
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
_RESAVE = "re-save it as UTF-8 (CSV UTF-8 in a spreadsheet's Save As)"


def _csv_text(path: Path) -> tuple[str, str | None]:
    """(text, error) of a label CSV: UTF-8, with or without a byte-order mark, or UTF-16
    with one (what spreadsheets write); anything else is an error naming the file, the
    line and the fix, never a traceback."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return "", f"{path}: cannot read it ({exc.strerror or exc})"
    encoding = next((enc for bom, enc in _BOMS if data.startswith(bom)), "utf-8")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return "", (f"{path} line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}; "
                    f"latin-1 or another legacy encoding?); {_RESAVE}")  # fmt: skip
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        return "", f"{path} line {line}: not UTF-8 text (NUL bytes: UTF-16 without a byte-order mark?); {_RESAVE}"
    return text.removeprefix("\ufeff"), None


def read_label_csv(path: Path, units: LabelUnits, labeler: str | None) -> tuple[list[HumanLabel], list[str]]:
    """(labels, errors) of a CSV with columns datapoint_id, student, factor, level and an
    optional labeler (else ``labeler``). Rows with an empty level are not labelled yet and
    skipped. Each error names the file, the line and what is allowed. Cells the export
    neutralised for spreadsheets (a leading ``'``) are read without it."""
    text, error = _csv_text(path)
    if error:
        return [], [error]
    labels: list[HumanLabel] = []
    errors: list[str] = []
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = [h.strip() for h in reader.fieldnames or []]
    except csv.Error as exc:
        return [], [f"{path} line 1: not CSV ({exc})"]
    missing = [c for c in CSV_COLUMNS if c not in header]
    if missing:
        return [], [f"{path} line 1: missing column(s) {', '.join(missing)}; the columns are "
                    f"{','.join(CSV_COLUMNS)}[,labeler]"]  # fmt: skip
    reader.fieldnames = header
    try:
        for row in reader:
            where = f"{path} line {reader.line_num}"
            cells = {k: restore_text((v or "").strip()) for k, v in row.items() if isinstance(k, str)}
            if not cells.get("level"):
                continue
            who = cells.get("labeler") or labeler
            if not who:
                errors.append(f"{where}: no labeler; fill the labeler column or give --labeler NAME")
                continue
            why = units.problem(cells["datapoint_id"], cells["student"], cells["factor"], cells["level"])
            if why:
                errors.append(f"{where}: {why}")
                continue
            labels.append(units.label(cells["datapoint_id"], cells["student"], cells["factor"], cells["level"], who))
    except csv.Error as exc:
        errors.append(f"{path} line {reader.line_num}: not CSV ({exc})")
    return labels, errors


def write_label_csv(path: Path, units: LabelUnits, answers: Sequence[tuple[str, str]], labeler: str = "") -> int:
    """One row per (answer, factor) of ``answers`` ((datapoint, student) pairs, in order)
    with its prompt, answer and reference and an empty level to fill in. Returns the rows.

    The sheet holds prompts and answers: it is created owner-only (0600), as the run's own
    files, and every text cell that a spreadsheet would run as a formula gets a leading
    ``'`` (:mod:`coeval_analysis.output.csv_safety`)."""
    texts = units.answer_texts([units.answers[a].response_id for a in answers])
    rows = 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
    apply_file_mode(path)  # an existing file keeps its mode on open: bring it to 0600 too
    with os.fdopen(fd, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(EXPORT_COLUMNS)
        for dp_id, student in answers:
            ans = units.answers[(dp_id, student)]
            dp = units.datapoints.get(dp_id, {})
            for factor in units.factors_of(dp_id):
                cells = [dp_id, student, factor, "", labeler, units.task_of(dp_id), ans.response_id,
                         str(dp.get("prompt", "")), texts[ans.response_id], str(dp.get("reference", ""))]
                writer.writerow([neutralise_text(c) for c in cells])
                rows += 1
    return rows
