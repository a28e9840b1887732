"""The headline's confidence is earned: on the reference run (whose only discriminating
judges are of the top students' family), with 2 datapoints, with judges that carry no
signal, and with a judge that gives every answer High."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from coeval.cli.main import cli

WEAK = {"qwen2p5-1b5", "smollm2-1b7", "qwen2p5-0b5"}


def _analyze(run: Path, out: Path, *extra: str) -> tuple[dict[str, Any], str]:
    result = CliRunner().invoke(cli, ["analyze", "--run", str(run), "--out", str(out), *extra])
    assert result.exit_code == 0, result.output
    return json.loads((out / "summary.json").read_text()), result.output


@pytest.fixture(scope="module")
def reference(reference_run: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str, str]:
    out = tmp_path_factory.mktemp("honest-reference")
    summary, console = _analyze(reference_run, out, "--report", "summary", "--report", "html")
    return summary, console, (out / "report.html").read_text(encoding="utf-8")


@pytest.mark.slow
def test_no_weak_student_is_placed_above_gpt_4o_mini_with_confidence(
    reference: tuple[dict[str, Any], str, str],
) -> None:
    s, _, _ = reference
    for c in s["comparisons"]:
        if c["b"] == "gpt-4o-mini" and c["a"] in WEAK:
            assert not (c["ci"][0] is not None and c["ci"][0] > 0), c
    assert s["students"]["gpt-4o-mini"]["rank_range"][0] == 1


def test_the_report_and_console_say_why_the_gpt_places_are_uncertain(
    reference: tuple[dict[str, Any], str, str],
) -> None:
    s, console, report = reference
    for student in ("gpt-4o-mini", "gpt-3.5-turbo"):
        entry = s["students"][student]
        assert entry["determined"] is False
        assert "no unrelated judge that tells answers apart" in entry["not_determined"]
        assert f"{student}: not determined" in report
    # the console names both in one line, with its action
    assert ("gpt-4o-mini and gpt-3.5-turbo are not determined: no unrelated judge that tells answers apart"
            in " ".join(console.split()))
    assert "Top student" not in report  # its place is not determined


def test_two_datapoints_give_no_zero_width_interval_and_no_significant_comparison(
    make_run: Callable[..., Path], tmp_path: Path
) -> None:
    run = make_run(tasks={"task-1": ("accuracy", "clarity")}, teachers=("tea-x",), datapoints_per_teacher=2)
    s, console = _analyze(run, tmp_path / "out", "--report", "summary")
    for entry in s["students"].values():
        for key in ("ci", "robust_ci"):
            low, high = entry[key]
            assert low is None or high > low, (key, entry[key])
        assert entry["rank_range"] == [1, len(s["students"])]
    for c in s["comparisons"]:
        assert c["p"] is None and c["ci"] == [None, None]
    assert any(w["kind"] == "few_datapoints" and "too few datapoints" in w["message"] for w in s["warnings"])
    assert "too few datapoints" in console


@pytest.mark.slow
def test_judges_without_signal_call_few_pairs_different_and_are_all_flagged(
    make_run: Callable[..., Path], tmp_path: Path
) -> None:
    judges = ("noise-1", "noise-2", "noise-3", "noise-4")
    run = make_run(judges={}, random_judges=judges, datapoints_per_teacher=20)
    s, _ = _analyze(run, tmp_path / "out", "--report", "summary")
    significant = [c for c in s["comparisons"] if c["ci"][0] > 0 or c["ci"][1] < 0]
    assert len(significant) <= 0.1 * len(s["comparisons"])
    flagged = {w["subject"] for w in s["warnings"] if w["kind"] == "flat_judge"}
    assert flagged == set(judges)


def test_a_judge_that_gives_every_answer_high_is_flagged(make_run: Callable[..., Path], tmp_path: Path) -> None:
    """The quick start's shape: 2 teachers x 3 datapoints, 3 students, 2 judges, one of which
    says High to everything; agreement statistics must not read as reliability."""
    run = make_run(
        students={"stu-a": 0.7, "stu-b": 0.5, "stu-c": 0.3},
        judges={"judge-1": 0.1, "judge-high": 0.1},
        leniency={"judge-high": 3.0},
        random_judges=(),
        teachers=("tea-x", "tea-y"),
        tasks={"short_answer": ("accuracy", "clarity")},
        datapoints_per_teacher=3,
    )
    s, console = _analyze(run, tmp_path / "out", "--report", "summary")
    one_level = [w for w in s["warnings"] if w["kind"] == "one_level"]
    assert [w["subject"] for w in one_level] == ["judge-high"]
    assert "High" in one_level[0]["message"] and "judge-high" in console
    assert "one level" in s["agreement"]["constant_raters_note"]


def test_high_agreement_with_a_one_level_judge_is_called_inflated() -> None:
    from coeval_analysis.warnings.run_warnings import flag_constant_raters

    summary: dict[str, Any] = {
        "agreement": {"judges": ["a", "b"], "krippendorff_alpha": 0.83},
        "warnings": [{"kind": "one_level", "subject": "b", "message": "judge b gives High to 100% of answers"}],
    }
    flag_constant_raters(summary)
    (w,) = [w for w in summary["warnings"] if w["kind"] == "agreement_inflated"]
    assert w["subject"] == "b" and "0.83" in w["message"] and "not evidence of reliability" in w["message"]
    low = {"agreement": {"judges": ["a", "b"], "krippendorff_alpha": 0.1}, "warnings": summary["warnings"][:1]}
    flag_constant_raters(low)
    assert [w["kind"] for w in low["warnings"]] == ["one_level"]  # low agreement: nothing inflated


def test_a_reference_judge_fixes_a_family_biased_ranking() -> None:
    """Two judges of one family favour their 2 family students by +0.25; the only other
    judge is flat. Without a reference the headline cannot tell the family students'
    places; with a reference judge (human labels) on a share of the answers it can."""
    from coeval_analysis.stats.measurement import Reference, fit_all, layout_of, student_scores
    from coeval_analysis.stats.scenarios import Scenario, simulate
    from scipy.stats import spearmanr

    sc = Scenario(
        "family_only_good",
        judge_noise=(0.05, 0.05, 3.0),
        favours={0: ((3, 6), 0.25), 1: ((3, 6), 0.25)},
        quality=(0.40, 0.45, 0.5, 0.42, 0.55, 0.6, 0.47, 0.65, 0.68, 0.52),
    )
    sim = simulate(sc, 0)
    j = sim.judgments
    lay = layout_of(j)
    alone = fit_all(lay)[0]
    plain = student_scores(lay, alone).score
    # a reference on 20 datapoints of every student: the truth plus label noise
    rng = np.random.default_rng(1)
    items = np.repeat(np.arange(20), j.n_students)
    students = np.tile(np.arange(j.n_students), 20)
    value = np.clip(np.asarray(sim.quality)[students] + rng.normal(0, 0.1, len(items)), 0, 1)
    ref_lay = layout_of(j, Reference(items, students, value))
    with_ref = fit_all(ref_lay)[0]
    fixed = student_scores(ref_lay, with_ref).score
    # without it the family bias rests on the prior alone; with it, mostly on the data
    assert alone.bias_prior_share[:2].min() > 0.95
    assert with_ref.bias_prior_share[:2].max() < 0.7 and with_ref.bias[:2].min() > 0.1
    rho_plain = spearmanr(plain, sim.quality)[0]
    rho_ref = spearmanr(fixed, sim.quality)[0]
    assert rho_ref > rho_plain + 0.2
    assert int(np.argmax(fixed)) == int(np.argmax(sim.quality)) != int(np.argmax(plain))


@pytest.mark.slow
def test_a_teacher_whose_datapoints_do_not_separate_students_is_warned(
    make_run: Callable[..., Path], tmp_path: Path
) -> None:
    run = make_run(teacher_spread={"tea-z": 0.0}, difficulty_sd=0.0, datapoints_per_teacher=10)
    s, _ = _analyze(run, tmp_path / "out", "--report", "summary")
    alike = {w["subject"] for w in s["warnings"] if w["kind"] == "students_alike"}
    assert alike == {"tea-z"}


def test_judges_and_a_ranking_that_disagree_with_gold_are_warned() -> None:
    from coeval_analysis.warnings.run_warnings import _gold

    gold = {
        "judges_vs_gold": {"good": {"spearman": 0.6}, "backwards": {"spearman": -0.3}},
        "ranking_vs_gold": {"spearman": -0.5, "n_students": 4},
    }
    assert {(w["kind"], w["subject"]) for w in _gold(gold)} == {("judge_vs_gold", "backwards"), ("ranking_vs_gold", None)}
    assert _gold(None) == []
