"""The queue-aware limiter grows while latency does not rise with the load, and shrinks to
the server's capacity once it clearly does (a simulated server, answer by answer)."""

from __future__ import annotations

import random

from coeval.scheduler import AdaptiveLimit


def _drive(limit: AdaptiveLimit, latency_at: object, answers: int) -> list[int]:
    """Feed ``answers`` answers whose latency is ``latency_at(limit, rng)``; the limits seen."""
    rng = random.Random(7)
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
