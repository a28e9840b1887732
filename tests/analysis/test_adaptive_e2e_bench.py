"""Figure i2 of the bench (``benchmarks.adaptive_e2e``): the scenarios as the mock plays them,
and one seed run in full and adaptively, compared with the truth."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from benchmarks import adaptive_e2e
from benchmarks.run import RUNNERS, _rows


def _models(scenario: str, seed: int) -> tuple[dict[str, dict[str, Any]], dict[str, float]]:
    models, truth = adaptive_e2e.played(scenario, seed)
    return {m["name"]: m for m in models["models"]}, truth


def test_a_seed_draws_the_same_students_and_judges_and_another_seed_others() -> None:
    assert adaptive_e2e.played("idiosyncratic", 4) == adaptive_e2e.played("idiosyncratic", 4)
    _, truth = adaptive_e2e.played("idiosyncratic", 4)
    _, other = adaptive_e2e.played("idiosyncratic", 5)
    assert truth != other
    assert all(0.3 <= q <= 0.8 for q in truth.values()) and len(truth) == 6


def test_the_self_preferring_judge_favours_the_student_of_its_family() -> None:
    models, _ = _models("self_preferring", 0)
    assert models["j4"]["family"] == models["s4"]["family"] == "own"
    assert models["j4"]["parameters"] == {"quality": 1.0, "judge": {"noise": 0.1, "bias": {"own": 0.3}}}
    assert not any("family" in models[f"s{i}"] for i in range(4))


def test_the_reference_shape_gives_the_sharp_family_the_two_best_students_and_a_contrary_judge() -> None:
    models, truth = _models("reference_five", 2)
    best_two = sorted(truth, key=truth.__getitem__)[-2:]
    assert sorted(n for n, m in models.items() if m.get("family") == "top" and n.startswith("s")) == sorted(best_two)
    assert models["j2"]["parameters"]["judge"] == {"flat": "High"}
    assert models["j4"]["parameters"] == {"quality": 0.0}
    # the contrary judge's mean perceived quality of a student, q + bias, falls 0.4 per unit of q
    bias = models["j3"]["parameters"]["judge"]["bias"]
    names = list(truth)
    q = np.array([truth[n] for n in names])
    slope = np.polyfit(q, q + np.array([bias[n] for n in names]), 1)[0]
    assert slope == pytest.approx(-0.4, abs=1e-3)


def test_an_unknown_scenario_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"unknown scenario.*nonesuch"):
        adaptive_e2e.run(1, ["nonesuch"])


def test_one_seed_runs_full_and_adaptive_and_reports_what_was_saved_and_kept() -> None:
    r = adaptive_e2e.run(seeds=1, scenarios=["reference_five"], workers=1)
    s = r["scenarios"]["reference_five"]
    assert s["seeds"] == 1
    assert s["calls_full"] == 40 * 6 * 5  # every (datapoint, student, judge) of the full grid
    assert 0 < s["calls_adaptive"] < s["calls_full"]
    assert s["saved"] == pytest.approx(1 - s["calls_adaptive"] / s["calls_full"])
    assert s["same_answers"] is True
    assert s["distinct_inputs_min"] == 40  # every datapoint its own input, so its own answers
    assert "j2" in s["stopped_judges"]  # the flat judge tells no answer apart: screened out
    assert set(s["top1"]) == set(s["rho"]) == {"full", "adaptive", "adaptive_headline"}
    assert all(-1.0 <= v <= 1.0 for v in s["rho"].values())
    assert set(r["checks"]) == {"saved", "top1", "rho", "same_answers"}
    assert r["ok"] == all(r["checks"].values())
    printed = "\n".join(adaptive_e2e.table(r))
    assert "| reference_five | 1,200 -> " in printed
    assert "phase-5 calls saved, worst scenario" in printed
    name, measured, _target, verdict = _rows({"adaptive_e2e": r}, quick=False)[0]
    assert name == "i2. adaptive evaluation end to end" and "1 seeds x 1 scenarios" in measured
    assert verdict == ("OK" if r["ok"] else "OVER TARGET")
    assert "adaptive_e2e" in RUNNERS
