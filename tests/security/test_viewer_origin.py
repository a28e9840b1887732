"""``coeval view`` serves only its own origin: no page elsewhere reads a run through it,
DNS rebinding is refused by the Host check, an exposed viewer needs its token, and a
connection that sends nothing does not hold a thread forever."""

from __future__ import annotations

import http.client
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import HTTPServer, SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tests.analysis.viewer_wait import free_port, serve_view

pytestmark = [pytest.mark.browser, pytest.mark.slow]
IDLE_S = 2


@pytest.fixture(scope="module")
def viewer(small_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    cache = tmp_path_factory.mktemp("cache")
    yield from serve_view(["--run", str(small_run)], {**os.environ, "COEVAL_VIEW_CACHE": str(cache),
                                                        "COEVAL_VIEW_IDLE_TIMEOUT": str(IDLE_S)})


@pytest.fixture(scope="module")
def other_origin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A page on another origin (another port of 127.0.0.1), as any site the user opens."""
    root = tmp_path_factory.mktemp("elsewhere")
    (root / "index.html").write_text("<!doctype html><title>elsewhere</title><p>hello</p>", encoding="utf-8")

    class Quiet(SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kw: Any) -> None:
            super().__init__(*args, directory=str(root), **kw)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


_READ = """async (url) => {
  try { const r = await fetch(url); return 'read ' + (await r.text()).length; }
  catch (e) { return 'blocked'; }
}"""


def test_a_page_on_another_origin_cannot_read_the_run(viewer: str, other_origin: str, page: Any) -> None:
    page.goto(other_origin + "/index.html")
    assert page.evaluate(_READ, viewer + "/r/0/") == "blocked"
    assert page.evaluate(_READ, viewer + "/api/status") == "blocked"
    # the same request from the viewer's own origin reads the page
    page.goto(viewer + "/api/status")
    assert page.evaluate(_READ, viewer + "/r/0/").startswith("read ")


def test_a_local_file_page_cannot_read_the_run(viewer: str, tmp_path: Path, page: Any) -> None:
    local = tmp_path / "evil.html"
    local.write_text("<!doctype html><p>a downloaded page</p>", encoding="utf-8")
    page.goto(local.as_uri())
    assert page.evaluate(_READ, viewer + "/r/0/") == "blocked"


def _get(url: str, path: str, headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("GET", path, headers=headers or {})
    reply = conn.getresponse()
    reply.read()
    conn.close()
    return reply


def test_no_response_allows_every_origin(viewer: str) -> None:
    for path in ("/", "/r/0/", "/r/0/failures", "/api/status", "/api/ping", "/nope"):
        reply = _get(viewer, path, {"Origin": "http://attacker.example"})
        assert reply.getheader("Access-Control-Allow-Origin") is None, path


def test_a_foreign_host_header_is_refused(viewer: str) -> None:
    """DNS rebinding: attacker.example resolves to 127.0.0.1, and the browser sends its name."""
    for path in ("/", "/r/0/", "/api/ping", "/api/status"):
        reply = _get(viewer, path, {"Host": "attacker.example"})
        assert reply.status in (403, 421), (path, reply.status)
        reply = _get(viewer, path, {"Host": "attacker.example:" + viewer.rsplit(":", 1)[1]})
        assert reply.status in (403, 421), (path, reply.status)
    port = viewer.rsplit(":", 1)[1]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost"):
        assert _get(viewer, "/api/status", {"Host": host}).status == 200, host


def test_an_idle_connection_is_closed(viewer: str) -> None:
    """A client that connects and sends nothing must not hold a server thread forever."""
    host, port = viewer.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=60) as idle:
        started = time.monotonic()
        idle.settimeout(60)
        assert idle.recv(1) == b""  # the server closes it
        assert time.monotonic() - started >= IDLE_S - 0.5


def _start_exposed(run: Path, tmp: Path) -> tuple[subprocess.Popen[str], int, str]:
    port = free_port()
    env = {**os.environ, "COEVAL_VIEW_CACHE": str(tmp / "cache")}
    proc = subprocess.Popen([sys.executable, "-m", "coeval.cli.main", "view", "--run", str(run), "--host", "0.0.0.0",
                             "--port", str(port), "--no-browser"], env=env, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    lines: list[str] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        if "Ctrl-C stops" in line:
            break
    return proc, port, "".join(lines)


def test_a_viewer_on_a_non_loopback_address_needs_its_token(small_run: Path, tmp_path: Path) -> None:
    proc, port, said = _start_exposed(small_run, tmp_path)
    try:
        found = re.search(r"\?token=([A-Za-z0-9_-]{20,})", said)
        assert found, said
        assert "warning" in said.lower() and "0.0.0.0" in said
        token = found.group(1)
        url = f"http://127.0.0.1:{port}"
        assert _get(url, "/r/0/").status == 403
        assert _get(url, "/api/status").status == 403
        assert _get(url, "/r/0/?token=wrong" + token[5:]).status == 403
        first = _get(url, f"/r/0/?token={token}")
        assert first.status == 303 and first.getheader("Location") == "/r/0/"
        cookie = first.getheader("Set-Cookie") or ""
        assert token in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert _get(url, "/api/status", {"Cookie": cookie.split(";")[0]}).status == 200
        assert _get(url, "/api/status", {"Cookie": cookie.split(";")[0], "Host": "attacker.example"}).status in (403, 421)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
