"""A teacher whose accepted prompts are near-copies of each other is flagged; one with
varied prompts (in any language) is not."""

from __future__ import annotations

from pathlib import Path

from coeval_analysis.analysis import AnalysisOptions, analyze
from coeval_analysis.items.teacher_diversity import prompt_similarity
from coeval_analysis.loading.loader import load_run
from coeval_analysis.reports.item_quality import item_quality_section

from .runs import datapoint, evaluation, response, write_run

SAME = "What is the capital city of the country called {}? Answer in one sentence please."
VARIED = [
    "Which river flows through Vienna?",
    "Nenne die Hauptstadt von Kanada.",
    "Écrivez une fonction Python qui inverse une liste.",
    "How many legs does a spider have?",
]


def test_similarity_is_the_mean_pairwise_shingle_jaccard_within_a_task() -> None:
    # 15 words -> 13 shingles each; changing one word in the middle changes 3 of them:
    # |A & B| = 10, |A | B| = 16 -> 0.625 for every pair of the three
    prompts = [SAME.format(c) for c in ("France", "Spain", "Chile")]
    assert prompt_similarity({"t": prompts}) == 0.625
    assert prompt_similarity({"t": VARIED}) == 0.0
    assert prompt_similarity({"t": ["one prompt"], "u": ["another"]}) is None
    # pairs across tasks are not compared
    assert prompt_similarity({"t": [prompts[0], VARIED[0]], "u": [prompts[1], prompts[2]]}) == 0.3125


def _run(root: Path) -> Path:
    dps = []
    for i, country in enumerate(("France", "Spain", "Chile", "Peru")):
        dp = datapoint("t", "copier", i)
        dp["prompt"] = SAME.format(country)
        dps.append(dp)
    for i, text in enumerate(VARIED):
        dp = datapoint("t", "varied", i)
        dp["prompt"] = text
        dps.append(dp)
    failed = datapoint("t", "varied", 9)
    dps.append({**failed, "prompt": VARIED[0], "status": "failed"})
    resps = [response(dp, s) for dp in dps[:-1] for s in ("a", "b")]
    evs = [evaluation(r, "j", {"accuracy": "High" if r["student_model_id"] == "a" else "Low"}) for r in resps]
    return write_run(root, rubric={"accuracy": "right"}, datapoints=dps, responses=resps, evaluations=evs)


def test_summary_and_report_flag_the_teacher_with_alike_prompts(tmp_path: Path) -> None:
    analysis = analyze(load_run(_run(tmp_path / "r")), AnalysisOptions(n_boot=20))
    teachers = analysis.summary["teachers"]
    assert teachers["copier"]["prompt_similarity"] == 0.625
    assert teachers["copier"]["low_diversity"] is True
    assert teachers["varied"]["prompt_similarity"] == 0.0  # the failed copy is not counted
    assert teachers["varied"]["low_diversity"] is False
    section = item_quality_section(analysis)
    rows = {r["teacher"]: r["flag"] for r in section.blocks[0].rows}
    assert "its prompts are alike (similarity 0.62)" in rows["copier"]
    assert rows["varied"] == "—"
