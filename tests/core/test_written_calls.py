"""The recount of what a folder's records paid (:func:`coeval.run.ledger.written_calls`,
run when a killed process left ``meta.json`` short) reads a file of ok records in our
layout by regular expression, and any other file by parsing: both give the same counts."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from coeval.run.ledger import _CALLER_FIELD, written_calls
from coeval.storage.run_folder import RunFolder, iter_jsonl

from .pipeline_support import folder, make_config, mock_model, run, task


def _parsed(run_folder: RunFolder) -> tuple[Counter[str], dict[str, float]]:
    calls: Counter[str] = Counter()
    spend: defaultdict[str, float] = defaultdict(float)
    for phase, field in _CALLER_FIELD.items():
        for path in run_folder.jsonl_files(phase):
            for rec in iter_jsonl(path):
                if isinstance(rec.get(field), str):
                    calls[rec[field]] += int(rec.get("attempts") or 0)
                    spend[rec[field]] += float(rec.get("cost_usd") or 0.0)
    return calls, dict(spend)


def test_the_fast_recount_equals_the_parsed_one(tmp_path: Any) -> None:
    models = [mock_model("a", latency_ms=0, cost_per_call_usd=0.001), mock_model("b", latency_ms=0)]
    config = make_config(tmp_path, models, [task(total=6)])
    assert run(config).exit_code == 0
    rf = folder(config)
    # one file in another layout: a failed line and a cut line (parsed line by line)
    path = rf.jsonl_files("evaluation")[0]
    first = json.loads(path.read_text().splitlines()[0])
    failed = {**first, "status": "failed", "attempts": 3, "cost_usd": 0.5, "error": "x"}
    with path.open("a") as fh:
        fh.write(json.dumps(failed) + "\n" + '{"id": "cut')
    calls, spend = written_calls(rf)
    want_calls, want_spend = _parsed(rf)
    assert calls == want_calls and sum(calls.values()) > 0
    assert set(spend) <= set(want_spend)
    for name, usd in want_spend.items():
        assert abs(spend.get(name, 0.0) - usd) < 1e-9
