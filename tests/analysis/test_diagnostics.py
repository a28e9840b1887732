"""Self-preference, verbosity, coverage and gold diagnostics find what was planted."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval_analysis import analyze, load_run
from coeval_analysis.analysis import AnalysisOptions
from coeval_analysis.stats.diagnostics import model_family

STUDENTS = {"alpha-1": 0.7, "beta-2": 0.55, "gamma-3": 0.4}
JUDGES = {"beta-2": 0.1, "delta-1": 0.1, "eps-1": 0.1, "beta-9": 0.1}


def test_self_preference_of_a_judge_is_found_and_others_are_clean(make_run) -> None:
    run = make_run(
        students=STUDENTS,
        judges=JUDGES,
        random_judges=(),
        self_bias={"beta-2": 0.3},
        teachers=("gamma-3", "t-2"),
        datapoints_per_teacher=30,
        families={"beta-2": "beta", "beta-9": "beta"},
        seed=4,
    )
    sp = analyze(load_run(run), AnalysisOptions(n_boot=50)).summary["self_preference"]
    own = sp["judge_is_student"]["beta-2"]
    assert own["bias"] > 0.2 and own["bias"] > 4 * own["se"]
    kin = sp["same_family"]["beta-9"]  # same family, no planted bias
    assert kin["family"] == "beta"
    assert abs(kin["bias"]) < 3 * kin["se"] + 0.02
    teacher = sp["teacher_is_student"]["gamma-3"]  # teaches and answers, no planted bias
    assert abs(teacher["bias"]) < 3 * teacher["se"] + 0.02


def test_verbosity_bias_of_one_judge_is_found(make_run) -> None:
    run = make_run(
        students=STUDENTS,
        judges={"j-a": 0.1, "j-b": 0.1, "j-c": 0.1},
        random_judges=(),
        length_bias={"j-b": 0.2},
        datapoints_per_teacher=30,
        seed=5,
    )
    verb = analyze(load_run(run), AnalysisOptions(n_boot=50)).summary["verbosity"]
    assert verb["judges"]["j-b"]["spearman"] > 0.4
    assert verb["judges"]["j-b"]["within_item"] > 0.4
    assert abs(verb["judges"]["j-a"]["spearman"]) < 0.15


def test_gold_scores_sit_beside_judge_scores(make_run) -> None:
    run = make_run(
        students=STUDENTS,
        judges={"j-a": 0.1, "j-b": 0.15},
        random_judges=("j-r",),
        gold=True,
        datapoints_per_teacher=30,
        seed=6,
    )
    s = analyze(load_run(run), AnalysisOptions(n_boot=100)).summary
    gold = s["gold"]
    assert gold["ensemble_vs_gold"]["pearson"] > 0.6
    assert gold["judges_vs_gold"]["j-r"]["pearson"] < 0.2
    assert gold["ranking_vs_gold"]["spearman"] == pytest.approx(1.0)
    assert "gold" not in s["judges"]  # gold never weighs as a judge
    assert s["evaluator_records"]["gold"]["evaluator"] == "gold"
    for name in STUDENTS:
        low, high = s["students"][name]["gold_ci"]
        assert low <= s["students"][name]["gold_score"] <= high


def test_coverage_reports_values_never_drawn(make_run, tmp_path) -> None:
    import json

    run = make_run(datapoints_per_teacher=4, seed=1)
    grid = json.loads((run / "phase1_attributes" / "task-1.target_attrs.json").read_text())
    grid["level"].append("unheard-of")
    (run / "phase1_attributes" / "task-1.target_attrs.json").write_text(json.dumps(grid))
    cov = analyze(load_run(run), AnalysisOptions(n_boot=20)).summary["coverage"]["task-1"]
    assert cov["uncovered"] == ["level=unheard-of"]
    assert cov["value_coverage"] == pytest.approx(5 / 6)
    assert 0 < cov["pair_coverage"] <= 1


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("gpt-4o-mini", "gpt"),
        ("Qwen/Qwen2.5-7B-Instruct", "qwen"),
        ("claude-3-haiku", "claude"),
        ("meta-llama/Llama-3.1-8B", "llama"),
        ("ollama:mistral", "mistral"),
        ("smollm2-1b7", "smollm"),
    ],
)
def test_model_family(name: str, family: str) -> None:
    assert model_family(name) == family


def test_a_judge_of_its_own_answers_without_a_reference_is_not_measured_not_zero(make_run) -> None:
    # both judges are students of one family: nobody unrelated scored their answers
    run = make_run(
        students={"gpt-a": 0.7, "gpt-b": 0.5, "llama-1": 0.4},
        judges={"gpt-a": 0.1, "gpt-b": 0.1},
        random_judges=(),
        teachers=("t-1",),
        datapoints_per_teacher=10,
        families={"gpt-a": "gpt", "gpt-b": "gpt"},
        seed=1,
    )
    data = load_run(run)
    r = data.records
    own = {j: int(((r.judge == j) & (r.student == j) & ~r.failed).sum()) for j in ("gpt-a", "gpt-b")}
    assert own["gpt-a"] > 0 and own["gpt-b"] > 0  # they did score their own answers
    sp = analyze(data, AnalysisOptions(n_boot=0)).summary["self_preference"]
    assert sp["judge_is_student"] == {} and sp["same_family"] == {}  # no row of zeros
    kin = {j: int(((r.judge == j) & (r.student == other) & ~r.failed).sum())
           for j, other in (("gpt-a", "gpt-b"), ("gpt-b", "gpt-a"))}
    assert sp["not_measured"] == {
        "judge_is_student": own,
        "same_family": kin,
        "teacher_is_student": {},
    }
    out = run.parent / "analysis"
    result = CliRunner().invoke(cli, ["analyze", "--run", str(run), "--out", str(out), "-q", "--bootstrap", "0"])
    assert result.exit_code == 0, result.output
    page = (out / "report.html").read_text(encoding="utf-8")
    bias = page[page.index('id="bias"'):]
    bias = bias[: bias.index("</section>")]
    assert "No self-preference to measure." in bias
    assert (
        f"judge scores itself: gpt-a ({own['gpt-a']} without a reference), gpt-b ({own['gpt-b']} without a reference)"
        in bias
    )
