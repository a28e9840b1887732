"""``experiment.adaptive``: off unless asked, ``true`` for its defaults, and every bad field refused
before the run with the file, the field and the rule (exit code 2); the rounds' plan and the
plan's range of calls."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import attrs
import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval.phases.evaluation_rounds import DesignScope, look_sizes, round_plan
from coeval.planning.adaptive_range import adaptive_range
from coeval.plugins.config_loading import load_config


def _config(folder: Path, adaptive: Any = None, *, judges: int = 3) -> Path:
    experiment: dict[str, Any] = {"id": "adapt", "storage_folder": str(folder / "runs")}
    if adaptive is not None:
        experiment["adaptive"] = adaptive
    config = {
        "models": [
            {"name": "t", "interface": "mock", "roles": ["teacher"]},
            {"name": "a", "interface": "mock", "roles": ["student"]},
            {"name": "b", "interface": "mock", "roles": ["student"]},
            {"name": "c", "interface": "mock", "roles": ["student"]},
            *({"name": f"j{k}", "interface": "mock", "roles": ["judge"]} for k in range(judges)),
        ],
        "tasks": [{"name": "qa", "description": "Answer a question.", "target_attributes": {"topic": ["x", "y"]},
                   "rubric": {"correct": "The answer is right."}, "sampling": {"total": 4}}],
        "experiment": experiment,
    }
    path = folder / "adapt.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def test_adaptive_is_off_by_default_and_true_means_its_defaults(tmp_path: Path) -> None:
    assert load_config(_config(tmp_path), check_filesystem=False).experiment.adaptive is None
    assert load_config(_config(tmp_path, False), check_filesystem=False).experiment.adaptive is None
    on = load_config(_config(tmp_path, True), check_filesystem=False).experiment.adaptive
    assert on is not None
    assert on.as_dict() == {"screen": True, "calibration": 0.3, "stop_when": {"top": 1}, "looks": 6, "alpha": 0.05}
    written = load_config(_config(tmp_path, {"stop_when": {"width": 0.1}, "looks": 4}),
                          check_filesystem=False).experiment.adaptive
    assert written is not None and written.stop_when == {"width": 0.1} and written.looks == 4


@pytest.mark.parametrize(
    ("adaptive", "message"),
    [
        ({"stop_when": {"top": 0}}, "V-64 experiment.adaptive.stop_when: stop_when.top must be a whole number of "
                                    "places, 1 or more, got 0"),
        ({"stop_when": {"top": 3}}, "V-64 experiment.adaptive.stop_when: stop_when.top: 3 first places of 3 "
                                    "students asks nothing"),
        ({"stop_when": {"first": 1}}, "V-64 experiment.adaptive.stop_when: stop_when must be one of top, separated "
                                      "(with delta) or width, got first"),
        ({"stop_when": {"separated": "some"}}, "stop_when.separated must be 'all', got 'some'"),
        ({"stop_when": {"width": 2}}, "stop_when.width must be a number above 0 and at most 1, got 2"),
        ({"calibrate": 0.2}, "experiment.adaptive.calibrate"),
        ({"looks": 1}, "experiment.adaptive.looks"),
        ({"alpha": 0}, "V-20 experiment.adaptive.alpha: must be > 0, got 0"),
        ({"calibration": 1.5}, "experiment.adaptive.calibration"),
        ("yes", "experiment.adaptive"),
    ],
)
def test_a_bad_adaptive_field_is_refused_naming_file_field_and_rule(tmp_path: Path, adaptive: Any,
                                                                    message: str) -> None:
    path = _config(tmp_path, adaptive)
    result = CliRunner().invoke(cli, ["run", str(path), "--dry-run"])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "adapt.yaml" in result.output
    assert "Traceback" not in result.output


def test_a_misspelt_adaptive_key_gets_a_did_you_mean(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["run", str(_config(tmp_path, {"calibrate": 0.2})), "--dry-run"])
    assert result.exit_code == 2
    assert "calibration" in result.output


def test_screening_with_two_judges_is_a_warning_not_an_error(tmp_path: Path) -> None:
    config = load_config(_config(tmp_path, True, judges=2), check_filesystem=False)
    assert [w.rule for w in config.warnings] == ["V-64"]
    assert "judge screening needs 3 judges or more" in config.warnings[0].message


def test_the_calibration_slice_has_its_floor_and_the_rounds_end_with_every_datapoint() -> None:
    assert look_sizes(40, 0.2, 6) == [8, 14, 21, 27, 34, 40]
    assert look_sizes(100, 0.15, 5) == [15, 36, 58, 79, 100]
    assert look_sizes(20, 0.2, 6) == [8, 10, 13, 15, 18, 20]  # a fifth of 20 is below the floor of 8
    assert look_sizes(6, 0.2, 6) == [6]


def test_the_rounds_are_seeded_and_spread_over_tasks_and_teachers() -> None:
    points = [(task, teacher, f"{task}__{teacher}__{i:05d}") for task in ("qa", "sum") for teacher in ("t1", "t2")
              for i in range(10)]
    settings = {"calibration": 0.2, "looks": 6}
    rounds = round_plan(points, settings, seed=7)
    assert rounds == round_plan(list(reversed(points)), settings, seed=7)  # the order points come in is no matter
    assert rounds != round_plan(points, settings, seed=8)
    assert sorted(dp for r in rounds for dp in r) == sorted(p[2] for p in points)
    first = rounds[0]
    assert len(first) == 8
    groups = {tuple(dp.split("__")[:2]) for dp in first}
    assert groups == {("qa", "t1"), ("qa", "t2"), ("sum", "t1"), ("sum", "t2")}  # every (task, teacher) in the slice


def test_a_finished_design_expects_the_slice_from_everyone_and_later_rounds_from_the_kept_and_open() -> None:
    scope = DesignScope({"d0": 0, "d1": 1, "d2": 2, "d3": 3}, last_round=2, stopped_judges=frozenset({"flat"}),
                        open_after=(frozenset({"a", "b"}), frozenset({"a"}), frozenset()))
    assert scope.expects("d0", "c", "flat")
    assert scope.expects("d1", "b", "sharp") and not scope.expects("d1", "c", "sharp")
    assert not scope.expects("d1", "a", "flat")
    assert scope.expects("d2", "a", "sharp") and not scope.expects("d2", "b", "sharp")
    assert not scope.expects("d3", "a", "sharp")  # after the look that answered the question
    assert scope.expects("new", "c", "flat")  # a datapoint added since: the full grid's


def test_plan_rehearses_the_design_on_mock_judges(tmp_path: Path) -> None:
    path = _config(tmp_path)
    raw = yaml.safe_load(path.read_text())
    raw["models"][4]["parameters"] = {"judge": {"flat": "High"}}
    raw["models"][5]["parameters"] = {"quality": 0.95}
    raw["models"][6]["parameters"] = {"quality": 0.9}
    raw["tasks"][0]["sampling"]["total"] = 40
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    result = CliRunner().invoke(cli, ["plan", str(path), "--adaptive", "--estimate-samples", "0"])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("adaptive phase 5:"))
    low, high, full = (int(n.replace(",", "")) for n in re.findall(r"([\d,]+) (?:to|calls of|for)", line)[:3])
    assert full == 40 * 3 * 3
    # every rehearsal buys the slice from every judge (8 datapoints x 3 students x 3) and stops j0 after it
    assert 72 <= low <= high <= 72 + 32 * 3 * 2
    assert "20 rehearsals of the design" in result.output
    assert "(share of rehearsals): j0 100%" in result.output


def test_without_mock_judges_the_plan_gives_a_heuristic_range_with_its_basis(tmp_path: Path) -> None:
    raw = yaml.safe_load(_config(tmp_path).read_text())
    raw["models"][4]["parameters"] = {"judge": {"flat": "High"}}
    config = load_config(raw, check_filesystem=False)
    judge = config.model("j2")
    config = attrs.evolve(config, models=tuple(attrs.evolve(m, interface="openai") if m is judge else m
                                               for m in config.models))
    cells = [SimpleNamespace(phase="evaluation", model=j, calls=120, cost_usd=1.2) for j in ("j0", "j1", "j2")]
    spread = adaptive_range(config, cells, {"calibration": 0.2})
    # 40 datapoints x 3 students = 120 calls a judge; the slice (a fifth) by all, the rest by j1 and j2 at most
    assert (spread.full_calls, spread.low_calls, spread.high_calls) == (360, 72, 264)
    assert spread.full_usd == pytest.approx(3.6)
    assert spread.low_usd == pytest.approx(0.72) and spread.high_usd == pytest.approx(2.64)
    assert spread.screened == ("j0",)
    assert "judges expected to be screened out: j0" in spread.basis
