"""The two-item task the secrets tests run: small enough for a run in seconds, with a teacher,
a student and a judge call each, so a secret has every record kind to leak into."""

from __future__ import annotations

from typing import Any


def capitals_task() -> dict[str, Any]:
    return {
        "name": "capitals",
        "description": "Answer a question about the capital city of a country.",
        "output_description": "One sentence naming the capital.",
        "target_attributes": {"continent": ["europe", "asia"]},
        "sampling": {"target": [1, 1], "nuance": [0, 0], "total": 2},
        "rubric": {"correctness": "The capital named is right."},
    }
