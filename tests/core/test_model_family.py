"""``models[].family``: an optional, validated name the analysis uses for conflicts."""

from __future__ import annotations

from typing import Any

import pytest
from coeval.config import ConfigError
from coeval.plugins.config_loading import load_config


def _raw(**model_extra: Any) -> dict[str, Any]:
    return {
        "models": [
            {"name": "m", "interface": "mock", "roles": ["student", "judge", "teacher"], **model_extra}
        ],
        "tasks": [{"name": "t", "description": "d"}],
        "experiment": {"id": "e"},
    }


def test_family_is_kept_on_the_model() -> None:
    config = load_config(_raw(family="openai"), check_filesystem=False)
    assert config.model("m").family == "openai"


def test_family_is_optional() -> None:
    assert load_config(_raw(), check_filesystem=False).model("m").family is None


@pytest.mark.parametrize("bad", ["open ai", "", "a__b", 3])
def test_bad_family_names_the_field_and_rule(bad: Any) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(_raw(family=bad), check_filesystem=False)
    got = {(i.rule, i.path) for i in err.value.issues}
    assert got == {("V-04", "models[0].family")}
