"""Judge faults a ``mock`` judge can play, so a design can be rehearsed for free.

``parameters: {judge: {noise: 0.2, bias: {gpt: 0.1}, flat: High}}`` on a mock judge:

``noise`` (0..1, 0)
    Standard deviation of Gaussian noise added to the answer quality the judge perceives
    (on the 0..1 scale its levels are cut from), drawn per (judge, prompt, factor).
``bias`` (mapping of student or family name -> shift in -1..1)
    Added to the perceived quality of answers written by that student: a key matches a mock
    student's name, its ``family``, or a prefix of its name (``gpt`` matches ``gpt-4o-mini``).
``flat`` (``High`` / ``Medium`` / ``Low``)
    Gives that one level to every answer, whatever its quality (a judge that says nothing).

Mock students sign their free-text answers (:func:`author_mark`) and mock judges read the
signature back, the same way they read an answer's quality from its sentences.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from statistics import NormalDist
from typing import Any

import attrs

__all__ = ["JUDGE_FAULT_KEYS", "JudgeFaults", "author_mark", "author_of", "judge_faults", "unsigned"]

JUDGE_FAULT_KEYS = ("noise", "bias", "flat")
_LEVELS = ("high", "medium", "low")
_AUTHOR = re.compile(r" ?\(Answered by mock model ([^,()\s]+)(?:, family ([^,()\s]+))?\.\)")
_NORMAL = NormalDist()


class JudgeFaultError(ValueError):
    """``parameters.judge`` of a mock model is malformed (message names the field)."""


@attrs.frozen
class JudgeFaults:
    """How a mock judge departs from reading an answer's quality faithfully."""

    noise: float = 0.0
    bias: Mapping[str, float] = attrs.field(factory=dict)
    flat: str | None = None  # lower-cased level

    def perceive(self, quality: float, author: tuple[str, str | None] | None, draw: float) -> float:
        """The quality this judge sees: ``quality`` shifted by its bias for the author and by
        noise (``draw`` is a uniform number in (0, 1) fixed per judge, prompt and factor)."""
        level = quality + self.shift_for(author)
        if self.noise > 0:
            level += self.noise * _NORMAL.inv_cdf(min(max(draw, 1e-12), 1 - 1e-12))
        return level

    def shift_for(self, author: tuple[str, str | None] | None) -> float:
        """The bias toward ``author`` (name, family): its own key first, then its family's,
        then the longest key its name starts with."""
        if author is None or not self.bias:
            return 0.0
        name, family = author
        lowered = {k.lower(): v for k, v in self.bias.items()}
        if name.lower() in lowered:
            return lowered[name.lower()]
        if family is not None and family.lower() in lowered:
            return lowered[family.lower()]
        prefixes = [k for k in lowered if name.lower().startswith(k)]
        return lowered[max(prefixes, key=len)] if prefixes else 0.0


def judge_faults(params: Mapping[str, Any], model: str) -> JudgeFaults | None:
    """The faults ``params['judge']`` asks for (None when absent), or :class:`JudgeFaultError`."""
    raw = params.get("judge")
    if raw is None:
        return None
    where = f"model {model!r}: mock parameter 'judge"
    if not isinstance(raw, Mapping):
        raise JudgeFaultError(f"{where}' must be a mapping of noise, bias and flat, got {raw!r}")
    for key in raw:
        if key not in JUDGE_FAULT_KEYS:
            raise JudgeFaultError(f"{where}.{key}' is not a judge fault (known: {', '.join(JUDGE_FAULT_KEYS)})")
    noise = raw.get("noise", 0.0)
    if isinstance(noise, bool) or not isinstance(noise, int | float) or not 0 <= noise <= 1:
        raise JudgeFaultError(f"{where}.noise' must be a number from 0 to 1, got {noise!r}")
    bias = raw.get("bias") or {}
    if not isinstance(bias, Mapping):
        raise JudgeFaultError(f"{where}.bias' must map student or family names to shifts, got {bias!r}")
    for name, shift in bias.items():
        if isinstance(shift, bool) or not isinstance(shift, int | float) or not -1 <= shift <= 1:
            raise JudgeFaultError(f"{where}.bias.{name}' must be a number from -1 to 1, got {shift!r}")
    flat = raw.get("flat")
    if flat is not None and (not isinstance(flat, str) or flat.lower() not in _LEVELS):
        raise JudgeFaultError(f"{where}.flat' must be High, Medium or Low, got {flat!r}")
    return JudgeFaults(float(noise), {str(k): float(v) for k, v in bias.items()},
                       flat.lower() if isinstance(flat, str) else None)


def author_mark(name: str, family: str | None) -> str:
    """The signature a mock student puts at the end of a free-text answer."""
    return f"(Answered by mock model {name}, family {family}.)" if family else f"(Answered by mock model {name}.)"


def author_of(prompt: str) -> tuple[str, str | None] | None:
    """(name, family) of the first mock student's answer quoted in ``prompt``, if any."""
    found = _AUTHOR.search(prompt)
    return (found.group(1), found.group(2)) if found else None


def unsigned(prompt: str) -> str:
    """``prompt`` without mock signatures: the mock keys its dice on this, so signing answers
    changed no grade or fault that a run without a judge design draws."""
    return _AUTHOR.sub("", prompt) if "(Answered by mock model " in prompt else prompt
