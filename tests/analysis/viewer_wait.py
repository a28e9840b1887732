"""Waiting for a ``coeval view`` process to have read its runs (its database is built in
the background): pages asked earlier may be "indexing n%" ones."""

from __future__ import annotations

import json
import time
import urllib.request


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
