"""How much of its prompts an engine that keeps its last prompt actually reads.

A local engine such as llama.cpp keeps the state of the prompt it read last; a new prompt
that begins the same way reads only the rest. The phases send their calls in an order that
makes much of that sharing: every call of a phase starts with the same instructions, the
students sharing one engine are sent the same datapoint one after another (the second
reads nothing new), and the judges of one answer likewise, while the answers to one
datapoint follow each other (the input and the reference are shared). On the quick start
the engine read about a third of the prompt tokens it was sent.

:func:`read_share` renders a phase's prompt next to the prompt that follows it in the
run's order (the pipeline's own templates, with stand-in texts that differ where the
items differ) and counts the tokens the two do not share.
"""

from __future__ import annotations

import attrs

from coeval.config.model import ModelConfig, TaskConfig
from coeval.phase_ids import DATA_GENERATION, EVALUATION, RESPONSE_COLLECTION
from coeval.planning.cost.requests import RequestBuilder, TaskTexts
from coeval.planning.cost.tokens import estimate_tokens, filler_text

__all__ = ["read_share"]


def _other(text: str) -> str:
    """Stand-in text of the same length that differs from ``text`` at its first word."""
    return filler_text(estimate_tokens(text), start=1) if text else text


def _shared_chars(a: str, b: str) -> int:
    """Length of the text ``a`` and ``b`` begin with."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _unshared(builder: RequestBuilder, phase: str, task: TaskConfig, model: ModelConfig,
              first: TaskTexts, then: TaskTexts, seq: int = 1) -> tuple[float, float]:
    """Tokens of ``first``'s prompts, and of those not shared with ``then``'s (the prompt
    that follows in the run's order); ``seq`` is the data-generation slot of the second."""
    a = builder.requests(phase, task, model, first)
    b = builder.requests(phase, task, model, then, seq=seq)
    whole = sum(estimate_tokens(r.prompt) for r in a)
    shared = sum(estimate_tokens(x.prompt[:_shared_chars(x.prompt, y.prompt)]) for x, y in zip(a, b, strict=False))
    return float(whole), float(max(whole - shared, len(a)))  # a prompt reads at least its last token


def read_share(builder: RequestBuilder, phase: str, task: TaskConfig, model: ModelConfig, texts: TaskTexts,
               *, same_engine: int, students: int) -> float:
    """Share of the prompt tokens of ``model``'s calls in ``phase`` the engine reads, the
    rest coming from its last prompt. ``same_engine``: students or judges on this engine
    (they are sent the same prompt one after another); ``students``: answers to one
    datapoint (the judges read them one after another)."""
    if phase == DATA_GENERATION:  # each call a new draw of attributes (teachers never send the same)
        whole, unshared = _unshared(builder, phase, task, model, texts, texts, seq=2)
        same_engine = 1
    elif phase == RESPONSE_COLLECTION:  # the next datapoint
        whole, unshared = _unshared(builder, phase, task, model, texts,
                                    attrs.evolve(texts, datapoint_prompt=_other(texts.datapoint_prompt)))
    elif phase == EVALUATION:  # another answer to the same datapoint, then the next datapoint's
        other_answer = attrs.evolve(texts, response=_other(texts.response))
        next_item = attrs.evolve(other_answer, datapoint_prompt=_other(texts.datapoint_prompt),
                                 reference=_other(texts.reference))
        whole, same_item = _unshared(builder, phase, task, model, texts, other_answer)
        _, new_item = _unshared(builder, phase, task, model, texts, next_item)
        n = max(1, students)
        unshared = ((n - 1) * same_item + new_item) / n
    else:
        return 1.0
    if whole <= 0:
        return 1.0
    return min(1.0, unshared / whole / max(1, same_engine))
