"""The retry of a rejected reply tells the model what was wrong with the last one."""

from __future__ import annotations

import attrs

from coeval.interfaces.base import GenerateRequest

__all__ = ["with_correction"]


def with_correction(request: GenerateRequest, reason: str, item_key: str) -> GenerateRequest:
    """``request`` with a note after the prompt saying why the previous reply was rejected.

    The note names the item, so two items that share a prompt (the same attribute draw)
    do not get the same retry prompt, and a deterministic model does not repeat itself."""
    note = f"\n\nYour previous reply (item {item_key}) was rejected: {reason}\nReply again, fixing this."
    return attrs.evolve(request, prompt=request.prompt + note)
