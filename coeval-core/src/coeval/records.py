"""Record ids, record builders and record readers (see docs/data-format.md).

Every id is derived from the ids above it, so a retried or resumed item always gets the
id it had before and ids never collide:

* datapoint  ``{task}__{teacher}__{seq:05d}`` (``seq`` is the slot, 1..total)
* response   ``{datapoint_id}__{student}``
* evaluation ``{response_id}__{judge}`` (``per_factor`` adds ``__{factor}``)

Readers keep the **last valid** record per id (a retried item appends a new line), skip
lines that do not parse, and accept the earlier tool's records, which carry no ``status``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from coeval.storage.run_folder import RunFolder, iter_jsonl, utc_now

T = TypeVar("T")

try:  # orjson parses a record in a third of the time: it decides how fast --continue
    import orjson  # starts on a run of a million records

    def _loads(line: bytes) -> Any:
        try:
            return orjson.loads(line)
        except orjson.JSONDecodeError:  # NaN / Infinity, which json.dumps writes
            return json.loads(line)

except ImportError:  # pragma: no cover - orjson is a dependency; stay correct without it
    _loads = json.loads

__all__ = [
    "FAILED",
    "OK",
    "call_fields",
    "datapoint_id",
    "evaluation_id",
    "is_ok",
    "latest_by_id",
    "load_phase_records",
    "record_status",
    "response_id",
    "scan_phase",
    "usable_datapoint",
    "usable_response",
    "utc_now",
]

OK = "ok"
FAILED = "failed"


def datapoint_id(task: str, teacher: str, seq: int) -> str:
    return f"{task}__{teacher}__{seq:05d}"


def response_id(datapoint: str, student: str) -> str:
    return f"{datapoint}__{student}"


def evaluation_id(response: str, judge: str, factor: str | None = None) -> str:
    return f"{response}__{judge}" if factor is None else f"{response}__{judge}__{factor}"


def record_status(rec: Mapping[str, Any]) -> str:
    """``ok`` or ``failed``. Old records have no status: an evaluation with empty scores
    is failed, anything else ok."""
    status = rec.get("status")
    if status in (OK, FAILED):
        return str(status)
    if status is not None:
        return FAILED
    if "scores" in rec and not rec.get("scores"):
        return FAILED
    return OK


def is_ok(rec: Mapping[str, Any] | None) -> bool:
    return rec is not None and record_status(rec) == OK


def _has_text(rec: Mapping[str, Any] | None, field: str) -> bool:
    if rec is None or not is_ok(rec):
        return False
    value = rec.get(field)
    return isinstance(value, str) and bool(value.strip())


def usable_datapoint(rec: Mapping[str, Any] | None) -> bool:
    """A datapoint students may answer: ok, with a non-empty prompt."""
    return _has_text(rec, "prompt")


def usable_response(rec: Mapping[str, Any] | None) -> bool:
    """A response judges may score: ok, with a non-empty answer."""
    return _has_text(rec, "response")


def latest_by_id(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Last record per id (records without an id are dropped)."""
    out: dict[str, dict[str, Any]] = {}
    for rec in records:
        rid = rec.get("id")
        if isinstance(rid, str) and rid:
            out.pop(rid, None)  # keep file order of the winner
            out[rid] = dict(rec)
    return out


def load_phase_records(run: RunFolder, phase_id: str) -> dict[str, dict[str, Any]]:
    """All records of one phase folder, last valid per id."""
    return latest_by_id(run.iter_records(phase_id))


def scan_phase(run: RunFolder, phase_id: str, reduce: Callable[[dict[str, Any]], T]) -> dict[str, T]:
    """Last valid record per id of one phase folder, each kept only as ``reduce(record)``.

    Surveys use this instead of :func:`load_phase_records`: deciding that a run of a
    million evaluations is complete needs each record's status and scored factors, not the
    whole record, and whole records would take gigabytes."""
    out: dict[str, T] = {}
    for path in run.jsonl_files(phase_id):
        with path.open("rb") as fh:
            for line in fh:
                try:
                    rec = _loads(line)
                except ValueError:  # a cut or garbled line: not a record (blank lines too)
                    continue
                if isinstance(rec, dict):
                    rid = rec.get("id")
                    if isinstance(rid, str) and rid:
                        out[rid] = reduce(rec)
    return out


def load_file_records(path: Path) -> dict[str, dict[str, Any]]:
    return latest_by_id(iter_jsonl(path))


def call_fields(outcome: Any) -> dict[str, Any]:
    """The fields every model-call record carries, from a scheduler ``WorkOutcome``."""
    fields: dict[str, Any] = {
        "status": OK if outcome.status == "ok" else FAILED,
        "attempts": int(outcome.attempts),
        "usage": outcome.usage.to_dict(),
    }
    if outcome.cost_usd is not None:
        fields["cost_usd"] = outcome.cost_usd
    if outcome.status != "ok":
        kind = outcome.error_kind or "error"
        fields["error"] = f"{kind}: {outcome.error}" if outcome.error else kind
        fields["error_kind"] = kind
    return fields
