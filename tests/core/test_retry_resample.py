"""A retry after a rejected reply samples differently: new seed, or a temperature bump."""

from __future__ import annotations

import asyncio
from typing import Any

import attrs
from coeval.interfaces.base import GenerateRequest, GenerateResult
from coeval.prompts.errors import OutputParseError
from coeval.scheduler import Scheduler, SchedulerLimits
from coeval.scheduler.resample import bumped_temperature, retry_params, retry_seed

from .scheduler_helpers import Recorder, ScriptedInterface, make_items


def test_retry_seeds_are_fixed_per_item_and_retry() -> None:
    assert retry_seed(None, "judge-1:e0", 1) == 947365292
    assert retry_seed(None, "judge-1:e0", 2) == 752490937
    assert retry_seed(None, "m:p1", 1) == 1864229783  # another item, another seed
    assert retry_seed(7, "m:p0", 1) == 1946620743  # the configured seed takes part
    assert retry_seed(None, "m:p0", 1) == 606100317


def test_temperature_rises_by_a_fifth_per_retry_up_to_one() -> None:
    assert [bumped_temperature(0, r) for r in range(1, 7)] == [0.2, 0.4, 0.6, 0.8, 1.0, 1.0]
    assert bumped_temperature(0.7, 1) == 0.9
    assert bumped_temperature(0.7, 3) == 1.0
    assert bumped_temperature(1.3, 2) == 1.3  # above the cap: left as configured


def test_retry_params_policy() -> None:
    greedy = {"model": "x", "temperature": 0}
    # a seed-taking interface at temperature 0: new seed, and a bump (a seed alone changes nothing greedy)
    assert retry_params(greedy, "m:p0", 1, takes_seed=True) == {"model": "x", "temperature": 0.2, "seed": 606100317}
    # sampling already: only the seed changes
    assert retry_params({"temperature": 0.5, "seed": 7}, "m:p0", 1, takes_seed=True) == {"temperature": 0.5,
                                                                                          "seed": 1946620743}
    # no seed on this interface: the temperature rises
    assert retry_params({"temperature": 0.5}, "m:p0", 2, takes_seed=False) == {"temperature": 0.9}
    # no seed and no temperature: the server's default already samples; nothing to change
    assert retry_params({"model": "x"}, "m:p0", 1, takes_seed=False) == {"model": "x"}
    assert retry_params(greedy, "m:p0", 0, takes_seed=True) == greedy  # the first call is as configured


def _spy_run(takes_seed: bool, params: dict[str, Any]) -> list[dict[str, Any]]:
    def parse(result: GenerateResult) -> str:
        if result.text.startswith("bad"):
            raise OutputParseError("no JSON found")
        return result.text

    iface = ScriptedInterface(script={"p0": ["bad reply", "bad again", "good"]})
    iface.takes_seed = takes_seed
    seen: list[dict[str, Any]] = []
    original = iface.generate

    async def spy(request: GenerateRequest) -> GenerateResult:
        seen.append(dict(request.params))
        return await original(request)

    iface.generate = spy  # type: ignore[method-assign]
    rec = Recorder()
    items = [attrs.evolve(item, request=GenerateRequest(prompt="p0", params=params))
             for item in make_items(iface, 1, rec, parse=parse)]
    asyncio.run(Scheduler({"m": iface}, SchedulerLimits(generation_retries=3)).run("evaluation", items))
    assert rec.outcomes["m:p0"].status == "ok"
    return seen


def test_a_greedy_call_retried_after_unparseable_replies_gets_new_seeds_and_warms_up() -> None:
    assert _spy_run(True, {"temperature": 0}) == [
        {"temperature": 0},
        {"temperature": 0.2, "seed": 606100317},
        {"temperature": 0.4, "seed": retry_seed(None, "m:p0", 2)},
    ]


def test_without_a_seed_the_retry_raises_the_temperature() -> None:
    assert _spy_run(False, {"temperature": 0.3}) == [{"temperature": 0.3}, {"temperature": 0.5}, {"temperature": 0.7}]
