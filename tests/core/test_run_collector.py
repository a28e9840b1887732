"""A run raises the garbage collector's young threshold while it runs and puts the
process's own back after (see :mod:`coeval.run.collector`)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from coeval.plugins.manager import CORE_PLUGIN
from coeval.run.collector import YOUNG_THRESHOLD, run_collector

from .conftest import CoreWith
from .pipeline_support import RecordingMock, folder, make_config, mock_model, ok_records, run, task


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    """A process setting unlike CPython's default, put back after the test."""
    before = gc.get_threshold()
    gc.set_threshold(900, 11, 12)
    yield (900, 11, 12)
    gc.set_threshold(*before)


def test_calls_run_at_the_raised_threshold_and_the_process_gets_its_own_back(tmp_path, pm, thresholds) -> None:
    seen: list[tuple[int, int, int]] = []

    class Watching(RecordingMock):
        async def generate(self, request):  # type: ignore[no-untyped-def]
            seen.append(gc.get_threshold())
            return await super().generate(request)

    pm.unregister(name=CORE_PLUGIN)
    pm.register(CoreWith(mock=Watching), name=CORE_PLUGIN)
    cfg = make_config(tmp_path, [mock_model("a"), mock_model("b")], [task(total=3)])
    result = run(cfg)
    assert result.exit_code == 0, result.message
    assert len(ok_records(folder(cfg), "evaluation")) == 2 * 3 * 2 * 2  # teachers x items x students x judges
    assert seen and set(seen) == {(YOUNG_THRESHOLD, 11, 12)}
    assert gc.get_threshold() == thresholds


def test_a_higher_setting_of_the_process_is_kept(thresholds) -> None:
    gc.set_threshold(YOUNG_THRESHOLD * 2, 11, 12)
    with run_collector():
        assert gc.get_threshold() == (YOUNG_THRESHOLD * 2, 11, 12)
    assert gc.get_threshold() == (YOUNG_THRESHOLD * 2, 11, 12)


def test_overlapping_runs_restore_the_setting_only_when_the_last_ends(thresholds) -> None:
    first, second = run_collector(), run_collector()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the first run ends while the second goes on
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD
    second.__exit__(None, None, None)
    assert gc.get_threshold() == thresholds


def test_a_failing_run_restores_the_setting_too(thresholds) -> None:
    with pytest.raises(RuntimeError), run_collector():
        raise RuntimeError("the run failed")
    assert gc.get_threshold() == thresholds
