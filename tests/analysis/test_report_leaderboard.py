"""The HTML report opens on the leaderboard: one score per student with its interval, the
tiers, how the headline is combined and the first warnings with their actions; every other
warning below. Intervals stay inside the plot."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval_analysis.reports.figures import leaderboard_figure


@pytest.fixture(scope="module")
def report(reference_run: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("report")
    result = CliRunner().invoke(cli, ["analyze", "--run", str(reference_run), "--out", str(out), "-q",
                                      "--report", "html", "--report", "summary"])  # fmt: skip
    assert result.exit_code == 0, result.output
    return (out / "report.html").read_text(encoding="utf-8")


def _section(page: str, sid: str) -> str:
    return page.split(f'<section id="{sid}">')[1].split("</section>")[0]


@pytest.mark.slow
def test_the_report_opens_on_the_leaderboard_and_puts_warnings_below(report: str) -> None:
    sections = re.findall(r'<section id="([^"]+)">', report)
    assert sections[:3] == ["ranking", "overview", "comparisons"]  # the leaderboard is the first screen
    assert sections.index("warnings") > sections.index("ranking")
    board = _section(report, "ranking")
    assert board.count("<li>") <= 3 and board.count("Action: ") >= 2
    assert "12 more in" in board or "more in <a" in board
    assert 'id="tiers"' in board and 'id="combined"' in board


@pytest.mark.slow
def test_one_score_per_student(report: str) -> None:
    board = _section(report, "ranking")
    headers = re.findall(r'<th scope="col">([^<]+)</th>', board)
    assert headers[:4] == ["#", "student", "headline", "95% CI"]
    assert not {"robust score", "mean score", "agreement-weighted score"} & set(headers)
    assert len(re.findall(r"<tr><td", board)) == 5


def test_intervals_stay_inside_the_plot() -> None:
    board = {"rows": [
        {"student": "a", "headline": 0.9, "headline_ci": [0.7, 1.06]},
        {"student": "b", "headline": 0.1, "headline_ci": [-0.04, 0.3]},
        {"student": "c", "headline": None, "headline_ci": [None, None]},
    ]}  # fmt: skip
    spec = leaderboard_figure(board)
    assert spec is not None
    low, high = spec["layout"]["xaxis"]["range"]
    assert low < -0.04 and high > 1.06
    assert spec["data"][0]["y"] == ["b", "a"]  # best at the top; the unscored student is not drawn
    inside = leaderboard_figure({"rows": [{"student": "a", "headline": 0.5, "headline_ci": [0.4, 0.6]}]})
    assert inside is not None and inside["layout"]["xaxis"]["range"] == pytest.approx([0.0, 1.02])
