"""Ctrl-C while the start-up probe waits for a slow model says what was interrupted
(exit code 130), instead of ending the run without a word."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

#: Ctrl-C sent to a coeval subprocess
pytestmark = pytest.mark.slow

CONFIG = """\
models:
  - {name: slow, interface: mock, parameters: {latency_ms: 60000}, roles: [teacher, student, judge]}
tasks:
  - name: qa
    description: Answer a question.
    output_description: One sentence.
    target_attributes: {topic: [history]}
    rubric: {correct: The answer is right.}
    sampling: {total: 1}
experiment: {id: probe-stop, storage_folder: ./runs, probe_mode: full}
"""


def test_ctrl_c_during_the_probe_says_so(tmp_path: Path) -> None:
    (tmp_path / "exp.yaml").write_text(CONFIG, encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "coeval.cli.main", "run", "exp.yaml"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "HOME": str(tmp_path)})
    assert proc.stderr is not None
    first = proc.stderr.readline()  # the cost estimate, printed just before the run starts
    assert first.startswith("estimate for this run"), first
    time.sleep(2)  # the probe's call takes 60 s
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    out, rest = proc.communicate(timeout=30)
    err = first + rest
    assert proc.returncode == 130, (out, err)
    assert "interrupted during the start-up probe (a first call to each model: slow); no phase ran" in err
    assert not (tmp_path / "runs" / "probe-stop" / "phase1_attributes").exists()
