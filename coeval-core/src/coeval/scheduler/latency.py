"""Queue-aware concurrency for self-hosted servers, in the spirit of TCP Vegas.

A local inference server (vLLM, SGLang, TGI, llama.cpp's server, Ollama) does not answer
429 when it is full: it queues. More calls in flight then buy no throughput, only latency,
and queue time counts against the client's ``timeout``. So besides rate-limit signals the
limiter watches latency:

* ``min_rtt`` is the lowest call latency seen in the current or the previous window of
  :attr:`LatencyGradient.window` calls (a moving minimum: it follows a server that became
  slower, e.g. after a restart with another model).
* ``srtt`` is an exponentially weighted mean of latency (weight :attr:`smoothing`).
* With ``limit`` calls in flight, ``queue = limit * (1 - min_rtt / srtt)`` estimates how
  many of them wait in the server's queue rather than being served (Little's law).
* At most once per ``srtt`` the limit is adjusted: when ``queue > beta`` it is set to
  ``limit * min_rtt / srtt + alpha`` (the server's estimated capacity plus a small queue,
  so the server never idles); when ``queue < alpha``, and the call's own latency also
  shows a queue under ``alpha``, it may grow as usual (slow start, then additive
  increase); otherwise it holds. (The smoothed latency lags a round trip behind: without
  the second test, slow start overshoots a small server by several calls.)
* ``alpha = max(2, 0.05 * limit)`` and ``beta = 2 * alpha`` calls: a short queue keeps
  every server slot busy while adding little latency.

Latency differences under :attr:`noise_floor_s` are ignored, so instant replies (mocks,
caches) never look like queueing.
"""

from __future__ import annotations

import attrs

__all__ = ["LatencyGradient"]

GROW = 1
HOLD = 0


@attrs.define
class LatencyGradient:
    """Latency book-keeping of one lane; :meth:`observe` says whether the limit may grow."""

    window: int = 200
    smoothing: float = 0.2
    noise_floor_s: float = 0.002
    min_alpha: float = 2.0
    alpha_share: float = 0.05
    min_rtt: float | None = None
    srtt: float | None = None
    target: float | None = None
    _window_min: float = float("inf")
    _previous_min: float = float("inf")
    _samples: int = 0
    _next_adjust: float = 0.0

    def _update(self, latency_s: float) -> None:
        self._samples += 1
        self._window_min = min(self._window_min, latency_s)
        if self._samples >= self.window:
            self._previous_min, self._window_min, self._samples = self._window_min, float("inf"), 0
        self.min_rtt = min(self._window_min, self._previous_min)
        self.srtt = latency_s if self.srtt is None else self.srtt + self.smoothing * (latency_s - self.srtt)

    def queue(self, limit: float, latency_s: float | None = None) -> float:
        """Estimated calls waiting in the server's queue with ``limit`` in flight, from the
        smoothed latency (or from one call's ``latency_s``)."""
        rtt = self.srtt if latency_s is None else latency_s
        if self.min_rtt is None or rtt is None or rtt - self.min_rtt < self.noise_floor_s:
            return 0.0
        return max(0.0, limit * (1.0 - self.min_rtt / rtt))

    def alpha(self, limit: float) -> float:
        return max(self.min_alpha, self.alpha_share * limit)

    def observe(self, latency_s: float, limit: float, now: float) -> int:
        """Feed one call's latency. Returns :data:`GROW`, :data:`HOLD`, or ``-1`` after
        setting :attr:`target` (the limit to drop to)."""
        self._update(latency_s)
        alpha = self.alpha(limit)
        queue = self.queue(limit)
        if queue < alpha and self.queue(limit, latency_s) < alpha:
            return GROW
        if queue <= 2.0 * alpha:
            return HOLD
        # one decrease per round trip: calls still in flight answer from the old queue
        if now < self._next_adjust:
            return HOLD
        assert self.min_rtt is not None and self.srtt is not None
        self._next_adjust = now + self.srtt
        self.target = limit * self.min_rtt / self.srtt + alpha
        return -1
