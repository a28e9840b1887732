"""Fixtures for every test package."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from coeval.phases.survey_memo import forget_surveys


@pytest.fixture(autouse=True)
def no_kept_surveys() -> Iterator[None]:
    """Each test starts, as a new process does, with no survey kept from another test's run
    (a survey is reused within a process while the run folder is unchanged)."""
    forget_surveys()
    yield
    forget_surveys()
