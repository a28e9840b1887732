"""The queue-aware limiter's growth rule: it grows only when the smoothed latency and the
answering call's own latency both show a queue shorter than ``alpha``."""

from __future__ import annotations

from coeval.scheduler import AdaptiveLimit


def test_a_call_that_waited_in_the_queue_holds_growth_though_the_average_is_still_low() -> None:
    limit = AdaptiveLimit(4, 64, queue_aware=True)
    for t in range(4):  # unqueued calls of 100 ms: slow start, one more per answer
        limit.succeeded(0.100, now=float(t))
    assert limit.current == 8
    # a call that waited behind others: 200 ms, so with 8 in flight its own queue is 8 x 0.5 = 4
    # calls, while the smoothed latency (120 ms) still says 8 x (1 - 100/120) = 1.3, under alpha = 2
    limit.succeeded(0.200, now=10.0)
    assert limit.current == 8
    assert limit.gradient is not None and limit.gradient.srtt is not None
    assert abs(limit.gradient.srtt - 0.120) < 1e-9
    limit.succeeded(0.100, now=11.0)  # an unqueued answer: growth goes on
    assert limit.current == 9


def test_a_long_queue_cuts_the_limit_to_the_estimated_capacity_plus_alpha() -> None:
    limit = AdaptiveLimit(16, 64, queue_aware=True)
    limit.succeeded(0.100, now=0.0)  # min_rtt 100 ms; slow start: 17
    assert limit.current == 17
    # a call that waited 300 ms: srtt = 100 + 0.2 x 300 = 160 ms, queue = 17 x (1 - 100/160) = 6.4 > 2 x alpha,
    # so the limit drops to 17 x 100/160 + alpha (2) = 12.6
    limit.succeeded(0.400, now=1.0)
    assert limit.current == 12 and limit.counters.decreases == 1
    limit.succeeded(0.400, now=1.1)  # within one srtt of the cut: no second cut
    assert limit.counters.decreases == 1
