"""Records carry the version of their input: an answer the datapoint it answered, a
judgment the answer it scored. When an input is lost and made again, what was built on the
old one is made again too (never kept as if it belonged to the new one), and ``status``
flags such records, also in runs written before the versions were recorded."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from coeval.cli.status_cmd import collect_status
from coeval.storage.record_inputs import datapoint_version, response_version

from tests.core.pipeline_support import folder, lines, make_config, mock_model, records, run, task


def _one_model_run(tmp_path: Path, total: int) -> Any:
    config = make_config(tmp_path, [mock_model("a", seed=1)], [task(total=total)])
    assert run(config).exit_code == 0
    return config


def _truncate(path: Path, keep: int) -> None:
    """Keep the first ``keep`` lines; a second later, so what is made again is newer (a
    version is its text and its time, to the second: a record made again in the same second
    with the same words is the same record)."""
    time.sleep(1.1)
    kept = path.read_text().splitlines(keepends=True)
    path.write_text("".join(kept[:keep]))


def _judgments_follow_their_answers(config: Any) -> None:
    rf = folder(config)
    responses = records(rf, "response_collection")
    for ev in records(rf, "evaluation").values():
        resp = responses[ev["response_id"]]
        assert ev["response_hash"] == response_version(resp)
        assert ev["evaluated_at"] >= resp["generated_at"]


def test_a_truncated_answer_file_gets_its_judgments_made_again(tmp_path: Path) -> None:
    config = _one_model_run(tmp_path, total=100)
    rf = folder(config)
    (answers,) = rf.jsonl_files("response_collection")
    assert len(answers.read_text().splitlines()) == 100
    _truncate(answers, 10)

    status = collect_status(rf.root)
    assert status["stale_records"] == {"evaluation": 90}
    assert status["notes"][0].startswith("stale: 90 judgments score answers that are gone or were made again")

    judged_before = len(lines(rf, "evaluation"))
    result = run(config, continue_run=True)
    assert result.exit_code == 0
    assert result.phases["response_collection"].written == 90
    assert result.phases["evaluation"].written == 90  # every stale judgment is made again
    assert len(lines(rf, "evaluation")) == judged_before  # each stale line replaced by its new record
    _judgments_follow_their_answers(config)
    assert "stale_records" not in collect_status(rf.root)


def test_a_truncated_datapoint_file_gets_its_answers_and_judgments_made_again(tmp_path: Path) -> None:
    config = _one_model_run(tmp_path, total=6)
    rf = folder(config)
    (datapoints,) = rf.jsonl_files("data_generation")
    _truncate(datapoints, 2)
    assert collect_status(rf.root)["stale_records"] == {"response_collection": 4, "evaluation": 4}
    result = run(config, continue_run=True)
    assert result.exit_code == 0
    written = {name: r.written for name, r in result.phases.items()}
    assert written["data_generation"] == written["response_collection"] == written["evaluation"] == 4
    dps = records(rf, "data_generation")
    for resp in records(rf, "response_collection").values():
        assert resp["datapoint_hash"] == datapoint_version(dps[resp["datapoint_id"]])
    _judgments_follow_their_answers(config)


def _as_old_run(config: Any) -> None:
    """Rewrite the records as a run made before versions were recorded (an hour earlier)."""
    rf = folder(config)
    for path in rf.jsonl_files("data_generation") + rf.jsonl_files("response_collection") + rf.jsonl_files("evaluation"):
        out = []
        for rec in (json.loads(line) for line in path.read_text().splitlines()):
            rec.pop("datapoint_hash", None)
            rec.pop("response_hash", None)
            for key in ("generated_at", "evaluated_at"):
                if key in rec:
                    rec[key] = "2020-01-01T00:00:00Z"
            out.append(json.dumps(rec) + "\n")
        path.write_text("".join(out))


def test_an_old_run_is_judged_by_time(tmp_path: Path) -> None:
    config = _one_model_run(tmp_path, total=5)
    _as_old_run(config)
    rf = folder(config)
    assert "stale_records" not in collect_status(rf.root)
    (answers,) = rf.jsonl_files("response_collection")
    _truncate(answers, 2)
    assert collect_status(rf.root)["stale_records"] == {"evaluation": 3}
    assert run(config, continue_run=True).exit_code == 0
    evaluations = records(rf, "evaluation")
    remade = Counter("response_hash" in ev for ev in evaluations.values())
    assert remade == Counter({True: 3, False: 2})  # the 2 kept answers keep their judgments
    _judgments_follow_their_answers_or_old(config)


def _judgments_follow_their_answers_or_old(config: Any) -> None:
    rf = folder(config)
    responses = records(rf, "response_collection")
    for ev in records(rf, "evaluation").values():
        assert ev["evaluated_at"] >= responses[ev["response_id"]]["generated_at"]


def test_analyze_flags_stale_judgments_first(tmp_path: Path) -> None:
    from coeval_analysis import AnalysisOptions, analyze, load_run

    config = _one_model_run(tmp_path, total=5)
    _as_old_run(config)
    (answers,) = folder(config).jsonl_files("response_collection")
    _truncate(answers, 2)
    summary = analyze(load_run(folder(config).root), AnalysisOptions(n_boot=20)).summary
    first = summary["warnings"][0]
    assert first["kind"] == "stale_records" and first["counts"] == {"evaluation": 3}
    assert first["message"].startswith("stale: 3 judgments score answers that are gone or were made again")
