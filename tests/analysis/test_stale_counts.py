"""``coeval analyze`` counts stale records from the judgments its loader read, not by
parsing phase 5 again: the counts must be the core's own (``coeval status``) whatever the
records hold, legacy ones without a status included."""

from __future__ import annotations

import json
from pathlib import Path

from coeval.storage.record_inputs import stale_records
from coeval.storage.run_folder import RunFolder
from coeval_analysis import load_run
from coeval_analysis.warnings.stale import stale_warnings

from tests.core.pipeline_support import folder, make_config, mock_model, run, task


def _edit(path: Path, edits: dict[int, dict[str, object]], drop: dict[int, tuple[str, ...]], repeat: int) -> None:
    """Line ``i`` updated with ``edits[i]`` and without the fields ``drop[i]``; line
    ``repeat`` written again at the end (its id's last record wins)."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for i, changes in edits.items():
        rows[i].update(changes)
    for i, fields in drop.items():
        for name in fields:
            rows[i].pop(name, None)
    again = dict(rows[repeat], status="failed")
    path.write_text("".join(json.dumps(r) + "\n" for r in [*rows, again]))


def test_loaded_stale_counts_are_the_cores_own(tmp_path: Path) -> None:
    config = make_config(tmp_path, [mock_model("a", seed=1), mock_model("b", seed=2)], [task(total=12)])
    assert run(config).exit_code == 0
    rf = folder(config)
    answers = rf.jsonl_files("response_collection")[0]  # judgments of the answers cut off are stale
    first, *rest = [json.loads(line) for line in answers.read_text().splitlines()[:3]]
    first["response"] += " (edited)"  # and those of an answer whose text changed: by its hash alone
    rest[1]["generated_at"] = "2999-01-01T00:00:00Z"  # and, without a hash, those judged before it was made
    answers.write_text("".join(json.dumps(r) + "\n" for r in [first, *rest]))

    datapoints = rf.jsonl_files("data_generation")[0]  # answers to a datapoint made again are stale
    dp_rows = [json.loads(line) for line in datapoints.read_text().splitlines()]
    dp_rows[-1]["prompt"] += " (made again)"
    datapoints.write_text("".join(json.dumps(r) + "\n" for r in dp_rows))

    judgments = sorted(rf.jsonl_files("evaluation"))[0]
    _edit(judgments,
          edits={3: {"scores": {}}, 4: {"status": "partial"}, 5: {"scores": {}}, 8: {"id": ""},
                 10: {"evaluated_at": "2000-01-01T00:00:00Z"}},
          drop={3: ("status",), 6: ("status", "response_hash"), 5: ("status", "response_hash"),
                9: ("response_id",), 10: ("response_hash",)},
          repeat=7)  # fmt: skip
    for path in rf.jsonl_files("evaluation"):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        for row in rows:
            if row.get("response_id") == rest[1]["id"]:
                row.pop("response_hash", None)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    expected = stale_records(RunFolder(rf.root))
    assert expected["evaluation"] > 0 and expected["response_collection"] > 0  # of each kind above

    data = load_run(rf.root)
    assert data.stale == expected
    warning = stale_warnings(data)[0]
    assert warning["counts"] == dict(expected)
