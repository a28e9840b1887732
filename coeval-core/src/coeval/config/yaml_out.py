"""Configs that CoEval writes for people to read and edit (``generate``, ``wizard``).

Mappings are always in block style, one key a line, so a rubric or an attribute map reads
like the hand-written configs in the docs instead of one long ``{...}`` line; only short
lists of plain values (``roles: [teacher, student]``) stay on one line.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["dump_config_yaml"]

#: a list of scalars whose flow form is longer than this is written one item a line
_FLOW_LIST_MAX = 80


class _ConfigDumper(yaml.SafeDumper):
    """SafeDumper with block mappings and one-line short scalar lists."""


def _represent_list(dumper: _ConfigDumper, data: Any) -> yaml.Node:
    scalars = all(isinstance(item, str | int | float | bool) or item is None for item in data)
    short = scalars and len(", ".join(map(str, data))) + 2 <= _FLOW_LIST_MAX and not any(
        isinstance(item, str) and ("\n" in item or ": " in item or item.strip() != item) for item in data
    )
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=short and bool(data))


def _represent_str(dumper: _ConfigDumper, data: str) -> yaml.Node:
    """Multi-line text (a prompt template, a long description) as a ``|`` block."""
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_str(data)


_ConfigDumper.add_representer(list, _represent_list)
_ConfigDumper.add_representer(tuple, _represent_list)
_ConfigDumper.add_representer(str, _represent_str)


def dump_config_yaml(data: Any) -> str:
    """``data`` as block-style YAML, keys in their given order."""
    return yaml.dump(
        data, Dumper=_ConfigDumper, sort_keys=False, allow_unicode=True, width=100, default_flow_style=False
    )
