"""Untrusted text made safe for the terminal.

Model replies and error messages, and every id in a run folder someone else may have
edited, are untrusted. Printed raw, a control sequence in them can retitle the window,
clear the screen or plant an OSC 8 link; printed through rich, ``[/x]`` in a model name is
read as markup (and a stray closing tag crashes the command). :func:`plain` drops control
characters (C0 but tab and newline, DEL, C1, bidirectional overrides); :func:`markup_safe`
also escapes rich markup; :func:`safe_tree` does it to every string in a structure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["markup_safe", "plain", "safe_tree"]

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def plain(text: str) -> str:
    """``text`` without control characters (tab and newline kept)."""
    return _CONTROL.sub("", text)


def markup_safe(text: str) -> str:
    """``text`` without control characters and with rich markup escaped."""
    from rich.markup import escape  # rich loads only for rich output: `plain` stays light

    return escape(plain(text))


def safe_tree(value: Any) -> Any:
    """A copy of ``value`` with :func:`markup_safe` applied to every string (keys too)."""
    if isinstance(value, str):
        return markup_safe(value)
    if isinstance(value, Mapping):
        return {safe_tree(k): safe_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [safe_tree(v) for v in value]
    return value
