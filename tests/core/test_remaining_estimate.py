"""The estimate of remaining work counts exactly the calls the run then makes, in every way
a run grows: a new student or judge, a larger ``sampling.total``, a fork (``resume_from``).
Above ``--confirm-above`` the spend question is asked."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval.config.model import Config
from coeval.planning.cost import estimate_cost
from coeval.plugins.config_loading import load_config

from tests.core.pipeline_support import folder, lines, make_config, meta, mock_model, run, task

PHASES = ("data_generation", "response_collection", "evaluation")


def _estimated(config: Config, **kw: Any) -> Counter[tuple[str, str]]:
    estimate = estimate_cost(config, samples=0, **kw)
    out: Counter[tuple[str, str]] = Counter()
    for cell in estimate.cells:
        if cell.calls:
            out[(cell.phase, cell.model)] += cell.calls
    return out


_FIELD = {"data_generation": "teacher_model_id", "response_collection": "student_model_id",
          "evaluation": "judge_model_id"}


def _made(config: Config) -> Counter[tuple[str, str]]:
    """(phase, model) -> record lines in the run folder (every call is one line here: no faults)."""
    out: Counter[tuple[str, str]] = Counter()
    for phase in PHASES:
        for rec in lines(folder(config), phase):
            out[(phase, str(rec[_FIELD[phase]]))] += 1
    return out


def _grown(tmp_path: Path, models: list[dict[str, Any]], total: int = 3, **exp: Any) -> Config:
    return make_config(tmp_path, models, [task(total=total)], **exp)


BASE = [mock_model("a", seed=1), mock_model("b", seed=2)]


def _check_exact(before: Config, after: Config, **run_kw: Any) -> Counter[tuple[str, str]]:
    made_before = _made(before)
    estimated = _estimated(after, continue_run=run_kw.get("continue_run", False))
    assert run(after, **run_kw).exit_code == 0
    made = _made(after) - made_before
    assert estimated == made
    return made


def test_adding_a_student_to_a_finished_run_is_estimated_exactly(tmp_path: Path) -> None:
    before = _grown(tmp_path, BASE)
    assert run(before).exit_code == 0
    priced = mock_model("c", roles=["student"], seed=3, cost_per_call_usd=0.5)
    after = _grown(tmp_path, [*BASE, priced])
    estimate = estimate_cost(after, samples=0, continue_run=True)
    assert estimate.total_cost_usd == pytest.approx(6 * 0.5)  # 2 teachers x 3 datapoints answered by c
    made = _check_exact(before, after, continue_run=True)
    assert made == Counter({("response_collection", "c"): 6, ("evaluation", "a"): 6, ("evaluation", "b"): 6})


def test_adding_a_judge_to_a_finished_run_is_estimated_exactly(tmp_path: Path) -> None:
    before = _grown(tmp_path, BASE)
    assert run(before).exit_code == 0
    after = _grown(tmp_path, [*BASE, mock_model("j", roles=["judge"], seed=4)])
    made = _check_exact(before, after, continue_run=True)
    assert made == Counter({("evaluation", "j"): 12})


def test_a_larger_sampling_total_is_estimated_exactly(tmp_path: Path) -> None:
    before = _grown(tmp_path, BASE, total=3)
    assert run(before).exit_code == 0
    after = _grown(tmp_path, BASE, total=5)
    made = _check_exact(before, after, continue_run=True)
    # 2 new datapoints per teacher, answered by 2 students, each answer judged by 2 judges
    assert made == Counter({("data_generation", "a"): 2, ("data_generation", "b"): 2,
                            ("response_collection", "a"): 4, ("response_collection", "b"): 4,
                            ("evaluation", "a"): 8, ("evaluation", "b"): 8})


def test_a_fork_that_adds_a_student_is_estimated_exactly(tmp_path: Path) -> None:
    source = _grown(tmp_path, BASE)
    assert run(source).exit_code == 0
    phases = {"attribute_mapping": "Keep", "rubric_mapping": "Keep", "data_generation": "Keep",
              "response_collection": "Model", "evaluation": "Model"}
    fork = make_config(tmp_path, [*BASE, mock_model("c", roles=["student"], seed=3)], [task(total=3)],
                       exp_id="fork", resume_from="exp", phases=phases)
    estimated = _estimated(fork)
    assert run(fork).exit_code == 0
    made = _made(fork) - _made(source)
    assert estimated == made == Counter({("response_collection", "c"): 6, ("evaluation", "a"): 6,
                                         ("evaluation", "b"): 6})
    assert not (tmp_path / "runs" / "fork.estimate").exists()


def test_a_fork_that_extends_an_interrupted_run_is_estimated_exactly(tmp_path: Path) -> None:
    source = _grown(tmp_path, BASE)
    assert run(source).exit_code == 0
    rf = folder(source)
    for path in rf.jsonl_files("response_collection"):  # the source lost half its answers
        kept = path.read_text().splitlines(keepends=True)
        path.write_text("".join(kept[: len(kept) // 2]))
    time.sleep(1.1)  # answers made again are newer than the judgments of the lost ones
    phases = {"attribute_mapping": "Keep", "rubric_mapping": "Keep", "data_generation": "Keep",
              "response_collection": "Extend", "evaluation": "Extend"}
    fork = make_config(tmp_path, BASE, [task(total=3)], exp_id="fork2", resume_from="exp", phases=phases)
    estimated = _estimated(fork)
    assert run(fork).exit_code == 0
    new_lines = _made(fork) - Counter({k: v for k, v in _made(source).items() if k[0] != "evaluation"})
    assert sum(estimated.values()) > 0
    assert estimated[("response_collection", "a")] == new_lines[("response_collection", "a")]
    assert estimated[("response_collection", "b")] == new_lines[("response_collection", "b")]
    # judgments made: the fork's records the source does not hold (a stale one made again
    # replaces its old line, so line counts would not tell)
    source_records = {json.dumps(r, sort_keys=True) for r in lines(rf, "evaluation")}
    made = Counter(str(r["judge_model_id"]) for r in lines(folder(fork), "evaluation")
                   if json.dumps(r, sort_keys=True) not in source_records)
    for judge in ("a", "b"):
        assert estimated[("evaluation", judge)] == made[judge]


def _write(path: Path, config: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump(config))


def test_plan_continue_names_the_calls_and_dollars_and_the_spend_question_fires(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    import coeval.cli.spend_check as spend_check

    raw: dict[str, Any] = {
        "models": [mock_model("a", seed=1), mock_model("b", seed=2)],
        "tasks": [task(total=3)],
        "experiment": {"id": "grow", "storage_folder": "runs", "probe_mode": "disable"},
    }
    _write(work / "c.yaml", raw)
    assert CliRunner().invoke(cli, ["run", "c.yaml"]).exit_code == 0
    raw["models"].append(mock_model("c", roles=["student"], seed=3, cost_per_call_usd=0.5))
    _write(work / "c.yaml", raw)
    shown = CliRunner().invoke(cli, ["plan", "c.yaml", "--continue", "--estimate-samples", "0", "--json"])
    assert shown.exit_code == 0, shown.output
    plan = json.loads(shown.output)
    assert plan["total_calls"] == 18 and plan["total_cost_usd"] == pytest.approx(3.0)
    assert plan["models"]["c"]["calls"] == 6

    monkeypatch.setattr(spend_check, "stdin_is_terminal", lambda: True)
    declined = CliRunner().invoke(cli, ["run", "c.yaml", "--continue", "--confirm-above", "1"], input="n\n")
    assert declined.exit_code == 1, declined.output
    assert "estimate for remaining work: 18 calls" in declined.output
    assert "Spend about $3.00?" in declined.output
    config = load_config(str(work / "c.yaml"), check_filesystem=False)
    assert meta(folder(config))["calls"].get("c") is None  # nothing was spent
    done = CliRunner().invoke(cli, ["run", "c.yaml", "--continue", "--yes"])
    assert done.exit_code == 0, done.output
    assert meta(folder(config))["calls"]["c"] == 6
    assert meta(folder(config))["spend_usd"]["c"] == pytest.approx(3.0)
