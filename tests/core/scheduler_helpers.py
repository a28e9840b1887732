"""Helpers for the scheduler tests: a scriptable interface and item builders."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from coeval.config.model import ModelConfig
from coeval.interfaces.base import GenerateRequest, GenerateResult, Interface, ModelError, Usage
from coeval.scheduler import WorkItem, WorkOutcome

#: Where the scheduler's correction note on a retried unparseable reply begins.
CORRECTION_MARK = "\n\nYour previous reply (item "


class ScriptedInterface(Interface):
    """Answers ``ok:<prompt>`` after a per-prompt script of errors (consumed per attempt).

    ``script[prompt]`` is a list of ModelError instances or strings (replies); when it runs
    out, replies are ``ok:<prompt>``. ``delay`` is the (real) latency of each call.
    """

    name = "scripted"

    def __init__(
        self,
        name: str = "m",
        *,
        script: dict[str, Sequence[Any]] | None = None,
        default: Callable[[str, int], Any] | None = None,
        delay: float = 0.0,
        key: str | None = None,
        default_concurrency: int = 4,
        max_concurrency: int = 16,
        cost: float | None = None,
    ) -> None:
        super().__init__(ModelConfig(name=name, interface="scripted"))
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.default = default
        self.delay = delay
        self.key = key or f"scripted:{name}"
        self.default_concurrency = default_concurrency
        self.max_concurrency = max_concurrency
        self.cost = cost
        self.calls: Counter[str] = Counter()
        self.in_flight = 0
        self.peak_in_flight = 0

    def connection_key(self) -> str:
        return self.key

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        prompt = request.prompt.split(CORRECTION_MARK, 1)[0]  # a retry's correction note keeps the item's script
        n = self.calls[prompt]
        self.calls[prompt] += 1
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            steps = self.script.get(prompt)
            step: Any = steps[n] if steps is not None and n < len(steps) else None
            if step is None and self.default is not None:
                step = self.default(prompt, n)
            if isinstance(step, BaseException):
                raise step
            text = step if isinstance(step, str) else f"ok:{prompt}"
            return GenerateResult(text=text, usage=Usage(3, 2), cost_usd=self.cost)
        finally:
            self.in_flight -= 1

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())


class Recorder:
    """Collects outcomes; fails loudly if an item is reported twice."""

    def __init__(self) -> None:
        self.outcomes: dict[str, WorkOutcome] = {}
        self.order: list[str] = []

    def __call__(self, outcome: WorkOutcome) -> None:
        key = outcome.item.key
        assert key not in self.outcomes, f"on_done called twice for {key}"
        self.outcomes[key] = outcome
        self.order.append(key)

    def by_status(self) -> Counter[str]:
        return Counter(o.status for o in self.outcomes.values())


def make_items(
    iface: Interface,
    n: int,
    recorder: Recorder,
    *,
    parse: Callable[[GenerateResult], Any] | None = None,
    prefix: str = "p",
    model_name: str | None = None,
) -> list[WorkItem]:
    model = iface.model if model_name is None else ModelConfig(name=model_name, interface=iface.name)
    return [
        WorkItem(
            key=f"{model.name}:{prefix}{i}",
            phase="evaluation",
            model=model,
            request=GenerateRequest(prompt=f"{prefix}{i}"),
            on_done=recorder,
            parse=parse,
        )
        for i in range(n)
    ]


def rate_limited(retry_after: float | None = None) -> ModelError:
    from coeval.interfaces.base import RateLimitError

    return RateLimitError("429 too many requests", retry_after=retry_after)


def transient() -> ModelError:
    from coeval.interfaces.base import TransientModelError

    return TransientModelError("503 service unavailable")


def fatal() -> ModelError:
    from coeval.interfaces.base import FatalModelError

    return FatalModelError("401 invalid api key")
