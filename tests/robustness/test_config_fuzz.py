"""Property-based fuzzing of config loading: whatever the input, loading either gives a
config or raises :class:`ConfigError` with well-formed issues -- nothing else escapes.

Two generators: mutations of a valid config (a random node replaced by a random value, a
key deleted or added, up to three times: near-valid configs reach deep into the rules),
and YAML text with random punctuation spliced in (the parser and the line tracking).
"""

from __future__ import annotations

import copy
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from coeval.config import Config, ConfigError
from coeval.planning import plan_experiment
from coeval.plugins.config_loading import load_config
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ._support import BASE

#: thousands of mutated configs: a minute on two busy cores
pytestmark = pytest.mark.slow

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**18), max_value=10**18),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["auto", "complete", "extend", "all", "New", "Keep", "Extend", "Model", "mock", "openai",
                     "teacher", "student", "judge", "single", "per_factor", "{x}", "", "a__b", "../x"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=8), st.sampled_from(["name", "roles", "total", "id"])),
                        children, max_size=4),
    ),
    max_leaves=12,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def mutated_configs(draw: st.DrawFn) -> dict[str, Any]:
    config: Any = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = _paths(config)
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        if not path:
            if action == "replace":
                config = draw(VALUES)
            continue
        parent = config
        for part in path[:-1]:
            parent = parent[part]
        last = path[-1]
        if action == "replace":
            parent[last] = draw(VALUES)
        elif action == "delete":
            del parent[last]
        elif isinstance(parent[last], dict):
            parent[last][draw(st.text(max_size=10))] = draw(VALUES)
        elif isinstance(parent[last], list):
            parent[last].append(draw(VALUES))
    return config if isinstance(config, dict) else {"models": config}


def _check(load: Any) -> None:
    try:
        config = load()
    except ConfigError as exc:
        assert exc.issues, "a ConfigError must say what is wrong"
        for issue in exc.issues:
            assert issue.rule.startswith("V-") and issue.message
            issue.format()
        str(exc)
        event(f"refused: {exc.issues[0].rule}")
    else:
        assert isinstance(config, Config)
        plan_experiment(config)  # a config that loads also plans
        event("loaded")


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_configs())
def test_loading_mutated_configs_never_raises_anything_but_config_error(raw: dict[str, Any]) -> None:
    _check(lambda: load_config(raw, check_filesystem=False))


PUNCTUATION = st.text(alphabet=":-[]{},&*!|>'\"#%@`? \n\t\\", min_size=1, max_size=6)


@st.composite
def corrupted_yaml(draw: st.DrawFn) -> str:
    text = yaml.safe_dump(draw(mutated_configs()), sort_keys=False, allow_unicode=True)
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        at = draw(st.integers(min_value=0, max_value=len(text)))
        text = text[:at] + draw(PUNCTUATION) + text[at:]
    return text


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corrupted_yaml())
def test_loading_corrupted_yaml_files_never_raises_anything_but_config_error(text: str) -> None:
    fd, name = tempfile.mkstemp(suffix=".yaml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass") as fh:
            fh.write(text)
        _check(lambda: load_config(Path(name), check_filesystem=False))
    finally:
        os.unlink(name)
