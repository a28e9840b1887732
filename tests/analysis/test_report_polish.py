"""The HTML report says what it counts and shows what it means: "judge records" are LLM
judges' records (gold and metric records apart), the navigation marks the first section at
the top of the page, and the comparison heatmap's colour follows the evidence (p)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval_analysis.reports.figures import comparison_matrix as _comparison_matrix


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    from coeval_testing.synthetic import SyntheticSpec, write_synthetic_run

    root = tmp_path_factory.mktemp("polish")
    run = write_synthetic_run(root / "run", SyntheticSpec(gold=True, metric="bleu", seed=5))
    out = root / "analysis"
    result = CliRunner().invoke(cli, ["analyze", "--run", str(run), "--out", str(out), "--bootstrap", "50"])
    assert result.exit_code == 0, result.output
    return out / "report.html", json.loads((out / "summary.json").read_text(encoding="utf-8"))


def _key_figures(report: Path) -> dict[str, str]:
    html = report.read_text(encoding="utf-8")
    return {k: v for v, k in re.findall(r'<div class="key"><div class="v">([^<]*)</div><div class="k">([^<]*)</div>',
                                        html)}


def test_judge_records_are_the_llm_judges_records(analysed: tuple[Path, dict[str, Any]]) -> None:
    report, summary = analysed
    llm = sum(j["n_records"] for j in summary["judges"].values())
    others = sum(e["n_records"] for e in summary["evaluator_records"].values())
    assert others > 0 and summary["n_records"] == llm + others  # gold and metric records are in the run
    keys = _key_figures(report)
    assert keys["judge records"] == f"{llm:,}"
    assert keys["gold, metric and label records"] == f"{others:,}"


@pytest.mark.slow
def test_navigation_marks_the_first_section_at_the_top(analysed: tuple[Path, dict[str, Any]], browser: Any) -> None:
    report, _ = analysed
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(report.as_uri())
        first = page.locator("main section").first.get_attribute("id")
        assert page.locator("nav a.active").count() == 1
        assert page.locator("nav a.active").get_attribute("data-target") == first
        page.evaluate("window.scrollTo(0, 5); window.scrollTo(0, 0)")
        page.wait_for_timeout(100)
        assert page.locator("nav a.active").get_attribute("data-target") == first
    finally:
        page.close()


def test_comparison_colour_scales_with_the_evidence() -> None:
    pairs = [
        {"a": "s1", "b": "s2", "diff": 0.12, "ci": [-0.2, 0.4], "p": 0.78},
        {"a": "s1", "b": "s3", "diff": 0.12, "ci": [0.05, 0.2], "p": 0.002},
        {"a": "s2", "b": "s3", "diff": -0.02, "ci": [-0.03, -0.01], "p": 0.04},
    ]
    fig = _comparison_matrix(["s1", "s2", "s3"], pairs)
    assert fig is not None
    z = fig["data"][0]["z"]
    assert abs(z[0][1]) < 0.1  # p = 0.78: pale, however large the difference
    assert z[0][2] > 0.85  # p = 0.002: deep
    assert z[2][0] == -z[0][2] and z[1][0] == -z[0][1]  # the sign follows the difference
    assert -0.6 < z[1][2] < -0.3  # p = 0.04: between
    assert fig["data"][0]["text"][0][1] == "+0.120"  # the text still gives the difference
