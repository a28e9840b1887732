"""``coeval status`` per-model call figures, read from records."""

from __future__ import annotations

import json
from pathlib import Path

from coeval.planning.call_figures import call_figures


class _Run:
    def __init__(self, files: dict[str, list[Path]]) -> None:
        self.files = files

    def jsonl_files(self, phase: str) -> list[Path]:
        return self.files.get(phase, [])


def test_figures_per_model_with_latency_percentiles_and_legacy_records(tmp_path: Path) -> None:
    evals = tmp_path / "e.jsonl"
    rows = [{"id": f"e{i}", "judge_model_id": "judge", "attempts": 1, "latency_ms": float(10 * i), "cost_usd": 0.001,
             "usage": {"input_tokens": 100, "output_tokens": 5}, "tokens_per_s": 40.0 + i} for i in range(1, 21)]
    rows.append({"id": "old", "judge_model_id": "judge", "attempts": 2, "usage": {"input_tokens": 7, "output_tokens": 1}})
    evals.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{not json\n")
    responses = tmp_path / "r.jsonl"
    responses.write_text(json.dumps({"id": "r", "student_model_id": "student", "attempts": 1,
                                     "usage": {"input_tokens": 3, "output_tokens": 4}}) + "\n")
    figures = call_figures(_Run({"evaluation": [evals], "response_collection": [responses]}))
    assert figures["judge"] == {"calls": 22, "input_tokens": 2007, "output_tokens": 101, "cost_usd": 0.02,
                                "latency_p50_ms": 100.0, "latency_p95_ms": 190.0, "tokens_per_s": 50.5}
    assert figures["student"] == {"calls": 1, "input_tokens": 3, "output_tokens": 4, "cost_usd": 0.0,
                                  "latency_p50_ms": None, "latency_p95_ms": None, "tokens_per_s": None}
