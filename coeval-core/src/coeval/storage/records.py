"""Record ids, record builders and record readers (see docs/data-format.md).

Every id is derived from the ids above it, so a retried or resumed item always gets the
id it had before and ids never collide:

* datapoint  ``{task}__{teacher}__{seq:05d}`` (``seq`` is the slot, 1..total)
* response   ``{datapoint_id}__{student}``
* evaluation ``{response_id}__{judge}`` (``per_factor`` adds ``__{factor}``)

Readers keep the **last valid** record per id (a retried item appends a new line), skip
lines that do not parse, and accept legacy records, which carry no ``status``.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from coeval.record_schema import (
    ATTEMPT_ERRORS,
    ATTEMPTS,
    COST_USD,
    ERROR,
    ERROR_KIND,
    FINISH_REASON,
    ID,
    LATENCY_MS,
    PROMPT,
    QUALITY_RULE,
    RAW,
    REQUEST,
    RESPONSE,
    SCORES,
    STATUS,
    TOKENS_PER_S,
    USAGE,
    CallFields,
)
from coeval.storage.run_folder import RunFolder, iter_jsonl, loads_record, utc_now
from coeval.storage.safe_files import open_regular

T = TypeVar("T")

__all__ = [
    "FAILED",
    "ID_HEAD",
    "OK",
    "OK_RECORD_LINE",
    "above_slots",
    "call_fields",
    "datapoint_id",
    "datapoint_slot",
    "evaluation_id",
    "is_ok",
    "latest_by_id",
    "load_phase_records",
    "match_every_line",
    "record_status",
    "response_id",
    "scan_lines",
    "scan_ok_phase",
    "scan_phase",
    "transcript_fields",
    "usable_datapoint",
    "usable_response",
    "utc_now",
]

OK = "ok"
FAILED = "failed"


def datapoint_id(task: str, teacher: str, seq: int) -> str:
    return f"{task}__{teacher}__{seq:05d}"


def datapoint_slot(datapoint: str) -> int | None:
    """The slot ``seq`` of a datapoint id ``{task}__{teacher}__{seq:05d}``; None when the id
    ends otherwise. Only a teacher's own datapoints are numbered by slot: an ingested id
    may end in digits too, so callers check the teacher first."""
    tail = str(datapoint).rsplit("__", 1)[-1]
    return int(tail) if tail.isdigit() else None


def above_slots(slots: Mapping[tuple[str, str], int], task: str, teacher: str, datapoint: str) -> bool:
    """Whether ``datapoint`` of ``(task, teacher)`` is above that pair's slots (a lowered
    ``sampling.total``): the one rule the run, ``status`` and the analysis leave such
    datapoints out by. A pair without slots (ingested data, a removed teacher) has none above."""
    limit = slots.get((task, teacher))
    if limit is None:
        return False
    seq = datapoint_slot(datapoint)
    return seq is not None and seq > limit


def response_id(datapoint: str, student: str, sample: int = 1) -> str:
    """``{datapoint}__{student}``; with ``samples: k``, sample 2..k adds ``__sample{n}``."""
    return f"{datapoint}__{student}" if sample == 1 else f"{datapoint}__{student}__sample{sample}"


def evaluation_id(response: str, judge: str, factor: str | None = None) -> str:
    return f"{response}__{judge}" if factor is None else f"{response}__{judge}__{factor}"


def record_status(rec: Mapping[str, Any]) -> str:
    """``ok`` or ``failed``. Old records have no status: an evaluation with empty scores
    is failed, anything else ok."""
    status = rec.get(STATUS)
    if status in (OK, FAILED):
        return str(status)
    if status is not None:
        return FAILED
    if SCORES in rec and not rec.get(SCORES):
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
    return _has_text(rec, PROMPT)


def usable_response(rec: Mapping[str, Any] | None) -> bool:
    """A response judges may score: ok, with a non-empty answer."""
    return _has_text(rec, RESPONSE)


def latest_by_id(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Last record per id (records without an id are dropped)."""
    out: dict[str, dict[str, Any]] = {}
    for rec in records:
        rid = rec.get(ID)
        if isinstance(rid, str) and rid:
            out.pop(rid, None)  # keep file order of the winner
            out[rid] = dict(rec)
    return out


def load_phase_records(run: RunFolder, phase_id: str) -> dict[str, dict[str, Any]]:
    """All records of one phase folder, last valid per id."""
    return latest_by_id(run.iter_records(phase_id))


def _read(path: Path) -> bytes:
    """A record file's bytes; a FIFO or device in its place is refused, never waited on."""
    with open_regular(path) as fh:
        return fh.read()


def scan_phase(run: RunFolder, phase_id: str, reduce: Callable[[dict[str, Any]], T]) -> dict[str, T]:
    """Last valid record per id of one phase folder, each kept only as ``reduce(record)``.

    Surveys use this instead of :func:`load_phase_records`: deciding that a run of a
    million evaluations is complete needs each record's status and scored factors, not the
    whole record, and whole records would take gigabytes."""
    out: dict[str, T] = {}
    for path in run.jsonl_files(phase_id):
        scan_lines(_read(path), reduce, out)  # one file at a time: a few MB
    return out


