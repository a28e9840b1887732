"""The perfect-orchestrator bound that figure a2 prints beside its measured efficiency."""

from __future__ import annotations

import math

import pytest
from coeval_testing.fake_server._core import lognormal_ms

from benchmarks.pipeline import perfect_efficiency, perfect_makespan


def test_each_freed_slot_takes_the_next_call() -> None:
    assert perfect_makespan([1.0, 1.0, 1.0, 1.0], 2) == 2.0
    # the long call holds one slot while the other serves the rest in turn
    assert perfect_makespan([3.0, 1.0, 1.0, 1.0], 2) == 3.0
    assert perfect_makespan([1.0, 3.0, 1.0, 1.0, 1.0], 2) == 4.0


def test_flat_latency_reaches_the_ideal_and_a_heavy_tail_does_not() -> None:
    assert perfect_efficiency(6400, 200.0, 0.0, 64) == pytest.approx(1.0)
    heavy = perfect_efficiency(12_493, 200.0, 1.0, 64)
    assert 0.9 < heavy < 1.0
    # as many slots as calls: the wall is the slowest draw, the ideal the lognormal's mean
    slowest = max(lognormal_ms(200.0, 1.0, i) for i in range(64)) / 1000.0
    assert perfect_efficiency(64, 200.0, 1.0, 64) == pytest.approx(0.2 * math.exp(0.5) / slowest)
