"""``coeval view`` under hostile run text and hostile requests: a 40 MB record is left out
of the database with a warning while every other page is served; a label POST nested
30,000 levels gets a 400 with a message; a datapoint id holding ``<!--`` or ``</script>``
cannot break the label page's JSON island; and ``/api/ping`` answers ``Origin: null`` (a
sandboxed frame or a local file of any site) as any other foreign origin: no CORS, no
answer about which runs are served."""

from __future__ import annotations

import http.client
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from coeval_analysis.viewer.server import ViewServer
from coeval_analysis.viewer.store import RunStore
from coeval_testing.synthetic import SyntheticSpec, write_synthetic_run

pytestmark = pytest.mark.slow  # servers, and a 40 MB record
HOSTILE_ID = 'dp<!--<script>alert(1)</script>-->&"'
BIG = 40 << 20


def _serve(stores: list[RunStore], labeler: str | None = None) -> Iterator[ViewServer]:
    server = ViewServer(("127.0.0.1", 0), stores, labeler=labeler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        for store in stores:
            store.close()


def _request(server: ViewServer, method: str, path: str, body: bytes | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", int(server.server_address[1]), timeout=60)
    conn.request(method, path, body=body, headers=headers or {})
    reply = conn.getresponse()
    data = reply.read()
    conn.close()
    return reply.status, {k.lower(): v for k, v in reply.getheaders()}, data


@pytest.fixture(scope="module")
def big_line_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = write_synthetic_run(tmp_path_factory.mktemp("big") / "run",
                              SyntheticSpec(datapoints_per_teacher=2, students={"stu-a": 0.7, "stu-b": 0.4}))
    path = sorted((run / "phase4_responses").glob("*.jsonl"))[0]
    lines = path.read_text(encoding="utf-8").splitlines()
    huge = json.loads(lines[0])
    huge["response"] = "x" * BIG
    path.write_text("\n".join([json.dumps(huge), *lines[1:]]) + "\n", encoding="utf-8")
    return run


@pytest.mark.slow
def test_a_40_mb_record_is_left_out_with_a_warning_and_the_rest_is_served(
        big_line_run: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = sorted((big_line_run / "phase4_responses").glob("*.jsonl"))[0]
    with path.open("rb") as fh:
        ids = [json.loads(line)["id"] for line in fh]
    with caplog.at_level("WARNING", logger="coeval.view"):
        store = RunStore(big_line_run, cache=tmp_path / "cache")
    status = store.status()
    assert status["error"] is None and status["ready"], status
    warning = f"{path} line 1: a record of {BIG // 2**20 + 1} MB"
    assert any(w.startswith(warning) for w in status["warnings"]), status["warnings"]
    assert any(warning in r.getMessage() for r in caplog.records), caplog.text
    stored = {row[0] for row in store.query("SELECT id FROM responses")}
    assert ids[0] not in stored and set(ids[1:]) <= stored and len(ids) > 1
    for server in _serve([store]):
        for page in ("/", "/r/0/", "/r/0/failures", "/api/status"):
            status_code, _h, body = _request(server, "GET", page)
            assert status_code == 200, (page, body[:300])


@pytest.fixture
def hostile_run(tmp_path: Path) -> Path:
    """A run one of whose datapoint ids is ``HOSTILE_ID`` (in every record that names it)."""
    run = write_synthetic_run(tmp_path / "run", SyntheticSpec(datapoints_per_teacher=1, students={"stu-a": 0.7},
                                                             tasks={"task-1": ("accuracy",)}, teachers=("tea-x",)))
    old = "task-1__tea-x__00001"
    for path in (p for p in run.rglob("*.jsonl")):
        recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        text = "\n".join(json.dumps(r).replace(old, json.dumps(HOSTILE_ID)[1:-1]) for r in recs) + "\n"
        path.write_text(text, encoding="utf-8")
    return run


def test_a_hostile_datapoint_id_stays_inside_the_label_page_json_island(hostile_run: Path, tmp_path: Path) -> None:
    for server in _serve([RunStore(hostile_run, cache=tmp_path / "cache")], labeler="ana"):
        status, _h, body = _request(server, "GET", "/r/0/label")
        assert status == 200
        page = body.decode("utf-8")
        found = re.search(r'<script id="unit" type="application/json">(.*?)</script>', page, re.S)
        assert found, page[-2000:]
        island = found.group(1)
        assert not set("<>&") & set(island), island
        assert json.loads(island)["datapoint_id"] == HOSTILE_ID
        assert page.count("</script>") == page.count("<script")  # no script was ended early or added


def test_a_label_post_nested_30000_levels_gets_a_400(hostile_run: Path, tmp_path: Path) -> None:
    for server in _serve([RunStore(hostile_run, cache=tmp_path / "cache")], labeler="ana"):
        origin = f"http://127.0.0.1:{server.server_address[1]}"
        deep = b'{"levels": ' + b"[" * 30_000 + b"]" * 30_000 + b"}"
        status, _h, body = _request(server, "POST", "/r/0/label", deep,
                                    {"Origin": origin, "Content-Type": "application/json"})
        assert status == 400, body
        assert json.loads(body) == {"error": "the body is not JSON (or nested too deep)"}
        # the server still answers
        assert _request(server, "GET", "/api/status")[0] == 200


@pytest.fixture(scope="module")
def served(small_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ViewServer]:
    yield from _serve([RunStore(small_run, cache=tmp_path_factory.mktemp("cache"))])


@pytest.mark.parametrize("origin", ["null", "http://attacker.example"])
def test_ping_gives_a_foreign_origin_nothing(served: ViewServer, small_run: Path, origin: str) -> None:
    run = str(small_run.resolve())
    status, headers, body = _request(served, "GET", f"/api/ping?run={run}", headers={"Origin": origin})
    assert "access-control-allow-origin" not in headers
    assert status == 403 and b"runs" not in body and run.encode() not in body
    own = _request(served, "GET", f"/api/ping?run={run}")
    assert own[0] == 200 and json.loads(own[2]) == {"runs": [run], "index": 0, "count": 1}


def test_the_report_opens_its_run_by_navigation(served: ViewServer, small_run: Path) -> None:
    """What the report's links do instead of asking ``/api/ping``: a top-level navigation
    (which no page can read the answer of) to ``/open?run=PATH&to=PAGE``."""
    run = str(small_run.resolve())
    status, headers, _b = _request(served, "GET", f"/open?run={run}&to=/failures")
    assert status == 303 and headers["location"] == "/r/0/failures"
    status, headers, _b = _request(served, "GET", f"/open?run={run}&to=//evil.example/")
    assert status == 303 and headers["location"] == "/r/0/"  # only a page of the viewer itself
    status, _h, body = _request(served, "GET", "/open?run=/elsewhere/other-run")
    assert status == 404 and b"/elsewhere/other-run" in body


def test_json_island_escapes_markup_characters() -> None:
    from coeval_analysis.viewer.labelling import _json_island

    unit: dict[str, Any] = {"datapoint_id": "</script><!--&\u2028\u2029>"}
    island = _json_island(unit)
    assert not set("<>&\u2028\u2029") & set(island)
    assert json.loads(island) == unit
