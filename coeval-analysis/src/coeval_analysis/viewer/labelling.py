"""The viewer's Label page and the one route that changes a run: ``POST /r/<k>/label``.

Both exist only when ``coeval view`` was started with ``--label NAME``. The page shows one
answer at a time (the next in the suggestion order of
:mod:`coeval_analysis.labels.suggestions`) with its prompt, reference and the rubric's
factors as level buttons; the keys 1 / 2 / 3 (or l / m / h) give the focused factor a
level and move on, and once every factor has one the labels are posted and the next
suggestion loads. The student's name is not shown: labels are blind.

A POST is taken only from the viewer's own page: its ``Host`` must name this server
(else 421) and its ``Origin`` must be that same ``http://host:port`` (else 403), with a
JSON body (else 415), so no other site a browser visits can write labels, and a DNS name
pointed at 127.0.0.1 cannot either. The labeller's name comes from the command line,
never from the request.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from html import escape
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote, urlsplit

from coeval_analysis.viewer.pages import layout

if TYPE_CHECKING:  # the rest loads on the first label page: `coeval --help` lists `view`
    from http.server import BaseHTTPRequestHandler

    from coeval_analysis.labels.suggestions import Candidate
    from coeval_analysis.labels.units import LabelUnits
    from coeval_analysis.viewer.guard import ViewGuard
    from coeval_analysis.viewer.store import RunStore

__all__ = ["LabelDesk", "handle_post"]

log = logging.getLogger("coeval.view")
#: suggestions worked out at once (the page walks them in order)
ORDER_SIZE = 500
_MAX_BODY = 64 * 1024


class _Session:
    """Labelling of one run: its units and its suggestion order, worked out on first use."""

    def __init__(self, run: Path) -> None:
        self.run = run
        self._lock = threading.Lock()
        self._units: LabelUnits | None = None
        self._order: list[Candidate] | None = None
        #: when the order was made: the labels, and how many more would settle the ranking
        self.note = ""

    def units(self) -> LabelUnits:
        from coeval_analysis.labels.units import LabelUnits

        with self._lock:
            if self._units is None:
                self._units = LabelUnits.read(self.run)
            return self._units

    def order(self) -> list[Candidate]:
        from coeval_analysis.labels.human_labels import run_labels
        from coeval_analysis.labels.suggestions import order_with_summary

        units = self.units()
        with self._lock:
            if self._order is None:
                picks, summary = order_with_summary(self.run, run_labels(self.run), ORDER_SIZE)
                self._order = [c for c in picks if units.factors_of(c.datapoint_id)]
                self.note = str((summary.get("reference") or {}).get("line") or "")
            return self._order

    def next(self, after: str = "") -> tuple[Candidate | None, int]:
        """The first suggestion not labelled yet (after response ``after`` when given), and
        its place in the order (1-based)."""
        from coeval_analysis.labels.human_labels import run_labels
        from coeval_analysis.labels.suggestions import labelled_answers

        done = labelled_answers(run_labels(self.run))
        order = self.order()
        start = next((i + 1 for i, c in enumerate(order) if c.response_id == after), 0) if after else 0
        for i in range(start, len(order)):
            c = order[i]
            if not done.get((c.datapoint_id, c.student)):
                return c, i + 1
        return None, 0


class LabelDesk:
    """What ``coeval view --label NAME`` adds to the server: a session per run."""

    def __init__(self, labeler: str, stores: Sequence[RunStore]) -> None:
        self.labeler = labeler
        self.sessions = [_Session(s.run) for s in stores]

    def page(self, k: int, name: str, query: dict[str, str]) -> tuple[int, str, str]:
        from coeval_analysis.labels.human_labels import read_labels

        session = self.sessions[k]
        base = f"/r/{k}"
        labels = read_labels(session.run)
        mine = sum(1 for lab in labels if lab.labeler == self.labeler)
        cand, place = session.next(query.get("after", ""))
        counts = (f'<p id="label-count">{len(labels)} label(s) in this run, <span id="mine">{mine}</span> by '
                  f"{escape(self.labeler)}.</p>")  # fmt: skip
        if cand is None:
            body = counts + '<p id="no-suggestion">Nothing left to suggest: every suggested answer is labelled.</p>'
            return HTTPStatus.OK, layout(f"Label {name}", body, base), "html"
        if session.note:
            counts += f'<p id="labels-line">When these suggestions were made: {escape(session.note)}</p>'
        return HTTPStatus.OK, _answer_page(name, base, session.units(), cand, place, len(session.order()), counts), "html"

    def post(self, k: int, payload: Any) -> tuple[int, dict[str, Any]]:
        """Check and store one answer's labels; (status, JSON reply)."""
        if not isinstance(payload, dict) or not isinstance(payload.get("levels"), dict):
            return HTTPStatus.BAD_REQUEST, {"error": "expected {datapoint_id, student, answer_sha256, levels}"}
        session = self.sessions[k]
        units = session.units()
        dp, student = str(payload.get("datapoint_id") or ""), str(payload.get("student") or "")
        ans = units.answers.get((dp, student))
        if ans is not None and payload.get("answer_sha256") not in (None, ans.sha256):
            return HTTPStatus.CONFLICT, {"error": "the answer changed since the page was shown; reload it"}
        errors, labels = [], []
        for factor, level in payload["levels"].items():
            why = units.problem(dp, student, str(factor), str(level))
            if why:
                errors.append(why)
            else:
                labels.append(units.label(dp, student, str(factor), str(level), self.labeler))
        if errors or not labels:
            return HTTPStatus.BAD_REQUEST, {"error": "; ".join(errors) or "no level given"}
        from coeval_analysis.labels.human_labels import save_labels

        written = save_labels(session.run, labels)
        return HTTPStatus.OK, {"written": written, "next": f"/r/{k}/label"}


