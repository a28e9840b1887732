"""Fixtures of the analysis tests: the legacy-format reference run, synthetic runs with
known truth, and a headless Chromium for the HTML report."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from coeval_testing.synthetic import SyntheticSpec, write_synthetic_run

#: the legacy run shipped beside the repository: ``<repo>/../shared/reference-runs/...``
REPO_ROOT = Path(__file__).resolve().parents[2]
REFERENCE_RUN = Path(
    os.environ.get(
        "COEVAL_REFERENCE_RUN", str(REPO_ROOT.parent / "shared" / "reference-runs" / "medium-benchmark-v1")
    )
)
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="session")
def reference_run() -> Path:
    assert (REFERENCE_RUN / "phase5_evaluations").is_dir(), (
        f"reference run missing at {REFERENCE_RUN}: the analysis tests need ../shared/reference-runs"
    )
    return REFERENCE_RUN


@pytest.fixture
def make_run(tmp_path: Path) -> Callable[..., Path]:
    """Write a synthetic run folder: ``make_run(name, **SyntheticSpec fields)``."""

    def make(name: str = "synthetic", **fields: Any) -> Path:
        return write_synthetic_run(tmp_path / name, SyntheticSpec(**fields))

    return make


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium driven by playwright (no browser download).

    Module-scoped on purpose: while playwright's sync API is open it holds an asyncio loop
    running in the main thread, and every later ``asyncio.run`` in the session would fail.
    """
    assert Path(CHROMIUM).exists(), "chromium is not installed: apt-get install -y chromium (scripts/test.sh does)"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser tab, closed after the test."""
    p = browser.new_page()
    try:
        yield p
    finally:
        p.close()