def scan_ok_phase(run: RunFolder, phase_id: str, reduce: Callable[[dict[str, Any]], T], ok: T) -> dict[str, T]:
    """:func:`scan_phase` where a file whose every line is an ok record in our layout is
    read by one regular expression, each record reduced to ``ok``."""
    out: dict[str, T] = {}
    for path in run.jsonl_files(phase_id):
        data = _read(path)
        found = match_every_line(OK_RECORD_LINE, data)
        if found is None:
            scan_lines(data, reduce, out)
        else:
            out.update(dict.fromkeys([rid.decode() for rid, _ in found], ok))
    return out


#: How every ok record of ours ends (the fields of :func:`call_fields`, in order). A
#: line cut short cannot end like this; quotes inside JSON strings are always escaped, so
#: the markers can only be the record's own keys.
OK_TAIL = (
    rb'"status": "ok", "attempts": \d+, "usage": \{"input_tokens": \d+, "output_tokens": \d+\}'
    rb'(?:, "cost_usd": (?:[-+0-9.eE]+|null))?\}$'
)
#: The start of each of our records (matched after a newline: only at a line start).
ID_HEAD = re.compile(rb'\n\{"id": "([^"\\\n]*)"')
#: Any ok record as our writer lays it out: the id first, :data:`OK_TAIL` last.
OK_RECORD_LINE: tuple[re.Pattern[bytes], re.Pattern[bytes]] = (ID_HEAD, re.compile(OK_TAIL, re.M))


def match_every_line(
    pattern: tuple[re.Pattern[bytes], re.Pattern[bytes]], data: bytes
) -> list[tuple[Any, Any]] | None:
    """Per line of a JSONL file's bytes, what the ``(head, tail)`` patterns capture, when
    every line (each ending in a newline, as our writer ends every record) has both; else
    None. The head starts with a newline, so it matches only at line starts; the tail ends
    with ``$``, so it matches at most once per line: equal counts pair them line by line.

    Surveys read finished runs this way, two regular expressions over the whole file
    instead of a JSON parse per line, and fall back to parsing otherwise."""
    if data and not data.endswith(b"\n"):  # a cut last line: only the parser can judge it
        return None
    lines = data.count(b"\n")
    head, tail = pattern
    heads = head.findall(data)  # every line's but the first: each follows a newline
    # the first line is matched on its own: putting a newline before the whole file copied
    # its bytes (half a second and as much memory again for a gigabyte of judgments)
    first = head.match(b"\n" + data[: data.find(b"\n")]) if data else None
    if first is not None:
        heads.insert(0, first.group(1) if head.groups == 1 else first.groups())
    if len(heads) != lines:
        return None
    tails = tail.findall(data)
    if len(tails) != lines:
        return None
    return list(zip(heads, tails, strict=True))


def scan_lines(data: bytes, reduce: Callable[[dict[str, Any]], T], out: dict[str, T]) -> None:
    """:func:`scan_phase` for the bytes of one JSONL file, into ``out``."""
    collecting = gc.isenabled()
    gc.disable()  # many small objects and no cycles: the collector would only slow this
    try:
        for line in data.split(b"\n"):
            try:
                rec = loads_record(line)
            except ValueError:  # a cut or garbled line: not a record (blank lines too)
                continue
            if isinstance(rec, dict):
                rid = rec.get(ID)
                if isinstance(rid, str) and rid:
                    out[rid] = reduce(rec)
    finally:
        if collecting:
            gc.enable()


def load_file_records(path: Path) -> dict[str, dict[str, Any]]:
    return latest_by_id(iter_jsonl(path))


def call_fields(outcome: Any) -> CallFields:
    """The fields every model-call record carries, from a scheduler ``WorkOutcome``.

    The transcript (what was sent, what came back, how long it took) comes first, the
    status block last: :data:`OK_TAIL` recognises ok records by how they end."""
    fields = transcript_fields(outcome)
    if (speed := getattr(getattr(outcome, "result", None), "tokens_per_s", None)) is not None:
        fields[TOKENS_PER_S] = round(float(speed), 2)  # before the status block: OK_TAIL reads the end
    fields[STATUS] = OK if outcome.status == "ok" else FAILED
    fields[ATTEMPTS] = int(outcome.attempts)
    fields[USAGE] = outcome.usage.to_dict()
    fields[COST_USD] = outcome.cost_usd
    if outcome.status != "ok":
        kind = outcome.error_kind or "error"
        fields[ERROR] = f"{kind}: {outcome.error}" if outcome.error else kind
        fields[ERROR_KIND] = kind
        if kind == "quality" and outcome.error:
            fields[QUALITY_RULE] = str(outcome.error).split(":", 1)[0]
        errors = list(getattr(outcome, "attempt_errors", ()) or ())
        if errors:
            fields[ATTEMPT_ERRORS] = errors
    return fields


def transcript_fields(outcome: Any) -> CallFields:
    """``request`` (the exact prompt sent), ``raw`` (the reply before parsing),
    ``finish_reason`` and ``latency_ms`` of a call, so a run can be inspected call by call
    (``coeval view``). Outcomes of executors that do not report them get what the result
    holds."""
    result = getattr(outcome, "result", None)
    raw = getattr(outcome, "raw", None)
    if raw is None and result is not None:
        raw = result.text
    finish = getattr(outcome, "finish_reason", None)
    if finish is None and result is not None:
        finish = result.finish_reason
    request = outcome.item.request
    sent: dict[str, str] = {"prompt": request.prompt}
    if request.system:
        sent["system"] = request.system
    fields: CallFields = {REQUEST: sent, RAW: raw, FINISH_REASON: None if finish is None else str(finish)}
    fields[LATENCY_MS] = getattr(outcome, "latency_ms", None)
    return fields