def _answer_page(name: str, base: str, units: LabelUnits, c: Candidate, place: int, total: int, counts: str) -> str:
    from coeval_analysis.labels.human_labels import LEVELS

    ans = units.answers[(c.datapoint_id, c.student)]
    dp = units.datapoints.get(c.datapoint_id, {})
    task = units.task_of(c.datapoint_id)
    text = units.answer_texts([ans.response_id])[ans.response_id]
    rows = "".join(
        f'<tr class="factor" data-factor="{escape(f)}"><th>{escape(f)}</th><td>{escape(units.criteria.get(task, {}).get(f, ""))}'
        "</td><td>" + "".join(
            f'<button type="button" class="level" data-level="{lv}">{i}&nbsp;{lv}</button> '
            for i, lv in enumerate(LEVELS, 1)
        ) + "</td></tr>"
        for f in units.factors_of(c.datapoint_id)
    )  # fmt: skip
    unit = {"datapoint_id": c.datapoint_id, "student": c.student, "answer_sha256": ans.sha256}
    body = (
        f'{counts}<p>Suggestion {place} of {total} (answers whose labels most narrow what the ranking cannot yet '
        'tell; see docs/analysis.md). The student is not shown.</p>'
        f'<p>datapoint <b id="dp">{escape(c.datapoint_id)}</b> &middot; task {escape(task)} &middot; '
        f'<a id="skip" href="{base}/label?after={quote(c.response_id, safe="")}">skip</a></p>'
        f'<div class="cols"><div class="card"><h2>Prompt</h2><pre>{escape(str(dp.get("prompt", "")))}</pre></div>'
        f'<div class="card"><h2>Reference</h2><pre>{escape(str(dp.get("reference", "")))}</pre></div></div>'
        f'<h2>Answer</h2><pre id="answer">{escape(text)}</pre>'
        f'<h2>Levels</h2><p>Keys: 1 Low, 2 Medium, 3 High (or l, m, h) for the highlighted factor; Backspace goes '
        f'back. The labels are saved once every factor has a level.</p><table id="factors">{rows}</table>'
        f'<p id="status"></p><script id="unit" type="application/json">{_json_island(unit)}</script>'
        f"<script>{_SCRIPT}</script>"
    )
    return layout(f"Label {name}", body, base).replace(
        "</style>", ".factor.focus{outline:2px solid #4c78a8}.level.on{background:#4c78a8;color:#fff}</style>", 1
    )


