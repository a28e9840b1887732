"""Search over a run's prompts, answers and judges' rationales, answered by DuckDB.

Every word of the query must occur (case-insensitive, anywhere in the text); results are
grouped by kind (prompt, answer, rationale) and paginated. DuckDB scans the text columns
of the run's database: no separate index to build or keep in step with the records."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any
from urllib.parse import quote, urlencode

from coeval_analysis.viewer.pages import escaped, layout
from coeval_analysis.viewer.queries import PAGE_SIZE
from coeval_analysis.viewer.store import RunStore

__all__ = ["MAX_WORDS", "search", "search_view", "snippet"]

#: words of a query used (the rest are ignored, and the page says so)
MAX_WORDS = 8
_SNIPPET = 90


def _words(q: str) -> list[str]:
    return [w.lower() for w in q.split()][:MAX_WORDS]


def _matches(column: str, n: int) -> str:
    return " AND ".join([f"strpos(lower({column}), ?) > 0"] * n)


def search(store: RunStore, q: str, page: int = 1) -> tuple[list[dict[str, Any]], int]:
    """Records whose prompt, answer or rationale holds every word of ``q``: one page of
    ``{"kind", "datapoint_id", "who", "text"}`` and the number found."""
    words = _words(q)
    if not words:
        return [], 0
    rationale = "CAST(rationale AS VARCHAR)"
    sql = (
        f"SELECT 'prompt' AS kind, id AS datapoint_id, teacher_model_id AS who, prompt AS text FROM datapoints "
        f"WHERE {_matches('prompt', len(words))} "
        "UNION ALL SELECT 'answer', datapoint_id, student_model_id, response FROM responses "
        f"WHERE {_matches('response', len(words))} "
        f"UNION ALL SELECT 'rationale', datapoint_id, judge_model_id || ' on ' || student_model_id, {rationale} "
        f"FROM evals WHERE {_matches(rationale, len(words))}"
    )
    rows = store.query_dicts(
        f"SELECT *, count(*) OVER () AS total FROM ({sql}) ORDER BY kind DESC, datapoint_id, who LIMIT ? OFFSET ?",
        [*words, *words, *words, PAGE_SIZE, (page - 1) * PAGE_SIZE])
    return rows, int(rows[0]["total"]) if rows else 0


def _readable(kind: str, text: str) -> str:
    """A rationale is ``{factor: text}``: shown as ``factor: text`` lines."""
    if kind == "rationale":
        try:
            value = json.loads(text)
        except ValueError:
            return text
        if isinstance(value, dict):
            return "\n".join(f"{k}: {v}" for k, v in value.items())
        return str(value)
    return text


def snippet(text: str, words: Sequence[str]) -> str:
    """HTML: the text around the first word found, every word marked."""
    low = text.lower()
    first = min((i for i in (low.find(w) for w in words) if i >= 0), default=0)
    start, end = max(0, first - _SNIPPET), min(len(text), first + _SNIPPET)
    part = ("..." if start else "") + text[start:end] + ("..." if end < len(text) else "")
    pattern = re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)), re.IGNORECASE)
    out, at = [], 0
    for m in pattern.finditer(part):
        out.append(escaped(part[at:m.start()]) + f"<mark>{escaped(m.group())}</mark>")
        at = m.end()
    return "".join(out) + escaped(part[at:])


def search_page(name: str, base: str, q: str, rows: Sequence[Mapping[str, Any]], total: int, page: int) -> str:
    words = _words(q)
    form = (f'<form id="search" method="get" action="{base}/search"><input name="q" value="{escaped(q)}" size="40" '
            'placeholder="words in prompts, answers or rationales" autofocus> <button type="submit">Search</button>'
            "</form>")
    if not words:
        return layout(f"Search {name}", form + "<p>Every word must occur (case does not matter).</p>", base)
    ignored = q.split()[MAX_WORDS:]
    note = f"<p>Only the first {MAX_WORDS} words are used.</p>" if ignored else ""
    body = "".join(
        f'<tr class="hit" data-kind="{escaped(r["kind"])}"><td>{escaped(r["kind"])}</td><td><a class="dp-link" '
        f'href="{base}/datapoint/{quote(str(r["datapoint_id"]), safe="")}">{escaped(r["datapoint_id"])}</a></td>'
        f'<td>{escaped(r["who"])}</td><td class="snippet">{snippet(_readable(str(r["kind"]), str(r["text"])), words)}'
        "</td></tr>"
        for r in rows
    )
    pages = max(1, -(-total // PAGE_SIZE))
    nav = []
    if page > 1:
        nav.append(f'<a href="{base}/search?{urlencode({"q": q, "page": page - 1})}">previous</a>')
    if page < pages:
        nav.append(f'<a id="next-page" href="{base}/search?{urlencode({"q": q, "page": page + 1})}">next</a>')
    html = (f'{form}{note}<p id="search-count">{total} prompts, answers and rationales hold every word, '
            f'page {page} of {pages}</p><table id="hits"><tr><th>In</th><th>Datapoint</th><th>Whose</th>'
            f"<th>Text</th></tr>{body}</table><p>{' '.join(nav)}</p>")
    return layout(f"Search {name}", html, base)


def search_view(store: RunStore, base: str, query: Mapping[str, str]) -> tuple[int, str]:
    q = query.get("q", "").strip()
    try:
        page = max(1, int(query.get("page", "1")))
    except ValueError:
        page = 1
    rows, total = search(store, q, page)
    return HTTPStatus.OK, search_page(store.name, base, q, rows, total, page)
