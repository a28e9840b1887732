"""What an item check sees and returns, and how it is registered.

A check is ``check(candidate, context) -> str | None``: ``None`` accepts, a string is the
reason for rejecting (shown to the model as a correction and stored on a failed record).
Plugins add checks through the ``register_item_checks`` hook::

    @hookimpl
    def register_item_checks(register):
        register("no_lorem", my_check, kinds=("datapoint",), options={"min_words": 3})
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import attrs

from coeval.config.model import TaskConfig

__all__ = ["DATAPOINT", "MAP_KINDS", "Candidate", "CheckContext", "ItemCheck", "NearDuplicateIndex"]

DATAPOINT = "datapoint"
#: Phase 1 and 2 artifacts a teacher proposes.
MAP_KINDS = ("target", "nuanced", "rubric")


@attrs.frozen
class Candidate:
    """One parsed teacher reply waiting to be accepted."""

    kind: str  # datapoint | target | nuanced | rubric
    task: TaskConfig
    teacher: str
    value: Mapping[str, Any]
    #: Entries a ``complete``/``auto`` map with a seed, or a ``rubric: extend``, had to keep.
    seeds: tuple[Mapping[str, Any], ...] = ()
    #: The reply's JSON as the teacher wrote it (None when unknown): the parser keeps only the
    #: keys it knows, and a key that copies the instructions' example is junk all the same.
    reply: Any = None


class NearDuplicateIndex(Protocol):
    def most_similar(self, task: str, teacher: str, text: str, at_least: float = 0.0) -> float:
        """The highest similarity of ``text`` to an accepted prompt of ``(task, teacher)``:
        exact when it is ``at_least`` or more, below ``at_least`` otherwise."""
        ...


@attrs.frozen
class CheckContext:
    """What a check may consult besides the candidate."""

    options: Mapping[str, Any]
    placeholders: frozenset[str]
    index: NearDuplicateIndex
    #: the templates' example values (not their keys): what a reply's key must not be
    key_placeholders: frozenset[str] = frozenset()


ItemCheck = Callable[[Candidate, CheckContext], "str | None"]
