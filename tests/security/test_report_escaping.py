"""The HTML report stays whole whatever text a run holds: JSON embedded in the page cannot
end its ``<script>`` early, and chart labels are shown as text, never as live HTML."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from coeval_analysis.reports.html import _json_island
from coeval_testing.synthetic import SyntheticSpec, write_synthetic_run

LINK_VALUE = '<a href="https://evil.example/">evil-link</a>'
COMMENT_VALUE = "html <!-- comment -->"


def test_the_json_island_escapes_what_html_would_read() -> None:
    value = {"a": "</script><script>alert(1)</script>", "b": "<!-- x", "c": "a & b > c", "d": "line\u2028sep\u2029end"}
    text = str(_json_island(value))
    for raw in ("<", ">", "&", "\u2028", "\u2029"):
        assert raw not in text, raw
    assert json.loads(text) == value  # still the same JSON for JSON.parse


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    spec = SyntheticSpec(students={"stu-a": 0.7, "stu-b": 0.5, "stu-c": 0.4},
                         attributes={"length": (COMMENT_VALUE, LINK_VALUE), "level": ("basic", "expert")},
                         datapoints_per_teacher=6)
    run = write_synthetic_run(root / "run", spec)
    done = subprocess.run([sys.executable, "-m", "coeval.cli.main", "analyze", "--run", str(run), "--out",
                           str(root / "a"), "--bootstrap", "0", "--quiet"], capture_output=True, text=True,
                          timeout=240, check=False)
    assert done.returncode == 0, done.stderr
    return root / "a" / "report.html"


@pytest.mark.slow
@pytest.mark.browser
def test_a_report_with_hostile_labels_draws_every_chart_and_links_nowhere(hostile_report: Path, page: Any) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(hostile_report.as_uri())
    page.wait_for_selector("body[data-charts-drawn]", timeout=60_000)
    assert errors == []
    drawn = int(page.get_attribute("body", "data-charts-drawn") or 0)
    assert drawn >= 5 and page.locator(".figure .main-svg").count() >= drawn
    # plotly turns <a href> in a label into a live link; labels must stay text
    assert page.locator(".figure svg a").count() == 0
    labels = " ".join(page.locator(".figure svg text").all_text_contents())
    assert "evil-link" in labels and "<a href" in labels
    # table sorting still works (it runs in the same script as the charts)
    table = page.locator("#ranking table")
    before = table.locator("tbody tr td:nth-child(1)").all_inner_texts()
    table.locator("th").first.click()
    table.locator("th").first.click()
    assert sorted(table.locator("tbody tr td:nth-child(1)").all_inner_texts()) == sorted(before)
    assert table.locator("th[aria-sort]").count() >= 1
