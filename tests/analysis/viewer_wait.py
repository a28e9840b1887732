"""A ``coeval view`` process for browser tests: started on a free port, and waited for until
it has read its runs (its database is built in the background, so pages asked earlier may
be "indexing n%" ones)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_read(url: str, timeout: float = 120.0) -> None:
    """Poll ``/api/status`` until every run is ready; fail on a build error or timeout."""
    deadline = time.monotonic() + timeout
    while True:
        with urllib.request.urlopen(url + "/api/status", timeout=30) as reply:
            runs = json.loads(reply.read())["runs"]
        assert not any(r["error"] for r in runs), runs
        if all(r["ready"] for r in runs):
            return
        assert time.monotonic() < deadline, f"coeval view did not read its runs: {runs}"
        time.sleep(0.05)


def serve_view(args: list[str], env: dict[str, str], cwd: Path | None = None) -> Iterator[str]:
    """``coeval view ARGS`` until the generator is closed; yields its URL once every run is read."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "coeval.cli.main", "view", *args, "--port", str(port),
                             "--no-browser"], cwd=cwd, env=env, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "coeval view did not start"
                time.sleep(0.1)
        wait_until_read(url)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
