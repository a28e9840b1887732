"""Human labels of a run's answers: ``human_labels.jsonl`` in the run folder.

One record per (datapoint, student, rubric factor, labeller) with the level the person
gave, when, and the id and SHA-256 of the answer text they saw. A label whose answer was
later regenerated (another text under the same datapoint and student) is *stale*: it is
kept in the file and reported, never used as a label of the new answer.

Writes take the run's label lock, merge the new labels into the file (a labeller's second
label on a unit replaces the first) and replace the file through a temporary file and a
rename, so a reader sees the old file or the new one, never half a write, and a batch
(a CSV import) lands whole or not at all.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from coeval.record_schema import (
    ANSWER_SHA256,
    DATAPOINT_ID,
    FACTOR,
    ID,
    LABELER,
    LABELLED_AT,
    LEVEL,
    RESPONSE,
    RESPONSE_ID,
    STATUS,
    STUDENT,
    STUDENT_MODEL_ID,
    TASK_ID,
)
from coeval.storage.run_folder import atomic_write_text, iter_jsonl, utc_now
from coeval.storage.safe_files import check_run_file, folder_lock

from coeval_analysis.loading.jsonl import TEXT, Computed, read_records
from coeval_analysis.loading.run_files import PHASE4, guarded, jsonl_files

__all__ = [
    "LABELS_FILE",
    "LEVELS",
    "Answer",
    "HumanLabel",
    "answer_hash",
    "current_answers",
    "level_name",
    "mark_stale",
    "read_labels",
    "run_labels",
    "save_labels",
]

LABELS_FILE = "human_labels.jsonl"
_LOCK_FILE = ".human_labels.lock"
#: the rubric levels a person can give, lowest first (scored 0, 0.5, 1 like a judge's)
LEVELS = ("Low", "Medium", "High")
_REQUIRED = ("datapoint_id", "student", "factor", "level", "labeler")


def level_name(text: object) -> str | None:
    """The level ``text`` names (any case, surrounding blanks ignored), or None."""
    if not isinstance(text, str):
        return None
    wanted = text.strip().lower()
    return next((lv for lv in LEVELS if lv.lower() == wanted), None)


def answer_hash(text: str) -> str:
    """SHA-256 (hex) of an answer's UTF-8 text: what tells a regenerated answer apart."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class HumanLabel:
    """One person's level for one rubric factor of one answer."""

    datapoint_id: str
    student: str
    factor: str
    level: str  #: one of :data:`LEVELS`
    labeler: str
    labelled_at: str = ""
    response_id: str = ""
    answer_sha256: str = ""
    #: set when read against the run: the answer was regenerated (or is gone) since
    stale: bool = False

    @property
    def key(self) -> tuple[str, str, str, str]:
        """The unit a labeller labels once: a second label on it replaces the first."""
        return (self.datapoint_id, self.student, self.factor, self.labeler)

    @property
    def score(self) -> float:
        """0, 0.5 or 1, as a judge's Low / Medium / High."""
        return LEVELS.index(self.level) / (len(LEVELS) - 1)

    def record(self) -> dict[str, Any]:
        rec = asdict(self)
        del rec["stale"]
        return {ID: "__".join((self.response_id or f"{self.datapoint_id}__{self.student}", self.factor,
                                 self.labeler)), **rec}


@dataclass(frozen=True)
class Answer:
    """A student's current answer to a datapoint (the phase-4 record that stands)."""

    response_id: str
    datapoint_id: str
    student: str
    task: str
    sha256: str
    failed: bool


def _labels_path(run: Path) -> Path:
    return Path(run) / LABELS_FILE


def _from_record(rec: dict[str, Any]) -> HumanLabel | None:
    if not all(isinstance(rec.get(k), str) and rec[k] for k in _REQUIRED):
        return None
    level = level_name(rec[LEVEL])
    if level is None:
        return None
    return HumanLabel(
        datapoint_id=rec[DATAPOINT_ID], student=rec[STUDENT], factor=rec[FACTOR], level=level,
        labeler=rec[LABELER], labelled_at=str(rec.get(LABELLED_AT) or ""),
        response_id=str(rec.get(RESPONSE_ID) or ""), answer_sha256=str(rec.get(ANSWER_SHA256) or ""),
    )  # fmt: skip


