"""``--allow-drift`` records only changes the run applies: a static rubric edited in the
config is not used by a resumed run (it keeps its own), so it is neither recorded as drift
nor written into the run's config.yaml or settings."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from coeval.cli.main import cli

from tests.core.pipeline_support import mock_model, task

RUN = Path("runs") / "exp"
BASE: dict[str, Any] = {
    "models": [mock_model("a", seed=1)],
    "tasks": [task(total=2)],
    "experiment": {"id": "exp", "storage_folder": "runs", "probe_mode": "disable"},
}


def test_a_rubric_edit_let_through_is_not_recorded_as_applied(work: Path) -> None:
    path = work / "c.yaml"
    path.write_text(yaml.safe_dump(BASE))
    assert CliRunner().invoke(cli, ["run", "c.yaml"]).exit_code == 0
    settings_before = json.loads((RUN / "meta.json").read_text())["settings"]
    raw = copy.deepcopy(BASE)
    raw["tasks"][0]["rubric"]["correctness"] = "The answer is right and sourced."
    raw["tasks"][0]["sampling"]["total"] = 3  # some judging happens, with the kept rubric
    path.write_text(yaml.safe_dump(raw))
    result = CliRunner().invoke(cli, ["run", "c.yaml", "--continue", "--allow-drift"])
    assert result.exit_code == 0, result.output
    assert "not applied, the run keeps its own rubric" in result.output
    meta = json.loads((RUN / "meta.json").read_text())
    assert meta.get("drift", []) == []
    assert meta["settings"]["tasks"] == settings_before["tasks"]
    assert "sourced" not in (RUN / "config.yaml").read_text()
    judged = [json.loads(line) for p in (RUN / "phase5_evaluations").glob("*.jsonl") for line in p.read_text().splitlines()]
    assert all("sourced" not in r["request"]["prompt"] for r in judged)
