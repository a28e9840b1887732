"""Fixtures of the security tests: a small run folder and the analysis tests' headless Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest
from coeval_testing.synthetic import SyntheticSpec, write_synthetic_run

from tests.analysis.conftest import browser, page  # noqa: F401 - fixtures shared with the viewer tests


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run folder with a handful of datapoints (written directly, no model call)."""
    return write_synthetic_run(tmp_path_factory.mktemp("run") / "shared-run", SyntheticSpec(datapoints_per_teacher=2))
