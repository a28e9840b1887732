"""The embedded SmolLM2-135M with ``auto`` attributes and rubric: whatever it writes, the
template's placeholders are never stored as an ok attribute map or rubric; a map that keeps
echoing them fails with ``error_kind: quality``. About 15 s on two CPU cores."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from coeval.quality.placeholders import template_placeholders, text_leaves
from coeval.quality.text import normalise

CONFIG: dict[str, Any] = {
    "models": [{
        "name": "smollm2-greedy", "interface": "llamacpp", "roles": ["teacher", "student", "judge"],
        "parameters": {"model": "smollm2-135m", "temperature": 0.0, "max_tokens": 160, "repetition_penalty": 1.15},
        "role_parameters": {"student": {"max_tokens": 60}, "judge": {"max_tokens": 60}},
    }],
    "tasks": [{
        "name": "short_answer",
        "description": "Answer a short general-knowledge question correctly in one or two sentences.",
        "output_description": "A correct, direct answer of one or two sentences.",
        "target_attributes": "auto",
        "sampling": {"target": [1, 1], "nuance": [0, 0], "total": 2},
        "rubric": "auto",
        "evaluation_mode": "single",
    }],
    "experiment": {"id": "smol-auto", "storage_folder": "./runs", "seed": 0, "generation_retries": 2,
                   "phases": {"attribute_mapping": "New", "rubric_mapping": "New"}},
}


def _echoes(value: Any) -> list[str]:
    squashed = {p.replace(" ", "") for p in template_placeholders() if " " in p}
    return [s for s in text_leaves(value)
            if normalise(s) in template_placeholders() or any(p in normalise(s).replace(" ", "") for p in squashed)]


@pytest.mark.slow
def test_auto_maps_are_real_or_fail_as_quality(tmp_path: Path) -> None:
    (tmp_path / "auto.yaml").write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    done = subprocess.run([sys.executable, "-m", "coeval.cli.main", "run", "--config", "auto.yaml"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    run = tmp_path / "runs" / "smol-auto"
    outcomes = {}
    for folder, kind in (("phase1_attributes", "target_attrs"), ("phase2_rubric", "rubric")):
        stored = run / folder / f"short_answer.{kind}.json"
        proposal = json.loads((run / folder / f"short_answer.{kind}.smollm2-greedy.proposal.json").read_text())
        if proposal.get("status") == "ok":
            assert stored.is_file()
            assert _echoes(json.loads(stored.read_text())) == []
            assert _echoes(proposal["proposal"]) == []
            outcomes[kind] = "ok"
        else:
            assert proposal["error_kind"] == "quality", proposal
            assert "template_echo" in proposal["error"] or "quality" in proposal["error"]
            assert not stored.exists()
            outcomes[kind] = "quality"
    assert len(outcomes) == 2
