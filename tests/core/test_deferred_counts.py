"""Counts of what a phase owes, run beside it in a thread: a pipelined pass wants no total
(its phase's bar counts from the plan), so its count runs only if something waits for it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from coeval.phases import _items, evaluation, responses
from coeval.phases._items import LazySpecs, count_later, then

from .pipeline_support import make_config, mock_model, run, task


def _counter() -> tuple[list[str], Any]:
    calls: list[str] = []

    def count() -> int:
        calls.append(threading.current_thread().name)
        return 7

    return calls, count


def test_a_deferred_count_runs_only_once_waited_for() -> None:
    calls, count = _counter()
    future = count_later(count, deferred=True)
    assert not future.done() and calls == []
    assert future.result(timeout=5) == 7
    assert calls == ["coeval-count"]  # in its thread, once
    assert future.result(timeout=5) == 7 and len(calls) == 1


def test_what_is_derived_from_a_deferred_count_starts_it_when_waited_for() -> None:
    calls, count = _counter()
    doubled = then(count_later(count, deferred=True), lambda n: 2 * n)
    assert not doubled.done() and calls == []
    assert doubled.result(timeout=5) == 14 and len(calls) == 1


def test_an_evaluator_asking_a_pass_for_its_length_gets_it() -> None:
    """An evaluator may take ``len(scorings)`` before listing them: the deferred count runs."""
    calls, count = _counter()
    specs = LazySpecs(lambda: iter(range(7)), count_later(count, deferred=True))
    assert len(specs) == 7 and len(calls) == 1


def test_a_count_not_deferred_starts_at_once() -> None:
    calls, count = _counter()
    assert count_later(count).result(timeout=5) == 7 and len(calls) == 1


@pytest.mark.parametrize("pipeline", [True, False])
def test_pipelined_passes_count_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pipeline: bool) -> None:
    """Each pass of a pipelined phase used to count everything its upstream had written so
    far, in a thread beside the calls (on the mock's medium shape, 1.9 of 10.8 s of CPU)."""
    counted: list[str] = []

    def counting(count: Any, *args: Any, **kwargs: Any) -> Any:
        def noted() -> Any:
            counted.append("count")
            return count()

        return _items.count_later(noted, *args, **kwargs)

    monkeypatch.setattr(responses, "count_later", counting)
    monkeypatch.setattr(evaluation, "count_later", counting)
    models = [mock_model("alpha", latency_ms=[20, 150], seed=1), mock_model("beta", latency_ms=[20, 150], seed=2)]
    cfg = make_config(tmp_path, models, [task(total=40)])
    assert run(cfg, pipeline=pipeline).exit_code == 0
    assert counted == ([] if pipeline else ["count", "count"])
