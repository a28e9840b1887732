"""A batch run on the console, against the local fake server: one line per job submitted,
a bar that says ``waiting for batch`` with the time waited and the provider's count, and
``status --fetch-batches`` that answers in plain sentences (no event dicts)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from coeval_testing.fake_server import FakeServer

from tests.e2e.test_batch_ctrl_c import _config

pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"), pytest.mark.slow]

SUBMITTED = re.compile(r"^response_collection: batch job (batch_\w+) submitted to openai \(gpt-4o-mini\): "
                       r"2 requests; next poll at \d\d:\d\d:\d\d \(in 0\.05 s\)$", re.M)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
RAW_EVENT = re.compile(r"\[\s*(?:info|warning|error)\s*\]|\b[a-z_]+=\S|\{'|'event'")


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    with FakeServer() as server:
        server.configure(batch_seconds_to_complete=2.5)
        yield server


def _coeval(tmp_path: Path, *args: str, terminal: bool = False) -> subprocess.Popen[str]:
    env = {**os.environ, "COEVAL_BATCH_POLL_INTERVAL": "0.05", "COLUMNS": "120"}
    if terminal:
        env["TTY_COMPATIBLE"] = "1"  # rich draws its bars as on a terminal
    return subprocess.Popen([sys.executable, "-m", "coeval", *args, "--keys", str(tmp_path / "keys.yaml")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_submit_is_one_line_and_the_bar_waits_for_batch_with_elapsed_time_and_provider_count(
    fake: FakeServer, tmp_path: Path
) -> None:
    proc = _coeval(tmp_path, "run", str(_config(tmp_path, fake.url)), terminal=True)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    plain = ANSI.sub("", err.replace("\r", "\n"))
    assert len(SUBMITTED.findall(plain)) == 1, plain
    frames = re.findall(r"waiting for batch (\d:\d\d:\d\d), openai (\d)/2 done", plain)
    assert frames, plain
    assert {count for _, count in frames} <= {"0", "2"}  # the fake provider counts at the end
    assert max(waited for waited, _ in frames) >= "0:00:02"  # the clock moves while waiting
    assert "response_collection: 2/2 done (2 ok, 0 failed)" in plain
    assert not [line for line in plain.splitlines() if RAW_EVENT.search(line)], plain


def test_fetch_batches_after_ctrl_c_speaks_in_sentences_and_collects_once(fake: FakeServer, tmp_path: Path) -> None:
    fake.configure(batch_seconds_to_complete=8.0)  # still running at the first fetch, even on a busy machine
    config = _config(tmp_path, fake.url)
    run = tmp_path / "runs" / "waiting"
    proc = _coeval(tmp_path, "run", str(config))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not fake.counts.get("openai.batches.retrieve"):
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert len(SUBMITTED.findall(err)) == 1, err
    assert "coeval: warning: batch job not finished yet; collect it later with `coeval run --continue` or " \
           "`coeval status --fetch-batches` (job batch_" in err
    assert not [line for line in err.splitlines() if RAW_EVENT.search(line)], err

    early = _coeval(tmp_path, "status", "--run", str(run), "--fetch-batches")
    _, err = early.communicate(timeout=60)
    assert early.returncode == 0, err
    assert err == "0 of 1 batch jobs collected (0 records ok, 0 failed); 1 still pending\n"
    while time.monotonic() < deadline:  # until the provider has finished the job
        time.sleep(1.0)
        later = _coeval(tmp_path, "status", "--run", str(run), "--fetch-batches", "-q")
        _out, err = later.communicate(timeout=60)
        if "1 still pending" not in err:
            break
    assert err == "1 of 1 batch jobs collected (2 records ok, 0 failed); 0 still pending\n"
    assert fake.counts.get("openai.batches.create") == 1
