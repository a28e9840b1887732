"""The failures page: every failed call of phases 3-5, grouped by cause and, within a
cause, identical errors once with a count; and the teacher replies the item-quality checks
rejected (``meta.json``'s counts, which include replies a retry then fixed)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any

from coeval.quality.ledger import rejections

from coeval_analysis.loading.run_files import read_text
from coeval_analysis.viewer.pages import escaped, layout, pre_block
from coeval_analysis.viewer.queries import PAGE_SIZE
from coeval_analysis.viewer.store import RunStore

__all__ = ["failure_groups", "failures_page", "failures_view", "rejected_replies"]

_FAILED_UNION = (
    "SELECT 'datapoint' AS phase, id, teacher_model_id AS model, error_kind, error, raw, "
    "CAST(attempt_errors AS VARCHAR) AS attempt_errors FROM datapoints WHERE status = 'failed' "
    "UNION ALL SELECT 'response', id, student_model_id, error_kind, error, raw, "
    "CAST(attempt_errors AS VARCHAR) FROM responses WHERE status = 'failed' "
    "UNION ALL SELECT 'evaluation', id, judge_model_id, error_kind, error, raw, "
    "CAST(attempt_errors AS VARCHAR) FROM evals WHERE status = 'failed'"
)
_CAUSE = "coalesce(error_kind, 'no error recorded')"
#: record ids listed per group of identical errors (the rest are counted)
IDS_SHOWN = 10


def failure_groups(store: RunStore, per_cause: int = PAGE_SIZE) -> list[dict[str, Any]]:
    """Failed calls by cause (``error_kind``), most common first: ``{"cause", "n", "rows"}``,
    each row one distinct error of one phase (``n`` calls, the models that made it, the
    first :data:`IDS_SHOWN` record ids, and the first record's raw reply and attempt
    errors as an example)."""
    groups = store.query_dicts(f"SELECT {_CAUSE} AS cause, count(*) AS n FROM ({_FAILED_UNION}) "
                               "GROUP BY 1 ORDER BY n DESC, cause")
    for group in groups:
        group["rows"] = store.query_dicts(
            "SELECT phase, error, count(*) AS n, string_agg(DISTINCT model, ', ' ORDER BY model) AS models, "
            f"list(id ORDER BY id)[1:{IDS_SHOWN}] AS ids, arg_min(raw, id) AS raw, "
            "arg_min(attempt_errors, id) AS attempt_errors "
            f"FROM ({_FAILED_UNION}) WHERE {_CAUSE} = ? GROUP BY phase, error "
            "ORDER BY n DESC, phase, error LIMIT ?",
            [group["cause"], per_cause])
        group["distinct"] = int(store.query(
            f"SELECT count(DISTINCT (phase, error)) FROM ({_FAILED_UNION}) WHERE {_CAUSE} = ?", [group["cause"]])[0][0])
    return groups


def rejected_replies(store: RunStore) -> dict[str, dict[str, int]]:
    """``{teacher: {rule: count}}`` of ``meta.json`` (empty when the run keeps none)."""
    try:
        meta = json.loads(read_text(store.run / "meta.json"))
    except (OSError, ValueError):
        return {}
    return rejections(meta) if isinstance(meta, dict) else {}


def _rejected_section(rejected: Mapping[str, Mapping[str, int]]) -> str:
    rows = [(t, rule, n) for t, rules in sorted(rejected.items()) for rule, n in sorted(rules.items()) if n]
    if not rows:
        return '<section id="rejected"><h2>Rejected teacher replies</h2><p>No teacher reply was rejected.</p></section>'
    body = "".join(f"<tr><td>{escaped(t)}</td><td>{escaped(rule)}</td><td>{n}</td></tr>" for t, rule, n in rows)
    return (f'<section id="rejected"><h2>Rejected teacher replies ({sum(n for *_, n in rows)} replies)</h2>'
            "<p>Replies the item-quality checks rejected, counted when rejected: those a retry then fixed too "
            "(an item whose retries all were rejected is also listed above, under <i>quality</i>).</p>"
            f"<table><tr><th>Teacher</th><th>Rule</th><th>Replies rejected</th></tr>{body}</table></section>")


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _records(ids: list[str], n: int) -> str:
    shown = ", ".join(f'<span class="record-id">{escaped(i)}</span>' for i in ids)
    return shown + (f" and {n - len(ids)} more" if n > len(ids) else "")


def failures_page(name: str, base: str, groups: Sequence[Mapping[str, Any]],
                  rejected: Mapping[str, Mapping[str, int]]) -> str:
    sections = []
    for g in groups:
        rows = "".join(
            f'<tr class="error-group"><td>{escaped(r["phase"])}</td><td class="times">{r["n"]}</td><td>{escaped(r["models"])}</td>'
            f'<td>{_records(list(r["ids"]), int(r["n"]))}</td>'
            f'<td>{pre_block(r["error"])}{pre_block(r["attempt_errors"])}</td><td>{pre_block(r["raw"], "failure-raw")}</td></tr>'
            for r in g["rows"]
        )
        shown = len(g["rows"])
        more = f"<p>{g['distinct'] - shown} more distinct errors not shown.</p>" if g["distinct"] > shown else ""
        sections.append(
            f'<section class="cause" data-cause="{escaped(g["cause"])}"><h2>{escaped(g["cause"])} ({_count(g["n"], "failed call")}, '
            f'{_count(g["distinct"], "distinct error")})</h2><table><tr><th>Phase</th><th>Calls</th><th>Models</th>'
            f"<th>Records</th><th>Error</th><th>Raw reply (first)</th></tr>{rows}</table>{more}</section>"
        )
    if not groups:
        sections.append('<p id="no-failures">No failed or unparseable call.</p>')
    return layout(f"Failures of {name}", "".join(sections) + _rejected_section(rejected), base)


def failures_view(store: RunStore, base: str, query: Mapping[str, str]) -> tuple[int, str]:
    return HTTPStatus.OK, failures_page(store.name, base, failure_groups(store), rejected_replies(store))
