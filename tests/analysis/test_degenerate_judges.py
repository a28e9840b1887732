"""Judges whose replies are flat without a reason, or copy the prompt's example, are measured
per judge and, with ``--drop-degenerate-judges``, left out of the ranking with a note."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from coeval.cli.main import cli
from coeval_analysis.analysis import AnalysisOptions, analyze
from coeval_analysis.loading.loader import load_run
from coeval_analysis.warnings.judge_replies import judge_replies

from .runs import datapoint, evaluation, response, write_run

RUBRIC = {"accuracy": "right", "clarity": "clear"}
WHY = {"accuracy": "The capital named is correct.", "clarity": "One plain sentence."}


def _scores(a: str, c: str) -> dict[str, str]:
    return {"accuracy": a, "clarity": c}


def _run(root: Path) -> Path:
    """4 items, students a (good) and b (weak); judges:
    fair  - varied levels, with reasons;
    terse - flat levels on every answer, but always with a reason (not degenerate);
    lazy  - b High/High and a Low/Low on 6 of 8 answers, no reason (6/8 = 0.75 degenerate);
    copy  - varied levels, but the prompt's example reason on 2 of 8 answers (0.25)."""
    dps = [datapoint("t", "teach", i) for i in range(4)]
    evs: list[dict[str, Any]] = []
    resps = []
    for i, dp in enumerate(dps):
        for student in ("a", "b"):
            r = response(dp, student)
            resps.append(r)
            good = student == "a"
            evs.append(evaluation(r, "fair", _scores("High" if good else "Low", "Medium"), rationale=WHY))
            flat = "High" if good else "Medium"
            evs.append(evaluation(r, "terse", _scores(flat, flat), rationale=WHY))
            if i < 3:
                lazy = "Low" if good else "High"
                evs.append(evaluation(r, "lazy", _scores(lazy, lazy)))
            else:
                evs.append(evaluation(r, "lazy", _scores("Medium", "Low"), rationale={"accuracy": ""}))
            reason = {"accuracy": "one sentence on why"} if i == 0 else WHY
            evs.append(evaluation(r, "copy", _scores("High" if good else "Low", "Low"), rationale=reason))
    return write_run(root, rubric=RUBRIC, datapoints=dps, responses=resps, evaluations=evs)


def test_rates_count_flat_replies_without_reason_and_copied_examples(tmp_path: Path) -> None:
    summary = analyze(load_run(_run(tmp_path / "r")), AnalysisOptions(n_boot=50)).summary
    rates = {j: (v["degenerate_rate"], v["degenerate"]) for j, v in summary["judges"].items()}
    assert rates == {"fair": (0.0, False), "terse": (0.0, False), "lazy": (0.75, True), "copy": (0.25, False)}
    assert not any(w["kind"] == "degenerate_judge_dropped" for w in summary["warnings"])
    assert "dropped" not in summary["judges"]["lazy"]


def test_drop_leaves_the_judge_out_of_the_ranking_and_says_so(tmp_path: Path) -> None:
    data = load_run(_run(tmp_path / "r"))
    kept = analyze(data, AnalysisOptions(n_boot=50)).summary
    dropped = analyze(data, AnalysisOptions(n_boot=50, drop_degenerate_judges=True)).summary
    lazy_records = int((data.records["judge"].astype(str) == "lazy").sum())
    assert lazy_records > 0
    assert dropped["judges"]["lazy"] == {"degenerate_rate": 0.75, "degenerate": True, "dropped": True,
                                         "evaluator": "llm_judge", "n_records": lazy_records, "n_failed": 0,
                                         "failure_rate": 0.0, "errors": {}}
    assert not any(v.get("dropped") for j, v in dropped["judges"].items() if j != "lazy")
    notes = [w for w in dropped["warnings"] if w["kind"] == "degenerate_judge_dropped"]
    assert [w["subject"] for w in notes] == ["lazy"]
    assert "75%" in notes[0]["message"] and "50%" in notes[0]["message"]
    # the lazy judge's inverted scores are gone from the students' scores
    assert {s: v["score"] for s, v in kept["students"].items()} == {"a": 0.578125, "b": 0.390625}
    assert {s: v["score"] for s, v in dropped["students"].items()} == {"a": 0.75, "b": 0.25}
    assert sorted(dropped["agreement"]["icc"]["judges"]) == ["copy", "fair", "terse"]


def test_cli_flag_prints_a_note_and_writes_the_summary(tmp_path: Path) -> None:
    run = _run(tmp_path / "r")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli,
        ["analyze", "--run", str(run), "--out", str(out), "--bootstrap", "50", "--report", "summary",
         "--report", "html", "--drop-degenerate-judges", "-q"],
    )
    assert result.exit_code == 0, result.output
    assert "lazy" in (out / "report.html").read_text(encoding="utf-8")
    assert "judge lazy left out of the ranking: 75% of its replies are degenerate" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["judges"]["lazy"]["dropped"] is True


def test_the_examples_are_the_judge_templates_own() -> None:
    from coeval.prompts.templates import DEFAULT_TEMPLATES as TEMPLATES
    from coeval_analysis.warnings.judge_replies import JUDGE_EXAMPLES

    words = " ".join(t.replace("_", " ") for n, t in TEMPLATES.items() if n.startswith("evaluate"))
    assert all(example in words for example in JUDGE_EXAMPLES)


def test_a_reply_scoring_the_example_factor_counts_as_copied(tmp_path: Path) -> None:
    dps = [datapoint("t", "teach", i) for i in range(2)]
    resps = [response(dp, "a") for dp in dps]
    evs = [evaluation(resps[0], "echo", {"Criterion_Name": "High", "accuracy": "High"}),
           evaluation(resps[1], "echo", _scores("High", "Low")),
           evaluation(resps[0], "fair", _scores("High", "Low"), status="failed", rationale=WHY)]
    data = load_run(write_run(tmp_path / "r", rubric=RUBRIC, datapoints=dps, responses=resps, evaluations=evs))
    replies = judge_replies(data)
    assert replies.to_dict("records") == [{"judge": "echo", "response": 0, "explained": False, "copied": True}]
    assert analyze(data, AnalysisOptions(n_boot=20)).summary["judges"]["echo"]["degenerate_rate"] == 0.5
