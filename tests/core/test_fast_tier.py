"""The fast tier (``pytest -m "not slow"``, ``nox -s fast``) keeps most of the suite and a
part of every area of it, and what is marked slow really leaves it. CI runs everything,
this test included (it collects the whole suite twice, so it is slow itself)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Tests the fast tier must keep at least; raise it as the suite grows, lower it only with
#: a reason (a test moved to the slow tier because it is slow, not to make this pass).
FAST_FLOOR = 2000
#: ...and at least this share of the whole suite
FAST_SHARE = 0.85
#: Areas of tests/ that are all slow by nature: a Ray cluster, a llama.cpp server.
ALL_SLOW_AREAS = {"cluster", "selfhosted"}
#: Modules that must stay out of the fast tier whole (subprocess CLI runs, servers, browsers).
KNOWN_SLOW = ("tests/cluster/test_ray_serving.py", "tests/selfhosted/test_llamacpp_server.py",
              "tests/security/test_run_file_guard.py", "tests/analysis/test_viewer.py")


def collect(*args: str) -> list[str]:
    """The test ids ``pytest --collect-only`` finds with ``args``."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"\d+(/\d+)? tests? collected", done.stdout), done.stdout[-2000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


@pytest.mark.slow
def test_the_fast_tier_keeps_most_tests_and_every_area() -> None:
    every, fast = collect(), collect("-m", "not slow")
    assert len(fast) >= FAST_FLOOR, f"the fast tier has {len(fast)} tests"
    assert len(fast) >= FAST_SHARE * len(every), f"the fast tier has {len(fast)} of {len(every)} tests"
    assert set(fast) < set(every)

    def areas(ids: list[str]) -> set[str]:
        return {i.split("/")[1] for i in ids}

    assert areas(every) - ALL_SLOW_AREAS <= areas(fast)
    assert [i for i in fast if i.startswith(KNOWN_SLOW)] == []
