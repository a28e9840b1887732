"""Mock students that differ only by their documented ``quality`` parameter are ranked in
that order by the headline of ``coeval analyze`` on a real ``coeval run`` of the mock."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner
from coeval.cli.main import cli

QUALITY = {"stu-best": 0.95, "stu-good": 0.7, "stu-fair": 0.45, "stu-poor": 0.2}


def test_students_are_ranked_by_their_mock_quality(tmp_path: Path) -> None:
    models = [{"name": name, "interface": "mock", "roles": ["student"], "parameters": {"seed": 1, "quality": q}}
              for name, q in QUALITY.items()]
    models += [{"name": f"judge-{i}", "interface": "mock", "roles": ["teacher", "judge"],
                "parameters": {"seed": i, "quality": 0.9}} for i in (1, 2)]
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({
        "models": models,
        "tasks": [{"name": "explain", "description": "Explain a concept from physics to a student.",
                   "output_description": "Two or three clear paragraphs.",
                   "target_attributes": {"topic": ["force", "energy", "waves"]},
                   "rubric": {"accuracy": "Correct.", "clarity": "Clear."}, "sampling": {"total": 15}}],
        "experiment": {"id": "quality", "storage_folder": str(tmp_path / "runs")},
    }))
    ran = CliRunner().invoke(cli, ["run", "--config", str(config)])
    assert ran.exit_code == 0, ran.output
    out = tmp_path / "out"
    analyzed = CliRunner().invoke(cli, ["analyze", "--run", str(tmp_path / "runs" / "quality"), "--out", str(out),
                                        "--bootstrap", "100"])
    assert analyzed.exit_code == 0, analyzed.output
    students = json.loads((out / "summary.json").read_text())["students"]
    assert sorted(students, key=lambda s: students[s]["robust_rank"]) == list(QUALITY)