#: what an HTML parser reads inside ``<script>`` (``</script>``, ``<!--``) or what ends a
#: JavaScript line, written as JSON ``\\u`` escapes (which JSON.parse reads back unchanged)
_SCRIPT_UNSAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                                "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _json_island(obj: Any) -> str:
    """``obj`` as JSON safe inside ``<script type="application/json">``, whatever its text."""
    return json.dumps(obj, ensure_ascii=False).translate(_SCRIPT_UNSAFE)


_SCRIPT = """
(function(){
const unit = JSON.parse(document.getElementById('unit').textContent);
const rows = Array.from(document.querySelectorAll('tr.factor'));
const keys = {'1':'Low','2':'Medium','3':'High','l':'Low','m':'Medium','h':'High'};
const levels = {}; let focus = 0; let sent = false;
function show(){ rows.forEach((r,i)=>r.classList.toggle('focus', i===focus)); }
function set(i, level){
  const f = rows[i].dataset.factor; levels[f] = level;
  rows[i].querySelectorAll('button.level').forEach(b=>b.classList.toggle('on', b.dataset.level===level));
  focus = Math.min(i + 1, rows.length - 1); show();
  if (Object.keys(levels).length === rows.length) send();
}
async function send(){
  if (sent) return; sent = true;
  document.getElementById('status').textContent = 'saving...';
  const reply = await fetch(location.pathname, {method:'POST', headers:{'Content-Type':'application/json'},
                            body: JSON.stringify({...unit, levels})});
  const data = await reply.json();
  if (reply.ok) { location.href = data.next; }
  else { sent = false; document.getElementById('status').textContent = 'not saved: ' + data.error; }
}
rows.forEach((r,i)=>r.querySelectorAll('button.level').forEach(b=>b.addEventListener('click',()=>set(i, b.dataset.level))));
document.addEventListener('keydown', e=>{
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const level = keys[e.key.toLowerCase()];
  if (level) { e.preventDefault(); set(focus, level); }
  else if (e.key === 'Backspace') { e.preventDefault(); focus = Math.max(0, focus - 1); show(); }
});
show();
})();
"""


def _reply(handler: BaseHTTPRequestHandler, status: int, obj: dict[str, Any]) -> None:
    data = json.dumps(obj).encode("utf-8")
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def handle_post(handler: BaseHTTPRequestHandler, desk: LabelDesk | None, n_runs: int, guard: ViewGuard) -> None:
    """``POST /r/<k>/label`` (the only POST the viewer answers; 404 without ``--label``).
    The server's ``do_POST`` has admitted the request (``guard.admit``: its Host); a label
    is taken only from the viewer's own page (``guard.same_origin``)."""
    segments = [unquote(s) for s in urlsplit(handler.path).path.split("/") if s]
    route = len(segments) == 3 and segments[0] == "r" and segments[2] == "label" and segments[1].isdigit()
    if desk is None or not route or int(segments[1]) >= n_runs:
        _reply(handler, HTTPStatus.NOT_FOUND, {"error": "no such route"})
        return
    if not guard.same_origin(handler.headers):
        _reply(handler, HTTPStatus.FORBIDDEN, {"error": "labels are taken only from the viewer's own page"})
        return
    if handler.headers.get("Content-Type", "").split(";")[0].strip() != "application/json":
        _reply(handler, HTTPStatus.UNSUPPORTED_MEDIA_TYPE, {"error": "send JSON"})
        return
    try:
        size = int(handler.headers.get("Content-Length") or 0)
    except ValueError:
        size = -1
    if not 0 < size <= _MAX_BODY:
        _reply(handler, HTTPStatus.BAD_REQUEST, {"error": "a JSON body of at most 64 KB is expected"})
        return
    try:
        payload = json.loads(handler.rfile.read(size))
    except (ValueError, RecursionError):  # a body nested thousands of levels deep is not a label
        _reply(handler, HTTPStatus.BAD_REQUEST, {"error": "the body is not JSON (or nested too deep)"})
        return
    try:
        status, reply = desk.post(int(segments[1]), payload)
    except Exception:  # a bad request must never take the server down
        log.exception("labelling failed")
        status, reply = HTTPStatus.INTERNAL_SERVER_ERROR, {"error": "the labels could not be saved"}
    _reply(handler, status, reply)
