"""V-45 (sampling keys per interface) and V-46 (timeouts) through the public validator."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pluggy
from coeval import RegisterInterface, hookimpl
from coeval.interfaces.mock import MockInterface
from coeval.plugins.config_loading import validate_config


def _config(interface: str, **params: Any) -> dict[str, Any]:
    return {
        "models": [{"name": "m", "interface": interface, "roles": ["teacher", "student", "judge"],
                    "parameters": {"model": "x", "base_url": "http://127.0.0.1:8000/v1", **params}}],
        "tasks": [{"name": "t", "description": "d", "target_attributes": {"a": ["x"]}, "rubric": {"r": "c"},
                   "sampling": {"total": 1}}],
        "experiment": {"id": "e", "storage_folder": "./runs"},
    }


def _issues(interface: str, **params: Any) -> list[tuple[str, str, str]]:
    issues = validate_config(_config(interface, **params), check_filesystem=False)
    return [(i.rule, i.path, i.message) for i in issues if i.rule in ("V-45", "V-46")]


def test_a_misspelt_sampling_key_names_the_rule_and_the_right_key() -> None:
    [(rule, path, message)] = _issues("vllm", repetiton_penalty=1.1)
    assert (rule, path) == ("V-45", "models[0].parameters.repetiton_penalty")
    assert "did you mean 'repetition_penalty'?" in message


def test_unknown_keys_are_fine_under_extra_body_and_declared_keys_pass() -> None:
    assert _issues("vllm", extra_body={"foo_unknown": 1}, top_k=20, min_p=0.05, repetition_penalty=1.1) == []
    assert [r for r, _, _ in _issues("openai", foo_unknown=1)] == ["V-45"]


def test_timeouts_must_be_positive_and_at_most_a_day() -> None:
    assert sorted(p for _, p, _ in _issues("vllm", timeout=0, connect_timeout=-1, connect_wait_s=90_000)) == [
        "models[0].parameters.connect_timeout", "models[0].parameters.connect_wait_s", "models[0].parameters.timeout"]
    assert _issues("vllm", timeout=3600, connect_timeout=5, connect_wait_s=600) == []


def test_self_hosted_is_a_setting_of_every_openai_compatible_interface_and_must_be_a_boolean() -> None:
    assert _issues("openai", self_hosted=True) == []
    issues = validate_config(_config("openai", self_hosted="yes"), check_filesystem=False)
    assert [(i.rule, i.path) for i in issues] == [("V-20", "models[0].parameters.self_hosted")]
    assert "self_hosted must be true or false; got 'yes'" in issues[0].message


class _WithParameterRule:
    """A plugin whose interface declares how its parameters' values go wrong."""

    @hookimpl
    def register_interfaces(self, register: RegisterInterface) -> None:
        def problem(params: Mapping[str, Any], model_name: str) -> str | None:
            depth = params.get("depth", 1)
            return None if isinstance(depth, int) and depth > 0 else f"model {model_name!r}: depth must be a positive integer"

        register("deep", MockInterface, requires_model=False, parameter_problem=problem)


def test_a_plugin_interfaces_parameter_rule_is_checked_by_validation(pm: pluggy.PluginManager) -> None:
    pm.register(_WithParameterRule(), name="deep-plugin")
    issues = validate_config(_config("deep", depth=0), check_filesystem=False)
    assert [(i.rule, i.path, i.message, i.fix) for i in issues if i.rule == "V-20"] == [
        ("V-20", "models[0].parameters", "model 'm': depth must be a positive integer",
         "see the parameters of interface 'deep' in its documentation")]
    assert [i for i in validate_config(_config("deep", depth=3), check_filesystem=False) if i.rule == "V-20"] == []
