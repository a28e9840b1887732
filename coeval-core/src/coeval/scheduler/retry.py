"""The one retry policy every provider shares.

Interfaces never retry (their SDK clients are built with retries off); they raise one of
the :mod:`coeval.interfaces.base` error kinds and the scheduler decides here:

* ``fatal`` (auth, unknown model, bad request): never retried.
* ``rate_limit``: wait what the provider asked for (``retry_after``) when it said, else
  exponential backoff; the connection's concurrency shrinks too.
* ``transient`` (5xx, timeouts, dropped connections) and ``malformed`` (a 200 with a body
  that is not a reply): exponential backoff with jitter.
* unparseable output (:class:`~coeval.prompts.errors.OutputParseError`): retried at once, at most
  ``generation_retries`` times; a model's bad answer is not a load problem.

All causes together stay under ``max_attempts`` calls per item, so retries can never
multiply the way nested retry loops do.
"""

from __future__ import annotations

import random

import attrs

from coeval.interfaces.base import ModelError

__all__ = ["RetryPolicy"]


@attrs.frozen
class RetryPolicy:
    """Backoff shape. Delay before retry ``n`` (n = 1 after the first failed call) is
    ``min(max_delay_s, base_delay_s * 2 ** (n - 1))`` with the upper half jittered
    ("equal jitter"): never less than half the nominal delay, so a crowd of failing calls
    spreads out without any of them hammering the provider."""

    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    #: A provider asking for a longer wait than this fails the item instead (a daily quota
    #: reset is not worth holding a run for); ``--continue`` picks it up later.
    max_retry_after_s: float = 300.0

    def backoff(self, failures: int, rng: random.Random) -> float:
        nominal = min(self.max_delay_s, self.base_delay_s * (2.0 ** max(0, failures - 1)))
        return nominal / 2.0 + rng.random() * nominal / 2.0

    def delay_for(self, error: ModelError, failures: int, rng: random.Random) -> float | None:
        """Seconds to wait before the next attempt, or None when the error is not worth one."""
        if not error.retryable:
            return None
        if error.retry_after is not None and error.retry_after > 0:
            if error.retry_after > self.max_retry_after_s:
                return None
            return float(error.retry_after)
        return self.backoff(failures, rng)
