"""Over real HTTP: a greedy judge call retried after an unparseable reply reaches the server
with a new seed and a higher temperature, so it can answer differently."""

from __future__ import annotations

import asyncio

from coeval.config.model import ModelConfig
from coeval.interfaces.base import GenerateRequest, GenerateResult
from coeval.plugins.manager import registries
from coeval.prompts.errors import OutputParseError
from coeval.scheduler import Scheduler, SchedulerLimits, WorkItem, WorkOutcome
from coeval.scheduler.resample import retry_seed
from coeval_providers.interfaces import interface_class
from coeval_providers.interfaces.facts import SAMPLING_KEYS
from coeval_testing.fake_server import FakeServer


def _run_judge_item(fake: FakeServer, rejected_replies: int) -> WorkOutcome:
    model = ModelConfig(name="judge", interface="vllm", roles=("judge",),
                        parameters={"model": "local-model", "base_url": fake.url + "/v1", "max_tokens": 16,
                                    "temperature": 0})
    iface = registries().interfaces.get("vllm")(model, None)
    replies = 0

    def parse(result: GenerateResult) -> str:
        nonlocal replies
        replies += 1
        if replies <= rejected_replies:  # the server's reply is fine; the judge's first ones "do not parse"
            raise OutputParseError("no JSON object found")
        return result.text

    outcomes: list[WorkOutcome] = []
    item = WorkItem(key="judge:e0", phase="evaluation", model=model, on_done=outcomes.append, parse=parse,
                    request=GenerateRequest(prompt="Score this reply.", params=model.params_for("judge"), role="judge"))

    async def go() -> None:
        try:
            await Scheduler({"judge": iface}, SchedulerLimits(generation_retries=3)).run("evaluation", [item])
        finally:
            await iface.aclose()

    asyncio.run(go())
    return outcomes[0]


def test_a_retried_greedy_judge_call_sends_a_new_seed_and_temperature(fake: FakeServer) -> None:
    outcome = _run_judge_item(fake, rejected_replies=2)
    assert outcome.status == "ok" and outcome.attempts == 3
    sent = [entry["sampling"] for entry in fake.requests("openai.chat")]
    assert sent == [
        {"temperature": 0},
        {"temperature": 0.2, "seed": 552665080},
        {"temperature": 0.4, "seed": 307830487},
    ]
    assert sent[1]["seed"] == retry_seed(None, "judge:e0", 1)  # fixed per item and retry: a resumed run sends the same


def test_interfaces_that_declare_a_seed_key_say_they_take_a_seed() -> None:
    for name, keys in SAMPLING_KEYS.items():
        assert interface_class(name).takes_seed == ("seed" in keys), name
    assert interface_class("anthropic").takes_seed is False  # Messages API: no seed, so a retry warms up
    assert interface_class("bedrock").takes_seed is False
    assert interface_class("gemini").takes_seed is True
