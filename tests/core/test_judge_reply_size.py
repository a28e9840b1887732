"""The planned size of a judge's reply: what the judge prompt asks for, a score and a
one-sentence rationale per criterion. Estimates without sample calls (``coeval run``'s
pre-spend check, ``plan --estimate-samples 0``, ``describe``) price every judge call by it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from coeval.phase_ids import EVALUATION
from coeval.planning.cost.requests import expected_output_tokens
from coeval.planning.cost.tokens import estimate_tokens

from .pipeline_support import make_config, mock_model, task

#: A one-sentence rationale of the kind the judge prompt asks for.
WHY = "The answer names the right fact but adds a claim the question did not ask for."


def _reply(criteria: list[str], per_factor: bool) -> str:
    if per_factor:
        return json.dumps({"score": "Medium", "rationale": WHY})
    return json.dumps({"scores": {c: "Medium" for c in criteria}, "rationale": {c: WHY for c in criteria}})


@pytest.mark.parametrize("mode", ["single", "per_factor"])
@pytest.mark.parametrize("n", [1, 2, 5])
def test_a_judge_reply_is_planned_with_its_rationale(tmp_path: Path, mode: str, n: int) -> None:
    criteria = [f"criterion_{i}" for i in range(n)]
    rubric = {c: f"The answer meets {c}." for c in criteria}
    cfg = make_config(tmp_path, [mock_model("m")], [task(rubric=rubric, evaluation_mode=mode)])
    planned = expected_output_tokens(EVALUATION, cfg.tasks[0], cfg.models[0])
    asked = estimate_tokens(_reply(criteria, mode == "per_factor"))
    assert 0.8 * asked <= planned <= 1.5 * asked
