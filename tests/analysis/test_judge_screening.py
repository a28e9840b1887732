"""Judge screening on a calibration slice: the judges that tell answers apart too little are
stopped, with confidence; informative judges never are; the reference run's three local
judges are stopped on 15% of its datapoints, saving at least 40% of phase 5."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval_analysis.adaptive import screen_judges
from coeval_analysis.loading.loader import load_run
from coeval_analysis.ranking.families import model_families
from coeval_analysis.ranking.headline import judgments_of
from coeval_analysis.stats.headline import Judgments
from coeval_analysis.stats.scenarios import REFERENCE_SHAPED, SCENARIOS, Scenario, simulate
from coeval_analysis.stats.scores import ScoreModel

REFERENCE_RUN = Path(__file__).resolve().parents[2].parent / "shared" / "reference-runs" / "medium-benchmark-v1"
LOCAL_JUDGES = ["qwen2p5-0b5", "qwen2p5-1b5", "smollm2-1b7"]
TOPICS = ["deltas", "floods", "dams", "tides", "rapids", "estuaries", "glaciers", "springs", "canals", "levees",
          "wetlands", "meanders"]

#: two discriminating judges of one family (favouring their own students), a flat judge, a
#: weakly contrary one and one whose scores ignore the answer: the reference run's shape
POOR_THREE = Scenario(
    "poor_three", judge_noise=(0.06, 0.06, 0.05, 0.15), random_judges=1,
    quality=REFERENCE_SHAPED["family_top_flat"].quality, judge_scale={2: 0.0, 3: -0.4}, judge_shift={2: 0.25},
    favours={0: ((8, 9), 0.10), 1: ((8, 9), 0.10)}, items_per_teacher=10,
)  # fmt: skip


def _slice(j: Judgments, items: np.ndarray) -> Judgments:
    keep = np.isin(j.item, items)
    return Judgments(j.item[keep], j.student[keep], j.judge[keep], j.value[keep], j.conflicted[keep],
                     j.n_items, j.n_students, j.n_judges, j.item_teacher)


@pytest.mark.parametrize("seed", range(12))
def test_the_flat_contrary_and_random_judges_are_stopped_and_the_two_that_discriminate_kept(seed: int) -> None:
    sim = simulate(POOR_THREE, seed)
    screening = screen_judges(sim.judgments, sim.judges, seed=seed)
    assert screening.stopped == ["j2", "j3", "j4"]
    assert screening.kept == ["j0", "j1"]
    flat = screening.judges[2]
    assert abs(flat.agreement) < 0.15 and flat.agreement_high < 0.25  # its scores vary with noise alone
    assert "below the 0.25" in flat.reason
    assert min(screening.judges[0].agreement, screening.judges[1].agreement) > 0.5


@pytest.mark.parametrize("scenario", ["decent", "self_preferring", "same_family", "bad_teacher"])
def test_informative_judges_are_never_stopped(scenario: str) -> None:
    for seed in range(8):
        sim = simulate(SCENARIOS[scenario], seed)
        assert screen_judges(sim.judgments, sim.judges, seed=seed).stopped == []


def test_two_judges_are_never_screened() -> None:
    sim = simulate(POOR_THREE, 0)
    j = sim.judgments
    keep = (j.judge == 2) | (j.judge == 3)  # the flat and the contrary judge alone
    two = Judgments(j.item[keep], j.student[keep], j.judge[keep] - 2, j.value[keep], j.conflicted[keep],
                    j.n_items, j.n_students, 2, j.item_teacher)
    screening = screen_judges(two, ["flat", "contrary"])
    assert screening.stopped == []
    assert "needs 3 judges" in screening.judges[1].reason


def test_the_judge_names_must_match_the_judgments() -> None:
    with pytest.raises(ValueError, match="2 judge names for 5 judges"):
        screen_judges(simulate(POOR_THREE, 0).judgments, ["a", "b"])


def _reference_judgments() -> tuple[Judgments, list[str]]:
    data = load_run(REFERENCE_RUN)
    model = ScoreModel.build(data)
    families = model_families(data.config, [*model.judges, *model.scorers, *model.students])
    return judgments_of(model, families)


@pytest.mark.slow
def test_the_reference_runs_local_judges_are_stopped_on_a_slice_of_its_datapoints() -> None:
    j, names = _reference_judgments()
    calls = np.bincount(j.judge, minlength=j.n_judges)
    for seed in range(8):
        items = np.random.default_rng(seed).permutation(j.n_items)[: j.n_items * 15 // 100]
        screening = screen_judges(_slice(j, items), names, seed=seed)
        assert sorted(screening.stopped) == LOCAL_JUDGES, screening
        sliced = np.bincount(_slice(j, items).judge, minlength=j.n_judges)
        stopped = [names.index(n) for n in screening.stopped]
        saved = (calls[stopped] - sliced[stopped]).sum() / calls.sum()
        assert saved >= 0.40


@pytest.mark.slow
def test_a_mock_design_is_screened_as_it_was_configured(tmp_path: Path) -> None:
    students = [{"name": f"s{q}", "interface": "mock", "roles": ["student"], "parameters": {"quality": q}}
                for q in (0.2, 0.4, 0.6, 0.8)]
    judges = [
        {"name": "sharp-a", "interface": "mock", "roles": ["judge"], "parameters": {"quality": 0.95}},
        {"name": "sharp-b", "interface": "mock", "roles": ["judge"], "parameters": {"quality": 0.9, "seed": 3}},
        {"name": "flat", "interface": "mock", "roles": ["judge"], "parameters": {"judge": {"flat": "High"}}},
        {"name": "guesser", "interface": "mock", "roles": ["judge"], "parameters": {"quality": 0.0}},
        {"name": "blurred", "interface": "mock", "roles": ["judge"], "parameters": {"quality": 1.0,
                                                                                   "judge": {"noise": 1.0}}},
    ]
    config = {
        "models": [{"name": "teacher", "interface": "mock", "roles": ["teacher"]}, *students, *judges],
        "tasks": [{"name": "qa", "description": "Answer a question about rivers.",
                   "target_attributes": {"topic": TOPICS, "audience": ["child", "student", "engineer", "farmer"]},
                   "rubric": {"correct": "The answer is right."}, "sampling": {"total": 40}}],
        "experiment": {"id": "screen", "storage_folder": str(tmp_path / "runs")},
    }
    path = tmp_path / "screen.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    result = CliRunner().invoke(cli, ["run", str(path), "-q"])
    assert result.exit_code == 0, result.output
    data = load_run(tmp_path / "runs" / "screen")
    model = ScoreModel.build(data)
    j, names = judgments_of(model, model_families(data.config, [*model.judges, *model.students]))
    screening = screen_judges(j, names)
    assert sorted(screening.stopped) == ["blurred", "flat", "guesser"], json.dumps(
        [(s.judge, s.agreement, s.agreement_high) for s in screening.judges])
