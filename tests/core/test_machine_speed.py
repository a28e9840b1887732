"""The CPU bound of the time estimate follows how fast this machine runs the run's kind of
work now: a mock run took 5.3 s one day and 8.6 s another on the same two-core machine."""

from __future__ import annotations

import pytest
from coeval.planning.cost import machine_speed


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    machine_speed.speed_factor.cache_clear()
    monkeypatch.setattr(machine_speed, "load_share", lambda: 1.0)  # a quiet machine unless a test says


def test_work_twice_as_slow_as_the_reference_makes_the_run_about_1_9_times_as_slow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rounds = iter([0.5, *[2 * machine_speed.REFERENCE_S] * 7])  # a slow first (warming) round is left out
    monkeypatch.setattr(machine_speed, "work_seconds", lambda: next(rounds))
    assert machine_speed.speed_factor() == pytest.approx(2**0.9)


def test_a_machine_shared_by_a_dozen_busy_processes_is_that_slow(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two cores and a dozen busy processes (load average 12): the work took 7.6 times the
    reference and the mock's medium shape 7.3 times its CPU per call; the estimate no
    longer stops at 2.8."""
    monkeypatch.setattr(machine_speed, "work_seconds", lambda: 7.6 * machine_speed.REFERENCE_S)
    monkeypatch.setattr(machine_speed, "load_share", lambda: 6.0)
    assert machine_speed.speed_factor() == pytest.approx(7.6**0.9)  # the burst saw it all
    assert machine_speed.speed_factor() > 6.0


def test_a_loaded_machine_that_lets_a_burst_through_still_reads_as_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Four processes a core: the rounds ran barely slower (x1.2), the mock's medium shape
    took 2.3 times its CPU time; the load average brings the estimate there."""
    monkeypatch.setattr(machine_speed, "work_seconds", lambda: 1.2 * machine_speed.REFERENCE_S)
    monkeypatch.setattr(machine_speed, "load_share", lambda: 4.0)
    assert machine_speed.speed_factor() == pytest.approx((1.2 * 4.0) ** (0.5 * 0.9))
    assert 1.9 < machine_speed.speed_factor() < 2.3


def test_the_load_average_counts_processes_per_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()
    monkeypatch.setattr("os.getloadavg", lambda: (8.0, 1.0, 1.0))
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert machine_speed.load_share() == 4.0
    monkeypatch.setattr("os.getloadavg", lambda: (0.5, 1.0, 1.0))
    assert machine_speed.load_share() == 1.0


def test_the_median_round_counts_so_one_interrupted_round_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    ref = machine_speed.REFERENCE_S
    rounds = iter([ref, ref, 50 * ref, ref, ref, ref, ref, ref])
    monkeypatch.setattr(machine_speed, "work_seconds", lambda: next(rounds))
    assert machine_speed.speed_factor() == pytest.approx(1.0)


@pytest.mark.parametrize(("ratio", "factor"), [(0.001, 0.25**0.9), (1000.0, 10.0**0.9)])
def test_a_measurement_far_off_is_bounded(monkeypatch: pytest.MonkeyPatch, ratio: float, factor: float) -> None:
    monkeypatch.setattr(machine_speed, "work_seconds", lambda: ratio * machine_speed.REFERENCE_S)
    assert machine_speed.speed_factor() == pytest.approx(factor)


def test_measured_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def counted() -> float:
        calls.append(1)
        return machine_speed.REFERENCE_S

    monkeypatch.setattr(machine_speed, "work_seconds", counted)
    machine_speed.speed_factor()
    machine_speed.speed_factor()
    assert len(calls) == 8  # one warming round and seven measured, once