def read_labels(run: str | Path) -> list[HumanLabel]:
    """The run's labels, the last one per (datapoint, student, factor, labeller); lines
    that are not label records are skipped. Empty when the run has no label file."""
    found: dict[tuple[str, str, str, str], HumanLabel] = {}
    path = _labels_path(Path(run))
    with guarded():
        check_run_file(path, Path(run))
    for rec in iter_jsonl(path):
        label = _from_record(rec)
        if label is not None:
            found.pop(label.key, None)  # keep file order of the latest write
            found[label.key] = label
    return list(found.values())


def save_labels(run: str | Path, labels: Iterable[HumanLabel]) -> int:
    """Merge ``labels`` into the run's label file (replacing a labeller's earlier label of
    the same unit) in one atomic replace under the run's label lock. Returns how many were
    written. Labels without a time get the present one."""
    root = Path(run)
    now = utc_now()
    new = [lab if lab.labelled_at else replace(lab, labelled_at=now) for lab in labels]
    if not new:
        return 0
    with folder_lock(root / _LOCK_FILE):  # 0600, as every file in a run folder
        merged = {lab.key: lab for lab in read_labels(root)}
        for lab in new:
            merged.pop(lab.key, None)
            merged[lab.key] = lab
        text = "".join(json.dumps(lab.record(), ensure_ascii=False) + "\n" for lab in merged.values())
        atomic_write_text(_labels_path(root), text)
    return len(new)


def _sha256_of(rec: Any) -> str:
    text = rec.get(RESPONSE)
    return answer_hash(text if isinstance(text, str) else "")


def current_answers(run: str | Path) -> dict[tuple[str, str], Answer]:
    """(datapoint id, student) -> the answer that stands today (the last ok phase-4 record
    of its id, else the last one), with the SHA-256 of its text, computed while reading."""
    files = jsonl_files(Path(run), PHASE4)
    cols = {ID: TEXT, DATAPOINT_ID: TEXT, TASK_ID: TEXT, STUDENT_MODEL_ID: TEXT, STATUS: TEXT,
            RESPONSE: TEXT}  # fmt: skip
    digest = Computed("sha256(coalesce(response, ''))", _sha256_of, pa.string())
    table, _bad = read_records(files, cols, {"sha256": digest}, hidden=("response",))
    out: dict[tuple[str, str], Answer] = {}
    if table.num_rows == 0:
        return out
    failed = pc.fill_null(pc.equal(pc.utf8_lower(table.column("status")), "failed"), False).to_pylist()
    rows = zip(table.column("id").to_pylist(), table.column(DATAPOINT_ID).to_pylist(),
               table.column(STUDENT_MODEL_ID).to_pylist(), table.column(TASK_ID).to_pylist(),
               table.column("sha256").to_pylist(), failed, strict=True)  # fmt: skip
    by_id: dict[str, Answer] = {}
    for rid, dp, student, task, sha, bad in rows:
        if not (rid and dp and student):
            continue
        earlier = by_id.get(rid)
        if earlier is not None and bad and not earlier.failed:
            continue  # the last *valid* record of an id wins
        by_id[rid] = Answer(rid, dp, student, task or "", sha or "", bool(bad))
    for ans in by_id.values():
        out[(ans.datapoint_id, ans.student)] = ans
    return out


def mark_stale(labels: Sequence[HumanLabel], answers: dict[tuple[str, str], Answer]) -> list[HumanLabel]:
    """``labels`` with ``stale`` set where the answer they were given for is no longer the
    run's answer (its text changed, it failed, or it is gone)."""
    out = []
    for lab in labels:
        ans = answers.get((lab.datapoint_id, lab.student))
        fresh = ans is not None and not ans.failed and (not lab.answer_sha256 or lab.answer_sha256 == ans.sha256)
        out.append(replace(lab, stale=not fresh))
    return out


def run_labels(run: str | Path, given: Sequence[HumanLabel] | None = None) -> list[HumanLabel]:
    """The labels an analysis of ``run`` uses (``given``, else the run's label file), with
    ``stale`` set against the run's answers today. No file and nothing given: no labels,
    and the run's answers are not read."""
    labels = read_labels(run) if given is None else list(given)
    return mark_stale(labels, current_answers(run)) if labels else []
