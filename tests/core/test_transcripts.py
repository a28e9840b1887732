"""Every call record of phases 1-5 keeps its transcript: the prompt sent, the raw reply,
latency, finish reason and cost; failed ones also every attempt's error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from coeval.cli.main import cli

_CONFIG: dict[str, Any] = {
    "models": [
        {"name": "mock-a", "interface": "mock", "parameters": {"seed": 1}, "roles": ["teacher", "student", "judge"]},
        # seed 5: of its three judge items, two get two unreadable replies (a retry draws a new
        # mock seed) and one a cut-off reply that can still be read
        {"name": "mock-bad", "interface": "mock", "parameters": {"seed": 5, "malformed_rate": 1.0},
         "roles": ["judge"]},
    ],
    "tasks": [{
        "name": "qa",
        "description": "Answer a general-knowledge question in one sentence.",
        "output_description": "One correct, complete sentence.",
        "target_attributes": "auto",
        "nuanced_attributes": "auto",
        "rubric": "auto",
        "sampling": {"target": [1, 1], "nuance": [1, 1], "total": 3},
        "evaluation_mode": "single",
    }],
    "experiment": {"id": "transcripts", "storage_folder": "./runs", "generation_retries": 1},
}


def _records(run: Path) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for phase in ("phase1_attributes", "phase2_rubric"):
        out[phase] = [json.loads(p.read_text()) for p in sorted((run / phase).glob("*.proposal.json"))]
    for phase in ("phase3_datapoints", "phase4_responses", "phase5_evaluations"):
        out[phase] = [json.loads(line) for p in sorted((run / phase).glob("*.jsonl")) for line in p.open()]
    return out


def test_mock_run_records_raw_latency_and_cost_on_every_phase(work: Path) -> None:
    (work / "exp.yaml").write_text(yaml.safe_dump(_CONFIG), encoding="utf-8")
    result = CliRunner().invoke(cli, ["run", "--config", "exp.yaml"])
    assert result.exit_code in (0, 1), result.output
    records = _records(work / "runs" / "transcripts")
    assert all(records.values()), {k: len(v) for k, v in records.items()}
    for phase, recs in records.items():
        for rec in recs:
            assert isinstance(rec["raw"], str) and rec["raw"], (phase, rec)
            assert isinstance(rec["latency_ms"], float) and rec["latency_ms"] >= 0.0, (phase, rec)
            assert rec["cost_usd"] == 0.0, (phase, rec)
            assert rec["finish_reason"] == "stop"
            assert rec["request"]["prompt"].strip()
    good = [r for r in records["phase5_evaluations"] if r["judge_model_id"] == "mock-a"]
    assert good and all(r["status"] == "ok" for r in good)
    assert all(json.loads(r["raw"])["scores"] == r["scores"] for r in good)  # raw is the reply before parsing
    assert all(set(r["rationale"]) == set(r["scores"]) for r in good)
    # mock-bad's replies are all malformed; a cut-off JSON reply can still be read, the rest fail
    bad = [r for r in records["phase5_evaluations"] if r["judge_model_id"] == "mock-bad" and r["status"] == "failed"]
    assert bad and all(r["error_kind"] == "unparseable" for r in bad)
    for rec in bad:
        assert rec["attempts"] == 2 and len(rec["attempt_errors"]) == 2  # one try plus one retry
        assert all(e.startswith("unparseable: ") for e in rec["attempt_errors"])
        assert rec["scores"] == {} and rec["rationale"] == {}
