"""Which version of its input a record was made from, so a record built on an input that
was lost and made again is redone, never kept as if it belonged to the new one.

An answer carries ``datapoint_hash``, the version of the datapoint it answered; a judgment
carries ``response_hash``, the version of the answer it scored. A version is the first 16
hex digits of the SHA-256 of the input's text and its ``generated_at`` (so an input made
again counts as new even when a deterministic model wrote the same words). Records written
before these fields existed are judged by time: one made before its input was (re)made is
stale.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import attrs

from coeval.phase_ids import DATA_GENERATION, EVALUATION, RESPONSE_COLLECTION
from coeval.record_schema import (
    DATAPOINT_HASH,
    DATAPOINT_ID,
    EVALUATED_AT,
    GENERATED_AT,
    ID,
    PROMPT,
    REFERENCE_RESPONSE,
    RESPONSE,
    RESPONSE_HASH,
    RESPONSE_ID,
    TASK_ID,
)
from coeval.storage.records import is_ok

__all__ = [
    "DATAPOINT_HASH",
    "RESPONSE_HASH",
    "Answers",
    "datapoint_version",
    "read_answers",
    "response_version",
    "stale_evaluation",
    "stale_note",
    "stale_records",
    "stale_response",
]

_VERSION = "\0version"  #: key of a slim record's own version (never a record field)


def _version(*parts: Any) -> str:
    text = "\0".join("" if p is None else str(p) for p in parts)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def datapoint_version(dp: Mapping[str, Any]) -> str:
    """The version of a datapoint: its prompt, reference and when it was made."""
    return _version(dp.get(PROMPT), dp.get(REFERENCE_RESPONSE), dp.get(GENERATED_AT))


def response_version(resp: Mapping[str, Any]) -> str:
    """The version of an answer: its text and when it was made."""
    return _version(resp.get(RESPONSE), resp.get(GENERATED_AT))


def _older(rec: Mapping[str, Any], field: str, source: Mapping[str, Any]) -> bool:
    made, made_from = rec.get(field), source.get(GENERATED_AT)
    return isinstance(made, str) and isinstance(made_from, str) and made < made_from


def stale_response(resp: Mapping[str, Any], dp: Mapping[str, Any] | None) -> bool:
    """An answer to a datapoint that is gone or was made again since."""
    if dp is None:
        return True
    recorded = resp.get(DATAPOINT_HASH)
    if isinstance(recorded, str):
        return recorded != datapoint_version(dp)
    return _older(resp, GENERATED_AT, dp)


def stale_evaluation(ev: Mapping[str, Any], resp: Mapping[str, Any] | None) -> bool:
    """A judgment of an answer that is gone or was made again since. Model-free records
    (label, metric) are judged the same way: their score came from the old answer too."""
    if resp is None:
        return True
    recorded = ev.get(RESPONSE_HASH)
    if isinstance(recorded, str):
        return recorded != response_version(resp)
    return _older(ev, EVALUATED_AT, resp)


def _latest(records: Iterable[Mapping[str, Any]],
            project: Callable[[Mapping[str, Any]], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """:func:`~coeval.storage.records.load_phase_records` keeping only ``project(record)`` of each
    record: a phase of a million judgments with their transcripts would otherwise sit in
    memory whole (gigabytes) just to compare a few fields."""
    out: dict[str, dict[str, Any]] = {}
    for rec in records:
        rid = rec.get(ID)
        if isinstance(rid, str) and rid:
            out.pop(rid, None)  # the last record of an id wins, as in latest_by_id
            out[rid] = project(rec)
    return out


def _slim_datapoint(dp: Mapping[str, Any]) -> dict[str, Any]:
    return {GENERATED_AT: dp.get(GENERATED_AT), _VERSION: datapoint_version(dp)}


def _slim_response(resp: Mapping[str, Any]) -> dict[str, Any]:
    return {"ok": is_ok(resp), TASK_ID: resp.get(TASK_ID), DATAPOINT_ID: resp.get(DATAPOINT_ID),
            DATAPOINT_HASH: resp.get(DATAPOINT_HASH), GENERATED_AT: resp.get(GENERATED_AT),
            _VERSION: response_version(resp)}  # fmt: skip


def _slim_evaluation(ev: Mapping[str, Any]) -> dict[str, Any]:
    return {"ok": is_ok(ev), TASK_ID: ev.get(TASK_ID), RESPONSE_ID: ev.get(RESPONSE_ID),
            RESPONSE_HASH: ev.get(RESPONSE_HASH), EVALUATED_AT: ev.get(EVALUATED_AT)}  # fmt: skip


def _stale_against(rec: Mapping[str, Any], field: str, made_at: str, source: Mapping[str, Any] | None) -> bool:
    """:func:`stale_response` / :func:`stale_evaluation` on slim records (the source's
    version worked out when it was read)."""
    if source is None:
        return True
    recorded = rec.get(field)
    if isinstance(recorded, str):
        return recorded != str(source[_VERSION])
    return _older(rec, made_at, source)


@attrs.frozen
class Answers:
    """Phase 4's answers as the staleness test sees them: each answer's slim record by id,
    and the ids of those that answer a datapoint gone or made again since."""

    by_id: dict[str, dict[str, Any]]
    stale: set[str]

    def versions(self) -> Iterator[tuple[str, str, str | None, bool]]:
        """(answer id, version, ``generated_at`` when it is text, stale) of each answer, for
        a caller that tests judgments in bulk (``analyze`` does, in DuckDB)."""
        for rid, resp in self.by_id.items():
            made = resp[GENERATED_AT]
            yield rid, str(resp[_VERSION]), made if isinstance(made, str) else None, rid in self.stale


def read_answers(run: Any, tasks: set[str] | None = None) -> Answers:
    """Phases 3 and 4 read once, keeping only the fields the staleness test compares."""
    datapoints = _latest(run.iter_records(DATA_GENERATION), _slim_datapoint)
    responses = _latest(run.iter_records(RESPONSE_COLLECTION), _slim_response)
    stale: set[str] = set()
    for rid, resp in responses.items():
        if not resp["ok"] or (tasks is not None and resp[TASK_ID] not in tasks):
            continue
        if _stale_against(resp, DATAPOINT_HASH, GENERATED_AT, datapoints.get(str(resp[DATAPOINT_ID]))):
            stale.add(rid)
    return Answers(responses, stale)


def stale_records(run: Any, tasks: set[str] | None = None) -> Counter[str]:
    """Phase -> records whose input is gone or was made again (``coeval status`` and
    ``analyze`` flag them; ``--continue`` makes them again). Reads each phase once, keeping
    only the fields it compares (``analyze`` tests the judgments its loader read in bulk:
    ``coeval_analysis.warnings.stale``)."""
    out: Counter[str] = Counter()
    answers = read_answers(run, tasks)
    if answers.stale:
        out[RESPONSE_COLLECTION] = len(answers.stale)
    for ev in _latest(run.iter_records(EVALUATION), _slim_evaluation).values():
        if not ev["ok"] or (tasks is not None and ev[TASK_ID] not in tasks):
            continue
        answer = str(ev[RESPONSE_ID])
        if answer in answers.stale or _stale_against(ev, RESPONSE_HASH, EVALUATED_AT, answers.by_id.get(answer)):
            out[EVALUATION] += 1  # built on a stale answer, it is stale too
    return out


def stale_note(stale: Mapping[str, int]) -> str:
    """One sentence for ``status`` and ``analyze``."""
    parts = []
    if stale.get(EVALUATION):
        parts.append(f"{stale[EVALUATION]} judgments score answers that are gone or were made again since")
    if stale.get(RESPONSE_COLLECTION):
        parts.append(f"{stale[RESPONSE_COLLECTION]} answers answer datapoints that are gone or were made again since")
    return "stale: " + "; ".join(parts) + "; `coeval run --continue` makes them again"
