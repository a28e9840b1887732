"""Admission: whether one more call may start under the budget, counting the calls in
flight at their estimated cost, and the journal every call is written to before it is sent.

The budget is checked against what results reported *plus* what the calls still in flight
will probably cost: checking results alone let every call in flight at the last moment
overshoot (a $0.006 budget spent $0.0117). Near the limit a call that would not fit waits
for the calls in flight to settle, then starts only if their real cost left room.

This is separate from the adaptive concurrency limit (how many calls a connection takes at
once): admission decides whether a call may cost money at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Literal, Protocol

__all__ = ["Admission", "CallJournal"]

#: A hair of tolerance: ten calls of $0.01 fit a $0.10 budget despite float rounding.
_EPSILON_USD = 1e-9


class CallJournal(Protocol):
    """Where each call is written before it is sent and after it returns
    (:class:`coeval.run.ledger.Ledger` over ``calls.jsonl``). ``started`` raises ``OSError``
    when its line cannot be written; the call is then not sent."""

    def started(self, model: str, phase: str, item: str, estimate_usd: float) -> str: ...
    def ended(self, call: str, model: str, cost_usd: float | None) -> None: ...
    def not_sent(self, call: str, model: str) -> None: ...


class Admission:
    """Calls in flight and what they are expected to cost; the budget's verdict on one more.

    A call's estimate for (model, phase) is the larger of the plan's prior (``priors``) and
    the most a call of that model and phase has cost so far: cautious, so the budget holds
    when a price was guessed low. Under a budget, a (model, phase) with neither sends one
    call at a time until one has returned and said what it costs."""

    def __init__(self, budget_usd: float | None, priors: Mapping[tuple[str, str], float] | None = None) -> None:
        self.budget_usd = budget_usd
        self._estimates: dict[tuple[str, str], float] = dict(priors or {})
        #: Calls in flight and their estimated cost together.
        self.in_flight = 0
        self.in_flight_usd = 0.0
        self._unknown_in_flight: dict[tuple[str, str], int] = {}
        self._settled: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def estimate(self, model: str, phase: str) -> float:
        return self._estimates.get((model, phase), 0.0)

    def budget_verdict(self, spend_usd: float, model: str, phase: str) -> Literal["go", "wait", "budget"]:
        """``go``: the call fits; ``wait``: it may fit once the calls in flight settle;
        ``budget``: it does not fit, and nothing in flight can change that."""
        budget = self.budget_usd
        if budget is None:
            return "go"
        if spend_usd >= budget - _EPSILON_USD:
            return "budget"
        key = (model, phase)
        estimate = self._estimates.get(key)
        if estimate is None:  # no price known yet: one call finds it out
            return "wait" if self._unknown_in_flight.get(key) else "go"
        if spend_usd + self.in_flight_usd + estimate <= budget + _EPSILON_USD:
            return "go"
        return "wait" if self.in_flight else "budget"

    async def admit(self, model: str, phase: str, *, calls: Mapping[str, int], cap: int | None,
                    spend: Callable[[], float], stopped: Callable[[], str | None]) -> str | None:
        """Under a budget: wait until one more call of ``model`` fits, counting the calls in
        flight. None when it may start, else why not (``quota``, ``budget``, or the reason
        the phase stopped while it waited)."""
        while True:
            if cap is not None and calls.get(model, 0) >= cap:
                return "quota"
            verdict = self.budget_verdict(spend(), model, phase)
            if verdict != "wait":
                return None if verdict == "go" else "budget"
            await self.wait()  # near the budget: the calls in flight settle first
            reason = stopped()
            if reason is not None:
                return reason

    def started(self, model: str, phase: str, estimate_usd: float) -> None:
        self.in_flight += 1
        self.in_flight_usd += estimate_usd
        if self.budget_usd is not None and (model, phase) not in self._estimates:
            key = (model, phase)
            self._unknown_in_flight[key] = self._unknown_in_flight.get(key, 0) + 1

    def settled(self, model: str, phase: str, estimate_usd: float, cost_usd: float | None, *,
                answered: bool = True) -> None:
        """A call in flight returned (answered, failed, or given back): its estimate leaves
        the calls in flight; an answer's real cost teaches the next estimate."""
        self.in_flight -= 1
        self.in_flight_usd = max(0.0, self.in_flight_usd - estimate_usd) if self.in_flight else 0.0
        key = (model, phase)
        if self._unknown_in_flight.get(key):
            self._unknown_in_flight[key] -= 1
        if answered and (cost_usd or 0.0) >= self._estimates.get(key, -1.0):
            self._estimates[key] = float(cost_usd or 0.0)
        self.wake()

    def wake(self) -> None:
        """Wake the calls waiting for room (a call settled, or the phase stops)."""
        if self._settled is not None:
            self._settled.set()
            self._settled = None

    async def wait(self) -> None:
        """Until a call in flight settles (or :meth:`wake`)."""
        loop = asyncio.get_running_loop()
        if self._settled is None or self._loop is not loop:  # a scheduler may serve several loops
            self._settled, self._loop = asyncio.Event(), loop
        await self._settled.wait()
