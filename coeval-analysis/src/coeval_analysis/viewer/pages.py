"""HTML of the viewer's pages. Every value from a run is escaped; pages are plain HTML
with a little CSS and no script, so they work in any browser and in tests."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import quote, urlencode

from coeval_analysis.viewer.headline import early_leaderboard_html, leaderboard_rows_html
from coeval_analysis.viewer.outline import LeaderboardRows
from coeval_analysis.viewer.queries import FILTERS, PAGE_SIZE, Filters

__all__ = ["call_facts", "compare_page", "datapoint_page", "decimal_text", "error_page", "escaped", "indexing_notice",
           "indexing_page", "judgment_evidence", "layout", "not_found_page", "pre_block", "sample_label", "sample_of",
           "samples_per_student", "start_page"]

_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5rem;color:#222}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ccc;padding:.25rem .5rem;vertical-align:top}
th{background:#f3f3f3;text-align:left}pre{white-space:pre-wrap;max-width:60rem;margin:0;font-size:.85rem}
.cols{display:flex;gap:1rem;flex-wrap:wrap}.card{border:1px solid #ccc;padding:.5rem;min-width:18rem;flex:1}
.failed{color:#a00}nav a{margin-right:1rem}nav form{display:inline;margin-right:1rem}form label{margin-right:.5rem}
"""


def escaped(value: Any) -> str:
    return "" if value is None else escape(str(value))


def decimal_text(value: Any, digits: int = 3) -> str:
    return "" if value is None else f"{float(value):.{digits}f}"


def layout(title: str, body: str, base: str = "", *, refresh_s: int = 0) -> str:
    """A page; ``refresh_s`` > 0 makes the browser load it again after that many seconds."""
    run_links = (f'<a href="{base}/matrix">Matrix</a><a href="{base}/failures">Failures</a>'
                 f'<form class="nav-search" method="get" action="{base}/search"><input name="q" size="24" '
                 'placeholder="search prompts, answers, rationales"></form>') if base else ""
    nav = f'<nav><a href="{base}/">Start</a>{run_links}<a href="/">All runs</a></nav>'

    refresh = f'<meta http-equiv="refresh" content="{refresh_s}">' if refresh_s > 0 else ""
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">{refresh}<title>{escaped(title)}</title>'
            f"<style>{_CSS}</style></head><body>{nav}<h1>{escaped(title)}</h1>{body}</body></html>")


def _link(base: str, params: Mapping[str, str]) -> str:
    return f"{base}/?{urlencode({k: v for k, v in params.items() if v})}"


def ranking_table(rows: Sequence[Mapping[str, Any]], base: str, table_id: str = "ranking") -> str:
    body = "".join(
        f'<tr><td>{i}</td><td><a class="student-link" href="{_link(base, {"student": r["student"]})}">'
        f'{escaped(r["student"])}</a></td><td>{decimal_text(r["mean"])}</td><td>{r["n"]}</td><td>{r["datapoints"]}</td></tr>'
        for i, r in enumerate(rows, 1)
    )
    return (f'<table id="{table_id}"><tr><th>#</th><th>Student</th><th>Mean score</th><th>Factor scores</th>'
            f"<th>Datapoints</th></tr>{body}</table>")


def _filter_form(facets: Mapping[str, Sequence[str]], f: Filters) -> str:
    selects = []
    for key in FILTERS:
        options = "".join(
            f'<option value="{escaped(v)}"{" selected" if f.where.get(key) == v else ""}>{escaped(v)}</option>'
            for v in facets.get(key, ())
        )
        selects.append(f'<label>{key} <select name="{key}"><option value="">any</option>{options}</select></label>')
    students = facets.get("student", ())
    pick = {
        name: "".join(f'<option value="{escaped(s)}"{" selected" if cur == s else ""}>{escaped(s)}</option>' for s in students)
        for name, cur in (("a", f.student_a), ("b", f.student_b))
    }
    sorts = "".join(
        f'<option value="{s}"{" selected" if f.sort == s else ""}>{label}</option>'
        for s, label in (("id", "datapoint id"), ("disagreement", "judge disagreement (most disputed first)"),
                         ("gap", "score gap between student A and B"))
    )
    return (f'<form id="filters" method="get">{"".join(selects)}<br><label>sort <select name="sort">{sorts}</select>'
            f'</label><label>A <select name="a"><option value=""></option>{pick["a"]}</select></label>'
            f'<label>B <select name="b"><option value=""></option>{pick["b"]}</select></label>'
            '<button type="submit">Apply</button></form>')


