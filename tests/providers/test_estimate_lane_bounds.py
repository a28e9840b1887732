"""The time estimate takes a lane's concurrency bounds from the interface as the run builds
it, without credentials or sample calls: the interface's own reading of its settings."""

from __future__ import annotations

from coeval.config.model import ModelConfig
from coeval.planning.cost.estimate import _lane_bounds
from coeval.planning.cost.samples import SampleResults
from coeval.plugins.manager import registries


def _bounds(params: dict[str, object]) -> tuple[int, int]:
    return _lane_bounds(ModelConfig("m", "openai", parameters={"model": "gpt-4o-mini", **params}), SampleResults(),
                        registries())  # fmt: skip


def test_bounds_follow_the_models_settings_and_the_interfaces_defaults() -> None:
    assert _bounds({}) == (32, 512)  # the openai interface's own start and bound
    assert _bounds({"concurrency": 3, "max_concurrency": 7}) == (3, 7)
    assert _bounds({"max_concurrency": 10}) == (10, 10)  # the bound also bounds the start


def test_a_loopback_server_starts_low_as_the_run_does() -> None:
    # a self-hosted server that queues gives no 429: the interface starts at 4 and slow start finds its capacity
    assert _bounds({"base_url": "http://127.0.0.1:9/v1"}) == (4, 512)
    assert _bounds({"base_url": "http://127.0.0.1:9/v1", "self_hosted": False}) == (32, 512)


def test_an_interface_that_cannot_be_built_here_takes_the_base_bounds() -> None:
    model = ModelConfig("m", "no-such-interface", parameters={})
    assert _lane_bounds(model, SampleResults(), registries()) == (8, 64)
