"""Lowering ``sampling.total`` in the config of a finished run is drift (issue 23, item 7):
``run --continue`` refuses with exit 2 naming the change; with ``--allow-drift`` it says which
datapoints are left out, and then ``coeval status`` and ``coeval analyze`` count the same
datapoints, answers and judgments. Ingested datapoints are never left out by the total."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli

from tests.core.pipeline_support import mock_model, task

#: whole runs on the mock, then status and analyze on them (several seconds each)
pytestmark = pytest.mark.slow

BASE: dict[str, Any] = {
    "models": [mock_model("a", seed=1), mock_model("b", seed=2)],
    "tasks": [task(total=3)],
    "experiment": {"id": "exp", "storage_folder": "runs", "probe_mode": "disable"},
}


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("COEVAL_KEYS_FILE", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def _cli(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def _lower_total(work: Path, total: int, *extra: str) -> Any:
    raw = copy.deepcopy(BASE)
    raw["tasks"][0]["sampling"]["total"] = total
    (work / "c.yaml").write_text(yaml.safe_dump(raw))
    return _cli("run", "c.yaml", "--continue", *extra)


def _status_ok(run: Path) -> dict[str, int]:
    result = _cli("status", "--run", str(run), "--json")
    assert result.exit_code == 0, result.output
    return {p["phase"]: p["total"]["ok"] for p in json.loads(result.output)["phases"]}


def _analysed(work: Path, run: Path) -> dict[str, Any]:
    out = work / "out"
    result = _cli("analyze", "--run", str(run), "--out", str(out), "--bootstrap", "0")
    assert result.exit_code == 0, result.output
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return summary


def test_lowering_the_total_leaves_the_same_datapoints_out_of_status_and_analyze(work: Path) -> None:
    (work / "c.yaml").write_text(yaml.safe_dump(BASE))
    assert _cli("run", "c.yaml").exit_code == 0
    run = work / "runs" / "exp"

    refused = _lower_total(work, 2)
    assert refused.exit_code == 2, refused.output
    assert "task qa: sampling.total was '3 datapoints of a'" in refused.output
    assert "task qa: sampling.total was '3 datapoints of b'" in refused.output

    allowed = _lower_total(work, 2, "--allow-drift")
    assert allowed.exit_code == 0, allowed.output
    for teacher in ("a", "b"):
        assert (f"1 datapoints of {teacher} above it (qa__{teacher}__00003) stay on disk with their answers "
                "and judgments, left out of status and analysis") in allowed.output

    # 2 teachers x 2 datapoints; x 2 students; x 2 judges: the third datapoint of each
    # teacher stays on disk and counts nowhere
    assert _status_ok(run) == {"attribute_mapping": 2, "rubric_mapping": 1, "data_generation": 4,
                               "response_collection": 8, "evaluation": 16}
    summary = _analysed(work, run)
    quality = summary["data_quality"]
    assert summary["n_items"] == quality["datapoints"]["n_records"] == 4
    assert summary["n_responses_scored"] == quality["responses"]["n_records"] == 8
    assert summary["n_records"] - quality["n_left_out_by_config"] == 24 - 8 == 16  # read, less left out
    assert quality["left_out_datapoints"] == {"qa": {"a": 1, "b": 1}}
    left = [w["message"] for w in summary["warnings"] if w["kind"] == "left_out_by_config"]
    assert left == ["qa: 2 datapoints above sampling.total in the run's config.yaml stay on disk and are left "
                    "out of the analysis, with their answers and judgments (as coeval status leaves them out)"]

    # the same run, continued again without --allow-drift: the shrink was allowed once
    again = _cli("run", "c.yaml", "--continue")
    assert again.exit_code == 0, again.output
    assert _status_ok(run)["evaluation"] == 16

    # raising the total back brings them in again, with nothing made twice
    assert _lower_total(work, 3).exit_code == 0
    assert _status_ok(run)["evaluation"] == 24
    summary = _analysed(work, run)
    assert (summary["n_items"], summary["n_records"], summary["data_quality"]["n_left_out_by_config"]) == (6, 24, 0)


def test_ingested_datapoints_are_never_left_out_by_a_lower_total(work: Path) -> None:
    (work / "c.yaml").write_text(yaml.safe_dump(BASE))
    assert _cli("run", "c.yaml").exit_code == 0
    run = work / "runs" / "exp"
    rows = work / "rows.jsonl"
    rows.write_text("".join(json.dumps({"q": f"question {n}?", "a": str(n)}) + "\n" for n in range(1, 6)))
    ingested = _cli("ingest", "--run", str(run), "--file", str(rows), "--task-name", "mine", "--prompt-field", "q",
                    "--reference-field", "a")
    assert ingested.exit_code == 0, ingested.output
    assert _lower_total(work, 1, "--allow-drift", "--yes").exit_code == 0
    status = _status_ok(run)
    # qa: 2 teachers x 1 datapoint; mine: all 5 rows (ids ..__00001 to ..__00005, above 1)
    assert status["response_collection"] == 2 * (2 * 1 + 5)
    summary = _analysed(work, run)
    assert summary["data_quality"]["datapoints"]["n_records"] == 2 * 1 + 5
    assert summary["data_quality"]["left_out_datapoints"] == {"qa": {"a": 2, "b": 2}}
