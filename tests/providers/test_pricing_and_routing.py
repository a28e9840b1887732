"""Prices and ``interface: auto``: the packaged table, a user's override file, the cheapest
provider with credentials, and the hooks the core calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from coeval.config.model import ModelConfig
from coeval.plugins.config_loading import load_config
from coeval.plugins.manager import get_plugin_manager
from coeval_providers.pricing import (
    PRICING_ENV,
    PricingFileError,
    PricingTable,
    pricing_table,
    reset_pricing_table,
)


@pytest.fixture(autouse=True)
def fresh_table(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delenv(PRICING_ENV, raising=False)
    reset_pricing_table()
    yield
    reset_pricing_table()


def test_prices_by_exact_id_dated_snapshot_and_region_prefix() -> None:
    t = pricing_table()
    assert t.price("openai", "gpt-4o-mini").input == 0.15
    assert t.price("openai", "gpt-4o-mini-2024-07-18") == t.price("openai", "gpt-4o-mini")  # not gpt-4o's price
    assert t.price("openai", "gpt-4o-2024-08-06").input == 2.5
    assert t.price("bedrock", "us.anthropic.claude-3-5-haiku-20241022-v1:0") == t.price(
        "bedrock", "anthropic.claude-3-5-haiku-20241022-v1:0")
    assert t.price("openai", "no-such-model") is None
    assert t.price("vllm", "anything").input == 0.0


def test_cost_and_batch_discount() -> None:
    price = pricing_table().price("anthropic", "claude-3-5-haiku-20241022")
    assert price.cost(1_000_000, 1_000_000) == pytest.approx(4.80)
    assert price.cost(1_000_000, 1_000_000, batch=True) == pytest.approx(2.40)
    assert pricing_table().batch_discount("groq") == 1.0


def test_auto_picks_the_cheapest_provider_with_credentials() -> None:
    t = pricing_table()
    everyone = t.resolve_auto("deepseek-v3", lambda iface: True)
    assert (everyone.interface, everyone.model_id) == ("deepseek", "deepseek-chat")  # $0.07 beats $0.14
    only_openrouter = t.resolve_auto("deepseek-v3", lambda iface: iface == "openrouter")
    assert (only_openrouter.interface, only_openrouter.model_id) == ("openrouter", "deepseek/deepseek-chat")
    assert t.resolve_auto("deepseek-v3", lambda iface: False) is None
    # a Groq model id is never routed to a provider that does not know that id
    groq = t.resolve_auto("llama-3.1-8b-instant", lambda iface: iface in ("openrouter", "groq"))
    assert groq.interface in ("groq", "openrouter") and groq.model_id == t.provider_model_id(groq.interface, "llama-3.1-8b")


def test_user_pricing_file_overrides_and_extends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = tmp_path / "prices.yaml"
    user.write_text(yaml.safe_dump({
        "providers": {"openai": {"models": {"gpt-4o-mini": {"input": 0.01, "output": 0.02}}},
                      "vllm": {"models": {"my-model": {"input": 0.5, "output": 0.5}}}},
        "auto_routing": [{"names": ["my-model"], "serve": {"vllm": "my-model"}}],
    }))
    monkeypatch.setenv(PRICING_ENV, str(user))
    reset_pricing_table()
    t = pricing_table()
    assert t.price("openai", "gpt-4o-mini").input == 0.01
    assert t.price("openai", "gpt-4o-mini").batch_discount == 0.5  # provider setting kept
    assert t.price("openai", "gpt-4o").input == 2.5  # untouched entries stay
    assert t.resolve_auto("my-model", lambda i: i == "vllm").interface == "vllm"
    assert str(user) in t.sources


@pytest.mark.parametrize(("content", "message"), [
    ("providers: {openai: {models: {gpt-x: {input: cheap, output: 1}}}}", "providers.openai.models.gpt-x.input"),
    ("providers: {openai: {batch_discount: 2}}", "batch_discount"),
    ("prices: {}", "unknown top-level key"),
    ("auto_routing: [{names: x}]", "auto_routing[0]"),
    ("providers: [", "not valid YAML"),
    ("providers: [openai]", "providers"),
    ("providers: {openai: {models: [gpt-4o]}}", "providers.openai.models"),
    ("auto_routing: {names: [x]}", "auto_routing"),
])
def test_bad_pricing_file_names_file_and_field(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    with pytest.raises(PricingFileError) as err:
        PricingTable.load(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_pricing_file_that_is_not_utf8_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(b"\xff\xfe providers: {}")
    with pytest.raises(PricingFileError, match="not UTF-8") as err:
        PricingTable.load(path)
    assert str(path) in str(err.value)


def test_bad_pricing_file_is_a_user_error_in_plan_and_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A broken $COEVAL_PRICING_FILE stops plan and run with exit 2 and the file's name, before
    any call is paid for (not a traceback, not a retried error on every reply)."""
    from click.testing import CliRunner
    from coeval.cli.main import cli

    prices = tmp_path / "prices.yaml"
    prices.write_text("providers: {openai: {models: {gpt-4o-mini: {input: cheap, output: 1}}}}")
    monkeypatch.setenv(PRICING_ENV, str(prices))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-1234")
    config = tmp_path / "exp.yaml"
    config.write_text(yaml.safe_dump({
        "models": [{"name": "gpt", "interface": "openai", "parameters": {"model": "gpt-4o-mini", "base_url": "http://127.0.0.1:9/v1"},
                    "roles": ["teacher", "student", "judge"]}],
        "tasks": [{"name": "t", "description": "d", "output_description": "o", "target_attributes": {"a": ["x"]},
                   "nuanced_attributes": {"b": ["y"]}, "sampling": {"target": [1, 1], "nuance": [1, 1], "total": 1},
                   "rubric": {"r": "c"}}],
        "experiment": {"id": "prices-test", "storage_folder": str(tmp_path / "runs")},
    }))
    for args in (["plan", "--config", str(config)], ["run", "--config", str(config), "--probe", "disable"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 2, (args, result.output)
        assert isinstance(result.exception, SystemExit), result.exception  # a user error, not a traceback
        assert str(prices) in result.output and "providers.openai.models.gpt-4o-mini.input" in result.output
    assert not (tmp_path / "runs" / "prices-test" / "phase3_datapoints").exists()


def test_hooks_price_and_route() -> None:
    hook = get_plugin_manager().hook
    assert hook.model_price(interface="openai", model_id="gpt-4o-mini") == {"input": 0.15, "output": 0.6, "batch_discount": 0.5}
    assert hook.model_price(interface="openai", model_id="unknown-model") is None
    chosen = hook.resolve_auto_interface(model=ModelConfig(name="d", interface="auto", parameters={"model": "deepseek-v3"}),
                                         has_credentials=lambda i: i in ("openrouter", "deepinfra"))
    assert chosen == "deepinfra"  # ties with OpenRouter at $0.14; listed first


def test_auto_in_a_config_resolves_to_the_provider_and_its_model_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    for var in ("DEEPSEEK_API_KEY", "OPENROUTER_API_KEY", "DEEPINFRA_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    keys = tmp_path / "keys.yaml"
    keys.write_text(yaml.safe_dump({"providers": {"openrouter": "sk-or-test-key", "deepinfra": "di-test-key"}}))
    config = {
        "models": [{"name": "deepseek-v3", "interface": "auto", "parameters": {"model": "deepseek/deepseek-chat"},
                    "roles": ["teacher", "student", "judge"]}],
        "tasks": [{"name": "t", "description": "d", "output_description": "o", "target_attributes": {"a": ["x"]},
                   "nuanced_attributes": {"b": ["y"]}, "sampling": {"target": [1, 1], "nuance": [1, 1], "total": 1},
                   "rubric": {"r": "c"}}],
        "experiment": {"id": "auto-test", "storage_folder": str(tmp_path / "runs")},
    }
    with caplog.at_level("INFO", logger="coeval.providers"):
        loaded = load_config(config, keys_file=str(keys))
    model = loaded.models[0]
    assert model.interface == "deepinfra"  # $0.14 at DeepInfra and at OpenRouter: the route lists DeepInfra first
    assert model.requested_interface == "auto"
    assert "deepseek-v3" in caplog.text and "deepinfra" in caplog.text
    from coeval.plugins.manager import registries

    iface = registries().interfaces.get(model.interface)(model, None)
    assert iface.model_id == "deepseek-ai/DeepSeek-V3"  # the id DeepInfra knows the model by
