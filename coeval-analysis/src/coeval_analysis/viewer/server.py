"""The ``coeval view`` HTTP server: a thread per request, pages answered from DuckDB.

URLs: ``/`` (the run, or every run side by side), ``/r/<k>/`` (run k's start page),
``/r/<k>/datapoint/<id>``, the pages of :mod:`coeval_analysis.viewer.routes` (``/r/<k>/failures``,
``matrix``, ``search``, ``diff``), ``/api/ping?run=PATH`` (what the HTML report asks to learn
whether a viewer serves its run) and ``/api/status`` (how far each run's database is built).
Every request passes :mod:`~coeval_analysis.viewer.guard` first (Host check, token, no CORS
but for the ping).

The server listens before any run is read: stores build their database in the background.
A start page asked within :data:`FIRST_LOOK_S` of the server starting waits until then for
the judgments table (else for the preliminary ranking); later ones do not wait. Other
pages wait :data:`PAGE_WAIT_S` for the whole database. Past that, a page says "indexing
n%" and reloads itself.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from coeval_analysis.viewer import labelling, pages, queries, routes
from coeval_analysis.viewer.guard import SECURITY_HEADERS, ViewGuard, idle_timeout_s
from coeval_analysis.viewer.headline import headline_section
from coeval_analysis.viewer.outline import analysis_ranking, run_outline
from coeval_analysis.viewer.store import RunStore, StoreError

__all__ = ["FIRST_LOOK_S", "PAGE_WAIT_S", "ViewServer", "shared_datapoints"]

log = logging.getLogger("coeval.view")
_SHARED_SHOWN = 100
#: how long after the server starts a start page may wait for the judgments table, or
#: else the preliminary ranking (the process's imports come before: about 0.2-0.8 s)
FIRST_LOOK_S = 0.8
#: how long a page that needs every table (datapoint, failures, shared datapoints) waits
PAGE_WAIT_S = 10.0


def shared_datapoints(a: RunStore, b: RunStore) -> tuple[list[dict[str, Any]], int]:
    """Datapoints both runs hold with the same id and prompt (a run forked with
    ``resume_from`` keeps its parent's items): the first ones, and how many."""
    theirs = dict(b.query("SELECT id, md5(coalesce(prompt, '')) FROM datapoints"))
    same = [rid for rid, h in a.query("SELECT id, md5(coalesce(prompt, '')) FROM datapoints ORDER BY id")
            if theirs.get(rid) == h]
    return [{"id": rid} for rid in same[:_SHARED_SHOWN]], len(same)


class _Redirect(Exception):
    """Raised by a route whose answer is ``303 See Other`` to ``location`` (a viewer path)."""

    def __init__(self, location: str) -> None:
        super().__init__(location)
        self.location = location


class ViewServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], stores: Sequence[RunStore], labeler: str | None = None) -> None:
        self.stores = list(stores)
        #: the Label page and its POST route, only with ``coeval view --label NAME``
        self.labelling = labelling.LabelDesk(labeler, self.stores) if labeler else None
        self._shared: tuple[list[dict[str, Any]], int] | None = None
        self._facets: dict[int, dict[str, list[str]]] = {}
        self._started = time.monotonic()
        super().__init__(address, _Handler)
        self.guard = ViewGuard.for_address(address[0], int(self.server_address[1]))
        self.idle_timeout_s = idle_timeout_s()

    @property
    def url(self) -> str:
        host, port = self.server_address[0], self.server_address[1]
        name = host.decode() if isinstance(host, bytes) else str(host)
        return f"http://{name}:{port}/"

    @property
    def sign_in_url(self) -> str:
        """The URL to open: with the token, when the viewer needs one."""
        return self.url + (f"?token={self.guard.token}" if self.guard.token else "")

    def first_look_left(self) -> float:
        """Seconds a start page may still wait for the database (0 past :data:`FIRST_LOOK_S`)."""
        return max(0.0, self._started + FIRST_LOOK_S - time.monotonic())

    def facets(self, k: int) -> dict[str, list[str]]:
        """Run k's filter menus: the same on every page (the database does not change), so
        asked once, not on every page."""
        found = self._facets.get(k)
        if found is None:
            found = self._facets[k] = queries.facets(self.stores[k])
        return found

    def shared(self) -> tuple[list[dict[str, Any]], int] | None:
        """The two runs' shared datapoints (None while either is still being read)."""
        if self._shared is None:
            if len(self.stores) != 2:
                return [], 0
            if not all(s.wait(timeout=PAGE_WAIT_S) for s in self.stores):
                return None
            self._shared = shared_datapoints(self.stores[0], self.stores[1])
        return self._shared


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.idle_timeout_s)  # a silent connection is closed, not waited on

    def log_message(self, format: str, *args: Any) -> None:
        log.debug(format, *args)

    def _refuse(self, status: int, text: str, headers: Sequence[tuple[str, str]]) -> None:
        data = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (*headers, *SECURITY_HEADERS):
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        refusal = self.server.guard.admit(self.path, self.headers)
        if refusal is not None:
            self._refuse(refusal.status, refusal.text, refusal.headers)
            return
        parts = urlsplit(self.path)
        query = dict(parse_qsl(parts.query))
        segments = [unquote(s) for s in parts.path.split("/") if s]
        try:
            status, body, kind = self._route(segments, query)
        except _Redirect as go:
            self._refuse(HTTPStatus.SEE_OTHER, "See " + go.location, (("Location", go.location),))
            return
        except StoreError as exc:
            status, body, kind = HTTPStatus.INTERNAL_SERVER_ERROR, pages.error_page(str(exc)), "html"
        except Exception:  # a page must never take the server down
            log.exception("page %s failed", parts.path)
            status, body, kind = HTTPStatus.INTERNAL_SERVER_ERROR, pages.not_found_page("This page failed."), "html"
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if kind == "json" else "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in SECURITY_HEADERS:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        refusal = self.server.guard.admit(self.path, self.headers)
        if refusal is not None:
            self._refuse(refusal.status, refusal.text, refusal.headers)
            return
        labelling.handle_post(self, self.server.labelling, len(self.server.stores), self.server.guard)

    def _route(self, segments: list[str], query: dict[str, str]) -> tuple[int, str, str]:
        stores = self.server.stores
        if segments == ["api", "ping"]:
            if self.server.guard.cross_origin(self.headers):  # no page elsewhere may ask which runs are served
                return HTTPStatus.FORBIDDEN, json.dumps({"error": "asked from another origin"}), "json"
            return HTTPStatus.OK, json.dumps(self._ping(query.get("run"))), "json"
        if segments == ["open"]:
            return self._open(query)
        if segments == ["api", "status"]:
            return HTTPStatus.OK, json.dumps({"runs": [s.status() for s in stores]}), "json"
        if not segments:
            return self._root(query)
        if segments[0] == "r" and len(segments) >= 2 and segments[1].isdigit() and int(segments[1]) < len(stores):
            k, rest = int(segments[1]), segments[2:]
            if not rest:
                return self._start(k, query)
            if rest == ["label"] and self.server.labelling is not None:
                return self.server.labelling.page(k, stores[k].name, query)
            store, base = stores[k], f"/r/{k}"
            if not store.wait(timeout=PAGE_WAIT_S):
                return HTTPStatus.OK, pages.indexing_page(f"Run {store.name}", base, store.status(), {}), "html"
            if rest[0] in routes.PAGES:  # matrix, search, diff, failures: each its own module
                status, html = routes.PAGES[rest[0]](store, base, query)
                return status, html, "html"
            if rest[0] == "datapoint" and len(rest) == 2:
                detail = queries.datapoint_detail(store, rest[1])
                if detail is not None:
                    return HTTPStatus.OK, pages.datapoint_page(store.name, base, detail), "html"
                return HTTPStatus.NOT_FOUND, pages.not_found_page(f"No datapoint {rest[1]} in this run."), "html"
        return HTTPStatus.NOT_FOUND, pages.not_found_page("No such page."), "html"

    def _ping(self, run: str | None) -> dict[str, Any]:
        """The served runs' paths, which is ``run`` (its index, -1 when not served) and how
        many are served (asked by the viewer's own pages and by scripts, never by another
        origin's page)."""
        paths = [str(s.run.resolve()) for s in self.server.stores]
        answer: dict[str, Any] = {"runs": paths}
        if run is not None:
            answer.update(index=paths.index(run) if run in paths else -1, count=len(paths))
        return answer

    def _open(self, query: dict[str, str]) -> tuple[int, str, str]:
        """``/open?run=PATH&to=PAGE``: the report's links, by navigation (a page elsewhere
        cannot read where it leads): to PAGE of the served run at PATH (a path of the
        viewer's own; its start page otherwise)."""
        paths = [str(s.run.resolve()) for s in self.server.stores]
        run = query.get("run", "")
        if run not in paths:
            served = ", ".join(paths)
            return HTTPStatus.NOT_FOUND, pages.not_found_page(f"This viewer does not serve {run}; it serves {served}. "
                                                              f"Start one with: coeval view --run {run}"), "html"
        to = query.get("to", "/")
        if not to.startswith("/") or to.startswith("//") or "\\" in to or any(c in to for c in "\r\n"):
            to = "/"
        raise _Redirect(f"/r/{paths.index(run)}{to}")

    def _root(self, query: dict[str, str]) -> tuple[int, str, str]:
        stores = self.server.stores
        if len(stores) == 1:
            return self._start(0, query)
        for i, s in enumerate(stores):
            if not s.wait(judgments_only=True, timeout=self.server.first_look_left()):
                return self._indexing(i)
        runs = [(s.name, f"/r/{i}", queries.ranking(s)) for i, s in enumerate(stores)]
        slowest = min(stores, key=lambda s: s.progress())
        return HTTPStatus.OK, pages.compare_page(runs, self.server.shared(), slowest.status()), "html"

    def _indexing(self, k: int) -> tuple[int, str, str]:
        store = self.server.stores[k]
        ranking = analysis_ranking(store.run)
        preliminary = [] if ranking else store.preliminary_ranking(timeout=self.server.first_look_left())
        page = pages.indexing_page(f"Run {store.name}", f"/r/{k}", store.status(), run_outline(store.run),
                                   ranking, preliminary)
        return HTTPStatus.OK, page, "html"

    def _start(self, k: int, query: dict[str, str]) -> tuple[int, str, str]:
        store = self.server.stores[k]
        if not store.wait(judgments_only=True, timeout=self.server.first_look_left()):
            return self._indexing(k)
        f = queries.Filters.from_query(query)
        rows, total = queries.datapoint_table(store, f)
        notice = "" if store.ready else pages.indexing_notice(store.status()).replace(
            "This page reloads itself until they are all read.", "Datapoint pages wait until they are.")
        html = pages.start_page(store.name, f"/r/{k}", queries.ranking(store, f), self.server.facets(k), rows, total, f,
                                notice=notice, headline=headline_section(store.run))
        return HTTPStatus.OK, html, "html"
