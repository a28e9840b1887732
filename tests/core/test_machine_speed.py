"""The CPU bound of the time estimate follows how fast this machine runs the run's kind of
work now (a mock run took 5.3 s one day and 8.6 s another on the same two-core machine): its
own pace, and how many processes want its cores."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from coeval.planning.cost import machine_speed

REF = machine_speed.REFERENCE_S


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    machine_speed.reading.cache_clear()
    monkeypatch.setattr(machine_speed, "_pause", lambda: None)  # the rounds' spacing in time, not waited here
    monkeypatch.setattr(machine_speed, "runnable_now", lambda: 1)  # a quiet machine unless a test says
    monkeypatch.setattr("os.cpu_count", lambda: 2)


def _rounds(monkeypatch: pytest.MonkeyPatch, measured: list[float]) -> None:
    """The warming round (slow: it pays for imports), then ``measured``."""
    rounds: Iterator[float] = iter([0.5, *measured])
    monkeypatch.setattr(machine_speed, "work_seconds", lambda: next(rounds))


def test_work_twice_as_slow_as_the_reference_makes_the_run_about_1_9_times_as_slow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _rounds(monkeypatch, [2 * REF] * machine_speed.ROUNDS)
    assert machine_speed.speed_factor() == pytest.approx(2**0.9)


def test_a_machine_that_switches_between_fast_and_slow_spells_keeps_the_fast_spells_pace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A shared two-core machine ran the work at 0.83 or 1.35 times the reference in spells of
    a fraction of a second to several seconds, and the mock's medium shape took 4.2 s
    whichever spell the rounds fell in. Rounds back to back fell in one spell and the
    estimate came out 1.3 times the run's time when it was a slow one."""
    half = machine_speed.ROUNDS // 2
    _rounds(monkeypatch, [1.35 * REF] * half + [0.83 * REF] * (machine_speed.ROUNDS - half))
    assert machine_speed.reading().pace == pytest.approx(0.83)


def test_a_machine_slow_throughout_reads_slow(monkeypatch: pytest.MonkeyPatch) -> None:
    _rounds(monkeypatch, [1.35 * REF] * (machine_speed.ROUNDS - 2) + [0.83 * REF] * 2)
    assert machine_speed.reading().pace == pytest.approx(1.35)


def test_the_rounds_are_spread_over_about_half_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    pauses: list[int] = []
    monkeypatch.setattr(machine_speed, "_pause", lambda: pauses.append(1))
    monkeypatch.setattr(machine_speed, "work_seconds", lambda: REF)
    machine_speed.speed_factor()
    assert len(pauses) == machine_speed.ROUNDS - 1
    assert 0.3 <= (machine_speed.ROUNDS - 1) * machine_speed.PAUSE_S <= 0.6


def test_processes_wanting_the_cores_slow_the_run_by_their_number_per_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """Five processes runnable on two cores (this one included): short rounds pass through
    whole and read the machine as quiet; the mock's medium shape took 2.0 times its quiet time
    (4.2 s quiet, 8.5 s so)."""
    _rounds(monkeypatch, [0.83 * REF] * machine_speed.ROUNDS)
    monkeypatch.setattr(machine_speed, "runnable_now", lambda: 5)
    assert machine_speed.load_share() == 2.5
    assert machine_speed.speed_factor() == pytest.approx(2.5 * 0.83**0.9)


def test_rounds_slowed_by_the_contention_are_not_counted_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under five processes on two cores the rounds' lower quartile read anywhere from 0.82 to
    2.5 times the reference while the mock's medium shape took 8 to 9.7 s every time: the
    pace multiplied by the processes per core is at most the reference's fast spells'."""
    _rounds(monkeypatch, [1.8 * REF] * machine_speed.ROUNDS)
    monkeypatch.setattr(machine_speed, "runnable_now", lambda: 5)
    assert machine_speed.speed_factor() == pytest.approx(2.5 * 0.85)  # not 2.5 * 1.8 ** 0.9


def test_a_fast_machine_under_load_keeps_its_own_pace(monkeypatch: pytest.MonkeyPatch) -> None:
    _rounds(monkeypatch, [0.5 * REF] * machine_speed.ROUNDS)
    monkeypatch.setattr(machine_speed, "runnable_now", lambda: 4)
    assert machine_speed.speed_factor() == pytest.approx(2.0 * 0.5**0.9)


def test_the_runnable_count_is_averaged_over_the_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    counts = iter([1, 3] * machine_speed.ROUNDS)
    monkeypatch.setattr(machine_speed, "runnable_now", lambda: next(counts))
    _rounds(monkeypatch, [REF] * machine_speed.ROUNDS)
    assert machine_speed.load_share() == 1.0  # two a core half the time: one a core on average


def test_a_quiet_machine_is_one_process_a_core_not_less(monkeypatch: pytest.MonkeyPatch) -> None:
    _rounds(monkeypatch, [0.83 * REF] * machine_speed.ROUNDS)
    assert machine_speed.load_share() == 1.0
    assert machine_speed.speed_factor() == pytest.approx(0.83**0.9)


def test_without_proc_loadavg_the_one_minute_load_average_stands_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(machine_speed, "runnable_now", lambda: None)
    monkeypatch.setattr("os.getloadavg", lambda: (8.0, 1.0, 1.0))
    _rounds(monkeypatch, [REF] * machine_speed.ROUNDS)
    assert machine_speed.load_share() == 4.0


def test_the_kernels_runnable_count_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()
    count = machine_speed.runnable_now()
    assert count is None or count >= 1  # this process is running while it reads


def test_one_interrupted_round_does_not_count(monkeypatch: pytest.MonkeyPatch) -> None:
    _rounds(monkeypatch, [REF] * 5 + [50 * REF] + [REF] * (machine_speed.ROUNDS - 6))
    assert machine_speed.speed_factor() == pytest.approx(1.0)


@pytest.mark.parametrize(("ratio", "factor"), [(0.001, 0.25**0.9), (1000.0, 10.0**0.9)])
def test_a_measurement_far_off_is_bounded(monkeypatch: pytest.MonkeyPatch, ratio: float, factor: float) -> None:
    monkeypatch.setattr(machine_speed, "work_seconds", lambda: ratio * REF)
    assert machine_speed.speed_factor() == pytest.approx(factor)


def test_measured_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def counted() -> float:
        calls.append(1)
        return REF

    monkeypatch.setattr(machine_speed, "work_seconds", counted)
    machine_speed.speed_factor()
    machine_speed.load_share()
    assert len(calls) == 1 + machine_speed.ROUNDS  # one warming round and the measured ones, once