def _links(base: str, facets: Mapping[str, Sequence[str]]) -> str:
    parts = []
    for key in ("student", "task", "teacher", "judge"):
        links = ", ".join(f'<a href="{_link(base, {key: v})}">{escaped(v)}</a>' for v in facets.get(key, ()))
        parts.append(f"<p><b>{key}s:</b> {links}</p>")
    return "".join(parts)


def start_page(name: str, base: str, ranking: Sequence[Mapping[str, Any]], facets: Mapping[str, Sequence[str]],
               rows: Sequence[Mapping[str, Any]], total: int, f: Filters, *, notice: str = "",
               headline: str = "") -> str:
    body_rows = "".join(
        f'<tr><td><a class="dp-link" href="{base}/datapoint/{quote(str(r["datapoint_id"]), safe="")}">'
        f'{escaped(r["datapoint_id"])}</a></td><td>{escaped(r["task"])}</td><td>{escaped(r["teacher"])}</td>'
        f'<td>{r["judgments"]}</td><td>{r["failed"]}</td><td>{decimal_text(r["mean"])}</td>'
        f'<td class="disagreement">{decimal_text(r["disagreement"])}</td><td class="gap">{decimal_text(r["gap"])}</td></tr>'
        for r in rows
    )
    pages = max(1, -(-total // PAGE_SIZE))
    params = {**f.where, "sort": f.sort, "a": f.student_a, "b": f.student_b}
    nav = []
    if f.page > 1:
        nav.append(f'<a href="{_link(base, {**params, "page": str(f.page - 1)})}">previous</a>')
    if f.page < pages:
        nav.append(f'<a id="next-page" href="{_link(base, {**params, "page": str(f.page + 1)})}">next</a>')
    # one ranking on the page: the leaderboard when there is a current analysis, else the mean, labelled
    mean = "" if 'id="leaderboard"' in headline else (
        "<h2>Mean score of the judgments</h2><p>Not the leaderboard: every judgment counts equally; follows "
        f"the filters below.</p>{ranking_table(ranking, base)}")
    body = (
        f"{notice}{headline}{mean}{_links(base, facets)}"
        f"<h2>Datapoints</h2>{_filter_form(facets, f)}"
        f'<p id="count">{total} datapoints, page {f.page} of {pages}</p>'
        '<table id="datapoints"><tr><th>Datapoint</th><th>Task</th><th>Teacher</th><th>Factor scores</th>'
        f"<th>Failed judgments</th><th>Mean</th><th>Disagreement</th><th>Gap A-B</th></tr>{body_rows}</table>"
        f"<p>{' '.join(nav)}</p>"
    )
    return layout(f"Run {name}", body, base)


def pre_block(value: Any, cls: str = "") -> str:
    if isinstance(value, str) and value.startswith(("{", "[")):
        with contextlib.suppress(ValueError):
            value = json.dumps(json.loads(value), indent=1, ensure_ascii=False)
    return f'<pre class="{cls}">{escaped(value)}</pre>'


def call_facts(rec: Mapping[str, Any]) -> str:
    facts = [f'status <b class="{"failed" if rec.get("status") == "failed" else ""}">{escaped(rec.get("status"))}</b>']
    if rec.get("latency_ms") is not None:
        facts.append(f"{decimal_text(rec['latency_ms'], 1)} ms")
    if rec.get("cost_usd") is not None:
        facts.append(f"${decimal_text(rec['cost_usd'], 6)}")
    if rec.get("error"):
        facts.append(f'<span class="failed">{escaped(rec["error"])}</span>')
    return "<p>" + " &middot; ".join(facts) + "</p>"


def sample_of(response_id: Any) -> int:
    """Which of a student's answers to a datapoint this is (``samples: k``: ids of answers
    2..k end in ``__sample{n}``)."""
    found = re.search(r"__sample(\d+)$", str(response_id or ""))
    return int(found.group(1)) if found else 1


def sample_label(response_id: Any, samples: int) -> str:
    """" &middot; sample 2 of 3" with several samples, else nothing."""
    return f' &middot; <span class="sample">sample {sample_of(response_id)} of {samples}</span>' if samples > 1 else ""


def _execution(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """A code test's outcome (status, error, duration), when the record ran one."""
    value = record.get("execution")
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = json.loads(value)
    return value if isinstance(value, dict) else None


def judgment_evidence(e: Mapping[str, Any]) -> str:
    """What the score rests on: a code test's status and error, or the judge's raw reply."""
    run = _execution(e)
    if run is None:
        raw = e.get("raw") if e.get("raw") is not None else "(not recorded)"
        return f"<p>raw reply</p>{pre_block(raw, 'judge-raw')}"
    status = str(run.get("status") or "")
    took = f" in {decimal_text(run['duration_s'], 2)} s" if isinstance(run.get("duration_s"), int | float) else ""
    error = run.get("error")
    return (f'<p>test <b class="test-status{" failed" if status != "passed" else ""}">{escaped(status)}</b>{took}</p>'
            + (f"<p>error</p>{pre_block(error, 'test-error')}" if error else ""))


def samples_per_student(responses: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in responses:
        student = str(r.get("student_model_id"))
        out[student] = max(out.get(student, 1), sample_of(r.get("id")))
    return out


def datapoint_page(name: str, base: str, detail: Mapping[str, Any]) -> str:
    dp = detail["datapoint"]
    head = (
        f"<p>task <b>{escaped(dp.get('task_id'))}</b> &middot; teacher <b>{escaped(dp.get('teacher_model_id'))}</b></p>"
        f'<h2>Prompt</h2>{pre_block(dp.get("prompt"), "prompt")}<h2>Reference</h2>{pre_block(dp.get("reference_response"))}'
        f"<h2>Attributes</h2>{pre_block(dp.get('sampled_target_attributes'))}"
    )
    samples = samples_per_student(detail["responses"])
    for e in detail["evals"]:  # a student with judged samples whose answers are gone still counts them
        student = str(e.get("student_model_id"))
        samples[student] = max(samples.get(student, 1), sample_of(e.get("response_id")))
    answers = "".join(
        f'<div class="card answer"><h3>{escaped(r.get("student_model_id"))}'
        f'{sample_label(r.get("id"), samples.get(str(r.get("student_model_id")), 1))}</h3>{call_facts(r)}'
        f'{pre_block(r.get("response"))}</div>'
        for r in detail["responses"]
    )
    judges = "".join(
        f'<div class="card judgment"><h3>{escaped(e.get("judge_model_id"))} on {escaped(e.get("student_model_id"))}'
        f'{sample_label(e.get("response_id"), samples.get(str(e.get("student_model_id")), 1))}</h3>'
        f'{call_facts(e)}<p>scores</p>{pre_block(e.get("scores"), "scores")}<p>rationale</p>{pre_block(e.get("rationale"))}'
        f"{judgment_evidence(e)}</div>"
        for e in detail["evals"]
    )
    if len(detail["responses"]) >= 2:
        head += (f'<p><a id="diff-link" href="{base}/diff?{urlencode({"dp": str(dp.get("id"))})}">Compare two '
                 "answers word by word</a></p>")
    body = f'{head}<h2>Answers</h2><div class="cols">{answers}</div><h2>Judgments</h2><div class="cols">{judges}</div>'
    return layout(f"Datapoint {dp.get('id')}", body, base)


def _run_ranking(rows: Sequence[Mapping[str, Any]], base: str, table_id: str) -> str:
    """A run's leaderboard when its analysis is current, else the mean of its judgments."""
    if isinstance(rows, LeaderboardRows):
        return leaderboard_rows_html(rows.table.header, rows.table.rows, table_id, base)
    return "<p>Mean score of the judgments (no current analysis)</p>" + ranking_table(rows, base, table_id)


def compare_page(runs: Sequence[tuple[str, str, Sequence[Mapping[str, Any]]]],
                 shared: tuple[Sequence[Mapping[str, Any]], int] | None, indexing: Mapping[str, Any] | None = None) -> str:
    """Every run's ranking side by side; for two runs, the datapoints they share (``shared``
    is None while a run is still being read: ``indexing`` then says how far it is)."""
    cards = "".join(
        f'<div class="card"><h2><a href="{base}/">{escaped(name)}</a></h2>{_run_ranking(rows, base, f"ranking-{i}")}</div>'
        for i, (name, base, rows) in enumerate(runs)
    )
    body = f'<div class="cols" id="compare">{cards}</div>'
    if len(runs) == 2 and shared is None:
        return layout("Runs", body + "<h2>Shared datapoints</h2>" + indexing_notice(indexing or {"progress": 0}),
                      refresh_s=1)
    if len(runs) == 2 and shared is not None:
        first, second = runs[0][1], runs[1][1]
        shared_rows = "".join(
            f'<tr><td>{escaped(r["id"])}</td><td><a href="{first}/datapoint/{quote(str(r["id"]), safe="")}">in '
            f'{escaped(runs[0][0])}</a></td><td><a href="{second}/datapoint/{quote(str(r["id"]), safe="")}">in '
            f"{escaped(runs[1][0])}</a></td></tr>"
            for r in shared[0]
        )
        body += (f'<h2>Shared datapoints</h2><p id="shared-count">{shared[1]} datapoints with the same id and prompt '
                 f'in both runs</p><table id="shared"><tr><th>Datapoint</th><th></th><th></th></tr>{shared_rows}</table>')
    return layout("Runs", body)


def indexing_notice(status: Mapping[str, Any]) -> str:
    """"indexing n%" with the step under way (the page reloads itself until it is done)."""
    return (f'<p id="indexing">Reading the run\'s records: indexing {round(100 * float(status["progress"]))}% '
            f'({escaped(status.get("step"))}). This page reloads itself until they are all read.</p>')


def _early_ranking(base: str, ranking: Sequence[Mapping[str, str]], preliminary: Sequence[Mapping[str, Any]]) -> str:
    """The last analysis's ranking when there is one, else the preliminary one."""
    if ranking:
        return early_leaderboard_html(ranking)
    if preliminary:
        rows = "".join(
            f'<tr><td>{i}</td><td><a class="student-link" href="{_link(base, {"student": str(r["student"])})}">'
            f'{escaped(r["student"])}</a></td><td>{decimal_text(r["mean"])}</td><td>{r["n"]}</td></tr>'
            for i, r in enumerate(preliminary, 1)
        )
        return ("<h2>Preliminary ranking</h2><p>Every ok judgment as read, before retries and duplicates are "
                'merged: the final ranking can differ slightly.</p><table id="preliminary-ranking"><tr><th>#</th>'
                f"<th>Student</th><th>Mean score</th><th>Factor scores</th></tr>{rows}</table>")
    return ""


def indexing_page(title: str, base: str, status: Mapping[str, Any], outline: Mapping[str, Sequence[str]],
                  ranking: Sequence[Mapping[str, str]] = (), preliminary: Sequence[Mapping[str, Any]] = ()) -> str:
    """A page asked for before the run's database holds what it needs: how far the build
    is, a ranking (the last analysis's, else one read straight from the records), and the
    models and tasks the run's config names."""
    early = _early_ranking(base, ranking, preliminary)
    parts = [early]
    filters = {"students": "student", "teachers": "teacher", "judges": "judge", "tasks": "task"}
    for key, param in filters.items():
        names = outline.get(key) or ()
        if names:
            link_class = ' class="student-link"' if key == "students" and not early else ""
            items = "".join(f'<li><a{link_class} href="{_link(base, {param: n})}">{escaped(n)}</a></li>' for n in names)
            parts.append(f'<h2>{key.capitalize()}</h2><ul id="outline-{key}">{items}</ul>')
    return layout(title, indexing_notice(status) + "".join(parts), base, refresh_s=1)


def error_page(what: str) -> str:
    return layout("Error", f'<p class="failed">{escaped(what)}</p>')


def not_found_page(what: str) -> str:
    return layout("Not found", f"<p>{escaped(what)}</p>")
