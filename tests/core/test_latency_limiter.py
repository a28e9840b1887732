"""The queue-aware limiter grows while latency does not rise with the load, and shrinks to
the server's capacity once it clearly does (a simulated server, answer by answer)."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from coeval.scheduler import AdaptiveLimit


def _drive(limit: AdaptiveLimit, latency_at: object, answers: int, seed: int = 7) -> list[int]:
    """Feed ``answers`` answers whose latency is ``latency_at(limit, rng)``; the limits seen."""
    rng = random.Random(seed)
    seen = []
    for i in range(answers):
        limit.succeeded(latency_at(limit.current, rng), now=i * 0.01)  # type: ignore[operator]
        seen.append(limit.current)
    return seen


def test_flat_but_jittery_latency_lets_the_limit_grow_to_its_bound() -> None:
    # a server that is never full: 200 ms whatever the load, plus up to 30 ms of client-side
    # jitter (a busy event loop); the limit must not stop short of max_concurrency
    limit = AdaptiveLimit(4, 512, queue_aware=True)
    _drive(limit, lambda load, rng: 0.200 + rng.uniform(0.0, 0.030), 20_000)
    assert limit.current == 512
    assert limit.counters.decreases == 0


def test_latency_rising_with_load_settles_near_the_server_capacity() -> None:
    # 8 slots of 100 ms, the rest queued: latency = 100 ms x max(1, load / 8)
    limit = AdaptiveLimit(4, 256, queue_aware=True)
    seen = _drive(limit, lambda load, rng: 0.100 * max(1.0, load / 8.0), 5_000)
    assert max(seen) <= 24  # slow start does not flood it
    assert 8 <= limit.current <= 16  # the 8 slots plus a short queue
    assert min(seen[1000:]) >= 8  # and the server is never left idle once settled


def test_a_server_that_starts_queueing_later_is_cut_back() -> None:
    limit = AdaptiveLimit(4, 256, queue_aware=True)
    _drive(limit, lambda load, rng: 0.100, 3_000)  # no queue: grows to the bound
    assert limit.current == 256
    # now it serves 16 at once and queues the rest
    _drive(limit, lambda load, rng: 0.100 * max(1.0, load / 16.0), 3_000)
    assert 16 <= limit.current <= 40 and limit.counters.decreases >= 1


def _lognormal(median_s: float, sigma: float) -> Any:
    return lambda rng: median_s * math.exp(sigma * rng.gauss(0.0, 1.0))


def test_heavy_tailed_latency_that_does_not_rise_with_load_lets_the_limit_grow() -> None:
    # a provider behind a local gateway: lognormal latency (median 200 ms, sigma 1), whatever
    # the load. Its fastest answers are 20x faster than its mean: not evidence of a queue
    limit = AdaptiveLimit(4, 512, queue_aware=True)
    draw = _lognormal(0.200, 1.0)
    seen = _drive(limit, lambda load, rng: draw(rng), 20_000)
    assert limit.current == 512
    assert seen[3_000] >= 64  # and it gets there early in the run
    assert limit.gradient is not None and limit.gradient.heavy_tailed


@pytest.mark.parametrize("seed", range(12))
def test_heavy_tailed_latency_rising_with_load_still_settles_near_capacity(seed: int) -> None:
    # 8 slots, lognormal service (median 100 ms, sigma 1), the rest queued: a model server
    # whose answers vary in length. Several draws: the lane must not settle on queued
    # latencies taken for the server's speed (before, 8 of these 12 settled at 28 to 69 calls
    # in flight or peaked at 45)
    limit = AdaptiveLimit(4, 256, queue_aware=True)
    draw = _lognormal(0.100, 1.0)
    seen = _drive(limit, lambda load, rng: draw(rng) * max(1.0, load / 8.0), 20_000, seed)
    assert limit.gradient is not None and limit.gradient.heavy_tailed
    assert 8 <= limit.current <= 24
    assert max(seen[10_000:]) <= 32


def test_steady_latency_never_reads_as_a_heavy_tail() -> None:
    """A queue spreads latency at most as many times as there are calls in flight: a
    server that queues keeps the fastest-answer test, which cuts it back soonest."""
    for latency_at in (lambda load, rng: 0.200 + rng.uniform(0.0, 0.030),
                       lambda load, rng: 0.100 * max(1.0, load / 2.0) + rng.uniform(0.0, 0.010)):
        limit = AdaptiveLimit(4, 256, queue_aware=True)
        _drive(limit, latency_at, 5_000)
        assert limit.gradient is not None and not limit.gradient.heavy_tailed


def test_a_stall_of_the_client_for_less_than_a_round_trip_is_not_taken_for_a_queue() -> None:
    """The run's own event loop blocked for 150 ms (a garbage collection, the machine's other
    process taking both cores): every call in flight answers that much late at once, then
    the latency is flat again. A queue lasts; this does not, and the limit is not cut (on
    the two-core machine such stalls cut a loopback lane every five seconds, holding it near
    80 calls in flight where the server had room for more)."""
    limit = AdaptiveLimit(4, 512, queue_aware=True)
    _drive(limit, lambda load, rng: 0.200 + rng.uniform(0.0, 0.010), 2_000)
    assert limit.current == 512
    stalled = iter([0.350] * 12)  # 12 answers, 120 ms of the simulated clock: under a round trip
    _drive(limit, lambda load, rng: next(stalled, 0.200 + rng.uniform(0.0, 0.010)), 200)
    assert limit.counters.decreases == 0 and limit.current == 512


def test_a_queue_that_lasts_a_round_trip_is_cut_back_as_before() -> None:
    limit = AdaptiveLimit(4, 512, queue_aware=True)
    _drive(limit, lambda load, rng: 0.200, 2_000)
    _drive(limit, lambda load, rng: 0.350, 60)  # 600 ms of answers 75% late: a queue
    assert limit.counters.decreases >= 1 and limit.current < 512


# Servers of several shapes, each called by two lanes (two models a machine serves) on a
# quiet machine, simulated call by call (tests/core/limit_simulation.py): slots, service
# time, the client's timeout and whether the server drops a call whose client left vary.
# Before, two lanes sharing a 2-slot server sent 73 requests for 60 items (the second lane
# took the first one's queue for the server's speed), and a 16-slot server was left a third
# idle once one lane's items ended (the other grew by one call per round trip).
@pytest.mark.parametrize(("slots", "service_s", "timeout_s", "items", "abort"), [
    (8, 0.100, 1.0, 420, True),
    (8, 0.100, 1.0, 420, False),
    (4, 0.250, 2.0, 100, True),
    (16, 0.200, 1.0, 420, True),
    (32, 0.050, 0.5, 2000, True),
    (2, 0.500, 3.0, 60, True),
])  # fmt: skip
def test_two_lanes_fill_a_server_of_any_shape_without_timeouts(slots: int, service_s: float, timeout_s: float,
                                                               items: int, abort: bool) -> None:
    from tests.core.limit_simulation import simulate

    outcome = simulate(slots=slots, service_s=service_s, timeout_s=timeout_s, items=items, abort=abort)
    assert outcome.capacity_share >= 0.85, outcome
    assert outcome.extra_requests <= 0.10, outcome
