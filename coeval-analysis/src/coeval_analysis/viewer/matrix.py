"""The matrix page: datapoints down, students across, each cell the answer's score.

A cell holds the mean of the answer's factor scores over every judge (Low 0, Medium 0.5,
High 1), coloured by the level it is nearest to. Clicking a cell (or Enter on the selected
one) asks ``/r/<k>/cell`` for the answer and its judgments and shows them inline under the
row; j/k move between rows, h/l between students, o opens the datapoint's page. The page
is paginated like the start page (50 datapoints).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any
from urllib.parse import quote, urlencode

from coeval_analysis.viewer.pages import (
    call_facts,
    decimal_text,
    escaped,
    judgment_evidence,
    layout,
    pre_block,
    sample_label,
    sample_of,
)
from coeval_analysis.viewer.queries import PAGE_SIZE
from coeval_analysis.viewer.rowsql import sample_sql
from coeval_analysis.viewer.store import RunStore

__all__ = ["answer_cell", "cell_view", "level_of", "matrix_rows", "matrix_view"]

_CSS = """<style>
#matrix td.cell{cursor:pointer;text-align:right;min-width:4rem}
#matrix td.cell.selected{outline:3px solid #1a5fb4;outline-offset:-3px}
.level-high{background:#b7e4b0}.level-medium{background:#fbe3a1}.level-low{background:#f4b4ae}
.level-none{background:#eee;color:#777}tr.expanded>td{background:#fafafa}
.keys{color:#555;font-size:.9rem}kbd{border:1px solid #aaa;border-radius:3px;padding:0 .25rem}
</style>"""

_SCRIPT = """<script>
(function () {
  const rows = Array.from(document.querySelectorAll("#matrix tr.dp-row"));
  let r = 0, c = 0;
  const cellAt = (i, j) => rows[i] ? rows[i].querySelectorAll("td.cell")[j] : undefined;
  function select(i, j) {
    const width = rows.length ? rows[0].querySelectorAll("td.cell").length : 0;
    if (!rows.length || !width) return;
    r = Math.max(0, Math.min(rows.length - 1, i));
    c = Math.max(0, Math.min(width - 1, j));
    document.querySelectorAll("#matrix td.cell.selected").forEach(td => td.classList.remove("selected"));
    const td = cellAt(r, c);
    td.classList.add("selected");
    td.scrollIntoView({block: "nearest"});
  }
  async function toggle(td) {
    const tr = td.parentElement;
    const open = tr.nextElementSibling;
    if (open && open.classList.contains("expanded")) {
      open.remove();
      if (open.dataset.href === td.dataset.href) return;
    }
    const reply = await fetch(td.dataset.href);
    const row = document.createElement("tr");
    row.className = "expanded";
    row.dataset.href = td.dataset.href;
    const cell = document.createElement("td");
    cell.colSpan = tr.children.length;
    cell.innerHTML = await reply.text();
    row.appendChild(cell);
    tr.after(row);
  }
  rows.forEach((tr, i) => tr.querySelectorAll("td.cell").forEach((td, j) => {
    td.addEventListener("click", () => { select(i, j); toggle(td); });
  }));
  document.addEventListener("keydown", e => {
    if (e.target.closest("input, select, textarea") || e.ctrlKey || e.metaKey || e.altKey) return;
    const keys = {j: [1, 0], ArrowDown: [1, 0], k: [-1, 0], ArrowUp: [-1, 0],
                  l: [0, 1], ArrowRight: [0, 1], h: [0, -1], ArrowLeft: [0, -1]};
    if (keys[e.key]) { select(r + keys[e.key][0], c + keys[e.key][1]); e.preventDefault(); }
    else if (e.key === "Enter" && cellAt(r, c)) { toggle(cellAt(r, c)); e.preventDefault(); }
    else if (e.key === "o" && rows[r]) { window.location = rows[r].querySelector("a.dp-link").href; }
  });
  select(0, 0);
})();
</script>"""


def level_of(score: float | None) -> str:
    """The level a mean score is nearest to: ``high`` (2/3 and up), ``medium``, ``low``
    (under 1/3), or ``none`` when the answer has no scored judgment."""
    if score is None:
        return "none"
    return "high" if score >= 2 / 3 else "medium" if score >= 1 / 3 else "low"


def matrix_rows(store: RunStore, page: int) -> tuple[list[str], list[dict[str, Any]], int]:
    """The students (columns), one page of datapoints with each student's cell, and the
    number of datapoints. A cell is ``{"score", "scores", "failed", "samples"}``: the mean
    value, how many factor scores it is the mean of, how many of the answer's judgments
    failed, and over how many samples (answers of the student to the datapoint)."""
    students = [str(r[0]) for r in store.query(
        "SELECT DISTINCT student_model_id FROM judgments WHERE student_model_id IS NOT NULL ORDER BY 1")]
    ids = store.query_dicts(
        "SELECT datapoint_id, any_value(task_id) AS task, count(*) OVER () AS total FROM judgments "
        "GROUP BY datapoint_id ORDER BY datapoint_id LIMIT ? OFFSET ?", [PAGE_SIZE, (page - 1) * PAGE_SIZE])
    if not ids:
        return students, [], 0
    cells = store.query(
        "SELECT datapoint_id, student_model_id, avg(value), count(value), "
        "count(DISTINCT CASE WHEN status <> 'ok' THEN id END), count(DISTINCT response_id) FROM judgments "
        "WHERE datapoint_id IN (SELECT unnest(?::VARCHAR[])) GROUP BY 1, 2", [[r["datapoint_id"] for r in ids]])
    by_key = {(dp, st): {"score": score, "scores": n, "failed": failed, "samples": k}
              for dp, st, score, n, failed, k in cells}
    rows = [{"datapoint_id": r["datapoint_id"], "task": r["task"],
             "cells": [by_key.get((r["datapoint_id"], s)) for s in students]} for r in ids]
    return students, rows, int(ids[0]["total"])


def _cell(base: str, datapoint_id: str, student: str, cell: Mapping[str, Any] | None) -> str:
    href = f"{base}/cell?{urlencode({'dp': datapoint_id, 'student': student})}"
    if cell is None:
        return f'<td class="cell level-none" data-href="{escaped(href)}" title="no judgment">&ndash;</td>'
    title = f"mean of {cell['scores']} factor scores"
    if cell.get("samples", 1) > 1:
        title += f" over {cell['samples']} samples"
    if cell["failed"]:
        title += f"; {cell['failed']} failed judgments"
    text = decimal_text(cell["score"], 2) if cell["score"] is not None else "failed"
    return (f'<td class="cell level-{level_of(cell["score"])}" data-href="{escaped(href)}" data-student="{escaped(student)}" '
            f'title="{escaped(title)}">{text}</td>')


def matrix_page(name: str, base: str, students: Sequence[str], rows: Sequence[Mapping[str, Any]], total: int,
                page: int) -> str:
    head = "".join(f'<th class="student">{escaped(s)}</th>' for s in students)
    body = "".join(
        f'<tr class="dp-row"><td><a class="dp-link" href="{base}/datapoint/{quote(str(r["datapoint_id"]), safe="")}">'
        f'{escaped(r["datapoint_id"])}</a></td><td>{escaped(r["task"])}</td>'
        + "".join(_cell(base, str(r["datapoint_id"]), s, c) for s, c in zip(students, r["cells"], strict=True))
        + "</tr>"
        for r in rows
    )
    pages = max(1, -(-total // PAGE_SIZE))
    nav = []
    if page > 1:
        nav.append(f'<a href="{base}/matrix?page={page - 1}">previous</a>')
    if page < pages:
        nav.append(f'<a id="next-page" href="{base}/matrix?page={page + 1}">next</a>')
    html = (
        f"{_CSS}<p>Each cell is the mean of the answer's factor scores over every judge (Low 0, Medium 0.5, "
        "High 1), coloured by the nearest level: "
        '<span class="level-high">high</span> <span class="level-medium">medium</span> '
        '<span class="level-low">low</span> <span class="level-none">no judgment</span>.</p>'
        '<p class="keys">Click a cell to show the answer and its judgments here; keys: <kbd>j</kbd>/<kbd>k</kbd> '
        "next/previous datapoint, <kbd>h</kbd>/<kbd>l</kbd> previous/next student, <kbd>Enter</kbd> show or hide, "
        "<kbd>o</kbd> open the datapoint's page.</p>"
        f'<p id="matrix-count">{total} datapoints x {len(students)} students, page {page} of {pages}</p>'
        f'<table id="matrix"><tr><th>Datapoint</th><th>Task</th>{head}</tr>{body}</table>'
        f"<p>{' '.join(nav)}</p>{_SCRIPT}"
    )
    return layout(f"Matrix of {name}", html, base)


def matrix_view(store: RunStore, base: str, query: Mapping[str, str]) -> tuple[int, str]:
    try:
        page = max(1, int(query.get("page", "1")))
    except ValueError:
        page = 1
    students, rows, total = matrix_rows(store, page)
    return HTTPStatus.OK, matrix_page(store.name, base, students, rows, total, page)


def answer_cell(store: RunStore, datapoint_id: str, student: str) -> dict[str, Any] | None:
    """One student's answers to one datapoint (one per sample) and every judgment of them
    (None if neither exists)."""
    answers = store.query_dicts(
        f"SELECT * FROM responses WHERE datapoint_id = ? AND student_model_id = ? ORDER BY {sample_sql('id')}",
        [datapoint_id, student])
    evals = store.query_dicts(
        f"SELECT * FROM evals WHERE datapoint_id = ? AND student_model_id = ? ORDER BY {sample_sql('response_id')}, "
        "judge_model_id, id", [datapoint_id, student])
    if not answers and not evals:
        return None
    others = [str(r[0]) for r in store.query(
        "SELECT DISTINCT student_model_id FROM responses WHERE datapoint_id = ? AND student_model_id <> ? ORDER BY 1",
        [datapoint_id, student])]
    return {"answers": answers, "evals": evals, "others": others}


def _judgment_card(e: Mapping[str, Any]) -> str:
    return (f'<div class="card judgment"><h4>judged by {escaped(e.get("judge_model_id"))}</h4>{call_facts(e)}'
            f'<p>scores</p>{pre_block(e.get("scores"), "scores")}<p>rationale</p>{pre_block(e.get("rationale"), "rationale")}'
            f"{judgment_evidence(e) if e.get('execution') else ''}</div>")


def cell_fragment(base: str, datapoint_id: str, student: str, cell: Mapping[str, Any]) -> str:
    """The answers (each labelled "sample k of n" when there are several) and their
    judgments, as HTML the matrix page inserts under the row."""
    answers, evals = cell["answers"], cell["evals"]
    samples = max([1, *(sample_of(a.get("id")) for a in answers), *(sample_of(e.get("response_id")) for e in evals)])
    parts = [f'<div class="answer-detail"><h3>{escaped(student)} on {escaped(datapoint_id)}</h3>']
    ids = [str(a.get("id")) for a in answers] + [str(e.get("response_id")) for e in evals]
    for rid in dict.fromkeys(ids):
        answer = next((a for a in answers if str(a.get("id")) == rid), None)
        head = f'<h4 class="sample-head">{escaped(student)}{sample_label(rid, samples)}</h4>' if samples > 1 else ""
        parts.append(f'<div class="sample-block">{head}')
        if answer is not None:
            parts.append(call_facts(answer) + pre_block(answer.get("response"), "answer-text"))
        else:
            parts.append("<p>(no answer recorded)</p>")
        parts += [_judgment_card(e) for e in evals if str(e.get("response_id")) == rid]
        parts.append("</div>")
    if not ids:
        parts.append("<p>(no answer recorded)</p>")
    links = [f'<a href="{base}/datapoint/{quote(datapoint_id, safe="")}">datapoint page</a>']
    links += [f'<a class="diff-link" href="{base}/diff?{urlencode({"dp": datapoint_id, "a": student, "b": o})}">'
              f"diff with {escaped(o)}</a>" for o in cell["others"]]
    parts.append(f"<p>{' &middot; '.join(links)}</p></div>")
    return "".join(parts)


def cell_view(store: RunStore, base: str, query: Mapping[str, str]) -> tuple[int, str]:
    datapoint_id, student = query.get("dp", ""), query.get("student", "")
    cell = answer_cell(store, datapoint_id, student)
    if cell is None:
        return HTTPStatus.NOT_FOUND, f"<p>No answer of {escaped(student)} to {escaped(datapoint_id)}.</p>"
    return HTTPStatus.OK, cell_fragment(base, datapoint_id, student, cell)
