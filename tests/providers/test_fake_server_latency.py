"""The fake server's heavy-tailed latency (``--latency-sigma``): lognormal around the
configured median, the same for the same request index, so benchmark runs repeat."""

from __future__ import annotations

import math
import statistics

from coeval_testing.fake_server._core import lognormal_ms


def test_lognormal_latency_has_the_configured_median_and_spread() -> None:
    draws = [lognormal_ms(200.0, 0.5, i) for i in range(4000)]
    assert abs(statistics.median(draws) / 200.0 - 1.0) < 0.08
    logs = [math.log(d / 200.0) for d in draws]
    assert abs(statistics.pstdev(logs) - 0.5) < 0.03  # sigma, on the log scale


def test_lognormal_latency_repeats_per_request_index() -> None:
    assert [lognormal_ms(200.0, 1.0, i) for i in range(50)] == [lognormal_ms(200.0, 1.0, i) for i in range(50)]
    assert len({lognormal_ms(200.0, 1.0, i) for i in range(50)}) == 50
