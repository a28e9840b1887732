"""What a run has used of what it may use: calls per model against their quota, and spend
against the budget, counting what earlier processes of the same run used (``--continue``).

Quota is reserved before each call (:meth:`Allowance.reserve`), so it is exact under any
concurrency. How calls in flight count against the budget is :mod:`coeval.scheduler.admission`'s.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

__all__ = ["Allowance"]

#: A hair of tolerance: ten calls of $0.01 reach a $0.10 budget despite float rounding.
_EPSILON_USD = 1e-9


class Allowance:
    """Calls made per model and spend so far, and the quota and budget they are held to."""

    def __init__(self, quota: Mapping[str, int | None], budget_usd: float | None, *,
                 calls_before: Mapping[str, int] | None = None, spend_before_usd: float = 0.0) -> None:
        self.quota = quota
        self.budget_usd = budget_usd
        #: Calls made per model, counting ``calls_before``. Schedulers that share a quota share
        #: this counter (a batch executor's real-time retries count toward the run's quota).
        self.calls: Counter[str] = Counter(calls_before or {})
        #: Spend reported by results so far, counting ``spend_before_usd``.
        self.spend_usd = float(spend_before_usd)

    def quota_reached(self, model: str) -> bool:
        cap = self.quota.get(model)
        return cap is not None and self.calls[model] >= cap

    def quota_left(self, model: str) -> int | None:
        cap = self.quota.get(model)
        return None if cap is None else max(0, cap - self.calls[model])

    def over_budget(self) -> bool:
        budget = self.budget_usd
        return budget is not None and self.spend_usd >= budget - _EPSILON_USD

    def reserve(self, model: str) -> None:
        """Count one call of ``model`` before it is made."""
        self.calls[model] += 1

    def give_back(self, model: str) -> None:
        """A reserved call the server never saw (refused, or handed back on a stop)."""
        self.calls[model] -= 1

    def add_spend(self, usd: float) -> None:
        self.spend_usd += usd
