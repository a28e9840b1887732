"""A teacher behind the real OpenAI SDK that answers 30% of its calls with junk (the fake
server's ``junk_share``): nothing junk is kept, every item exists after the retries, and
the rejections are counted in meta.json and ``coeval status``."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval.plugins.config_loading import load_config
from coeval.quality.placeholders import template_placeholders
from coeval.quality.text import normalise
from coeval.run.options import RunOptions
from coeval.run.runner import run_experiment
from coeval.storage.run_folder import RunFolder
from coeval_testing.fake_server import FakeServer

warnings.filterwarnings("ignore", category=DeprecationWarning)

TOTAL = 24


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeServer]:
    with FakeServer() as server:
        yield server


def _config(tmp_path: Path, url: str) -> Path:
    keys = tmp_path / "keys.yaml"
    keys.write_text(yaml.safe_dump({"providers": {"openai": "sk-junk-test-key"}}))
    config: dict[str, Any] = {
        "models": [
            {"name": "teacher", "interface": "openai", "roles": ["teacher"],
             "parameters": {"model": "gpt-4o-mini", "base_url": f"{url}/v1", "max_tokens": 200}},
            {"name": "worker", "interface": "mock", "roles": ["student", "judge"]},
        ],
        "tasks": [{
            "name": "capitals",
            "description": "Answer a question about the capital city of a country.",
            "output_description": "One sentence naming the capital.",
            "target_attributes": "auto",
            "nuanced_attributes": {"tone": ["plain", "curious"]},
            "sampling": {"target": [1, 1], "nuance": [1, 1], "total": TOTAL},
            "rubric": "auto",
            "evaluation_mode": "single",
        }],
        "experiment": {"id": "junk", "storage_folder": str(tmp_path / "runs"), "probe_mode": "disable",
                       "generation_retries": 6},
    }
    path = tmp_path / "junk.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.mark.slow
def test_junk_teacher_replies_are_rejected_regenerated_and_counted(fake: FakeServer, tmp_path: Path) -> None:
    fake.reset()
    fake.state.configure(junk_share=0.3)
    path = _config(tmp_path, fake.url)
    config = load_config(path, keys_file=str(tmp_path / "keys.yaml"))
    result = run_experiment(config, RunOptions(keys_file=str(tmp_path / "keys.yaml"), progress=False))
    fake.reset()
    assert result.exit_code == 0, result.message
    run = RunFolder(result.run_folder)
    datapoints = list(run.iter_records("data_generation"))
    # every item exists after the retries, and all are ok
    assert len(datapoints) == TOTAL
    assert all(r["status"] == "ok" for r in datapoints)
    # no junk kept: every reference has words and no bracket fragment, no two prompts equal
    for r in datapoints:
        ref = r["reference_response"].strip()
        assert any(ch.isalnum() for ch in ref) and ref not in ("{2}", "[]"), r
        assert r["prompt"] != "..."
    assert len({normalise(r["prompt"]) for r in datapoints}) == TOTAL
    placeholders = template_placeholders()
    target = json.loads(run.target_attrs_path("capitals").read_text())
    rubric = json.loads(run.rubric_path("capitals").read_text())
    assert not {normalise(k) for k in target} & placeholders
    assert not {normalise(v) for vs in target.values() for v in vs} & placeholders
    assert not {normalise(k) for k in rubric} & placeholders
    # counted in meta.json ...
    rejected = json.loads(run.meta_path.read_text())["item_quality"]["rejected"]["teacher"]
    assert sum(rejected.values()) > 0
    assert set(rejected) <= {"reference_empty", "template_echo", "near_duplicate", "map_entries"}
    # ... and in `coeval status`
    out = CliRunner().invoke(cli, ["status", "--run", str(run.root), "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["rejected_items"] == {"teacher": rejected}
    text = CliRunner().invoke(cli, ["status", "--run", str(run.root)]).output
    assert "rejected teacher replies, teacher:" in text
    # ... and in summary.json, per teacher
    analyzed = CliRunner().invoke(cli, ["analyze", "--run", str(run.root), "-q", "--out", str(tmp_path / "analysis")])
    assert analyzed.exit_code == 0, analyzed.output
    summary = json.loads((tmp_path / "analysis" / "summary.json").read_text())
    assert summary["teachers"]["teacher"]["rejected"] == rejected
    assert set(summary["judges"]["worker"]) >= {"degenerate_rate", "degenerate"}
    # ... and in the report
    report = (tmp_path / "analysis" / "report.html").read_text()
    assert 'id="item-quality"' in report
    assert "near_duplicate: " + str(rejected["near_duplicate"]) in report
    print("rejections:", rejected)


def test_a_teacher_that_only_echoes_the_template_fails_with_quality_and_continue_retries(
        fake: FakeServer, tmp_path: Path) -> None:
    fake.reset()
    fake.state.configure(junk_share=1.0)  # every teacher call: the template's placeholders
    path = _config(tmp_path, fake.url)
    keys = str(tmp_path / "keys.yaml")
    result = run_experiment(load_config(path, keys_file=keys), RunOptions(keys_file=keys, progress=False))
    assert result.exit_code == 1
    run = RunFolder(result.run_folder)
    assert not run.target_attrs_path("capitals").exists()  # placeholders never stored
    proposal = json.loads(next(run.target_attrs_path("capitals").parent.glob("*.teacher.proposal.json")).read_text())
    assert proposal["status"] == "failed"
    assert proposal["error_kind"] == "quality" and proposal["quality_rule"] == "template_echo"
    assert proposal["attempts"] == 7  # 1 + generation_retries
    fake.state.configure(junk_share=0.0)
    again = run_experiment(load_config(path, keys_file=keys, continue_run=True),
                           RunOptions(keys_file=keys, progress=False, continue_run=True))
    fake.reset()
    assert again.exit_code == 0, again.message
    target = json.loads(run.target_attrs_path("capitals").read_text())
    assert not {normalise(k) for k in target} & template_placeholders()
