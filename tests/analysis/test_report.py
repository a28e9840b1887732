"""The HTML report: self-contained, works from file://, charts drawn with no console error
and no network request, sortable tables, section navigation."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from coeval_testing.synthetic import SyntheticSpec, write_synthetic_run

    root = tmp_path_factory.mktemp("report")
    run = write_synthetic_run(
        root / "run", SyntheticSpec(gold=True, metric="bleu", failure_rate=0.02, seed=2)
    )
    out = root / "analysis"
    result = CliRunner().invoke(cli, ["analyze", "--run", str(run), "--out", str(out), "--bootstrap", "200"])
    assert result.exit_code == 0, result.output
    assert "stu-a" in result.output  # the ranking is printed
    return out / "report.html"


def test_report_is_one_self_contained_file(report: Path) -> None:
    page = report.read_text(encoding="utf-8")
    assert page.count("plotly.js v") == 1  # the bundle, embedded once
    # nothing is loaded from elsewhere: no external scripts, styles, images or fonts
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=[\"']?(https?:)?//", page)
    assert "cdn." not in page.split("plotly.js v")[0]
    for section in (
        "overview",
        "ranking",
        "breakdowns",
        "judges",
        "agreement",
        "teachers",
        "bias",
        "coverage",
        "references",
        "quality",
    ):
        assert f'id="{section}"' in page and f'href="#{section}"' in page


@pytest.mark.slow
@pytest.mark.browser
def test_report_renders_in_headless_chromium(report: Path, browser, tmp_path: Path) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    problems: list[str] = []
    requests: list[str] = []
    page.on(
        "console",
        lambda m: problems.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None,
    )
    page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(report.as_uri())
    page.wait_for_selector("body[data-charts-drawn]", timeout=60_000)
    n_charts = int(page.get_attribute("body", "data-charts-drawn") or 0)
    assert n_charts >= 8
    assert page.locator(".figure .main-svg").count() >= n_charts  # plotly drew every chart
    assert page.locator(".figure .heatmaplayer, .figure .barlayer, .figure .scatterlayer").count() >= n_charts
    assert problems == []
    assert [u for u in requests if not u.startswith("file://")] == []

    # sortable tables: clicking a header orders the rows by that column
    table = page.locator("#ranking table")
    table.locator("th", has_text="headline").click()
    cells = table.locator("tbody tr td:nth-child(3)").all_inner_texts()
    values = [float(c) for c in cells]
    assert values == sorted(values, reverse=True)
    table.locator("th", has_text="headline").click()
    values = [float(c) for c in table.locator("tbody tr td:nth-child(3)").all_inner_texts()]
    assert values == sorted(values)

    # navigation: a link scrolls its section into view and is highlighted
    page.click('nav a[href="#agreement"]')
    page.wait_for_function("document.querySelector('#agreement').getBoundingClientRect().top < 200")
    # the highlight follows the scroll event, which the browser delivers after the scroll itself
    page.wait_for_function("document.querySelector('nav a[href=\"#agreement\"]').classList.contains('active')",
                           timeout=5_000)
    assert "active" in (page.get_attribute('nav a[href="#agreement"]', "class") or "")

    page.evaluate("window.scrollTo(0, 0)")
    shot_dir = Path(os.environ.get("COEVAL_TEST_ARTIFACTS", tmp_path))
    shot_dir.mkdir(parents=True, exist_ok=True)
    shot = shot_dir / "analysis-report.png"
    page.screenshot(path=str(shot), full_page=False)
    assert shot.stat().st_size > 20_000
    page.close()


def test_intervals_are_labelled_with_the_level_asked_for(tmp_path: Path) -> None:
    """`--level 0.9` gives 90% intervals: the report and the printed ranking say 90%, not 95%."""
    from coeval_testing.synthetic import SyntheticSpec, write_synthetic_run

    run = write_synthetic_run(tmp_path / "run", SyntheticSpec(seed=4, datapoints_per_teacher=5))
    out = tmp_path / "analysis"
    result = CliRunner().invoke(
        cli, ["analyze", "--run", str(run), "--out", str(out), "--bootstrap", "50", "--level", "0.9"]
    )
    assert result.exit_code == 0, result.output
    assert "90% CI" in result.output and "95%" not in result.output
    from coeval_analysis.reports.html import plotly_js

    page = (out / "report.html").read_text(encoding="utf-8").replace(plotly_js(), "")
    assert "90% CI" in page and "90% interval" in page
    assert "95%" not in page


def test_no_bootstrap_says_there_are_no_intervals(tmp_path: Path) -> None:
    from coeval_testing.synthetic import SyntheticSpec, write_synthetic_run

    run = write_synthetic_run(tmp_path / "run", SyntheticSpec(seed=4, datapoints_per_teacher=5))
    out = tmp_path / "analysis"
    result = CliRunner().invoke(cli, ["analyze", "--run", str(run), "--out", str(out), "--bootstrap", "0"])
    assert result.exit_code == 0, result.output
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "no intervals were computed" in page and "(0 resamples)" not in page


@pytest.mark.slow
@pytest.mark.browser
def test_charts_of_a_run_without_spread_keep_their_scales(browser, tmp_path: Path) -> None:
    """One student, every score High, no failures: the score axis stays within [0, 1] and
    the failure-rate axis does not run negative (plotly's autorange would draw 0..2 and -1..1)."""
    from .runs import datapoint, evaluation, response, write_run

    dps = [datapoint("t", "teach", i + 1, color="red") for i in range(4)]
    resps = [response(dp, "s1") for dp in dps]
    run = write_run(
        tmp_path / "r",
        rubric={"accuracy": "Correct."},
        datapoints=dps,
        responses=resps,
        evaluations=[evaluation(r, j, {"accuracy": "High"}) for r in resps for j in ("j1", "j2")],
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["analyze", "--run", str(run), "--out", str(out), "--bootstrap", "20"])
    assert result.exit_code == 0, result.output
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.goto((out / "report.html").as_uri())
    page.wait_for_selector("body[data-charts-drawn]", timeout=60_000)

    def axis(fid: str, name: str) -> list[float]:
        return page.evaluate(f"document.getElementById('{fid}')._fullLayout.{name}.range")

    low, high = axis("fig-ranking", "xaxis")
    assert low >= 0 and high <= 1.05
    low, high = axis("fig-failures", "xaxis")
    assert low >= 0 and high <= 1.05
    low, high = axis("fig-weights", "xaxis")
    assert low >= 0
    zmin, zmax = page.evaluate(
        "[document.getElementById('fig-task')._fullData[0].zmin, "
        "document.getElementById('fig-task')._fullData[0].zmax]"
    )
    assert zmin >= 0 and zmax <= 1
    page.close()


def test_agreement_section_says_why_it_is_empty(tmp_path: Path) -> None:
    """One judge: the report says agreement needs two, and what a dash stands for."""
    from .runs import datapoint, evaluation, response, write_run

    dps = [datapoint("t", "teach", i + 1) for i in range(3)]
    resps = [response(dp, s) for dp in dps for s in ("s1", "s2")]
    run = write_run(
        tmp_path / "r",
        rubric={"accuracy": "Correct."},
        datapoints=dps,
        responses=resps,
        evaluations=[evaluation(r, "j1", {"accuracy": "High"}) for r in resps],
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["analyze", "--run", str(run), "--out", str(out), "--report", "html"])
    assert result.exit_code == 0, result.output
    page = (out / "report.html").read_text(encoding="utf-8")
    agreement = page.split('id="agreement"')[1].split("<section")[0]
    assert "at least two LLM judges" in agreement
    assert "— marks" in agreement


def test_attribute_heatmap_keeps_values_of_different_tasks_apart(tmp_path: Path) -> None:
    """Two tasks with an attribute value of the same name: the heatmap has a row for each,
    with that task's scores, instead of silently showing one task's numbers for both."""
    import json

    from coeval_testing.synthetic import SyntheticSpec, write_synthetic_run

    run = write_synthetic_run(tmp_path / "run", SyntheticSpec(seed=4, datapoints_per_teacher=6))
    out = tmp_path / "analysis"
    result = CliRunner().invoke(cli, ["analyze", "--run", str(run), "--out", str(out), "--bootstrap", "20"])
    assert result.exit_code == 0, result.output
    page = (out / "report.html").read_text(encoding="utf-8")
    island = page.split('id="coeval-figures">')[1].split("</script>")[0]
    heat = json.loads(island)["fig-attribute"]["data"][0]
    table = json.loads((out / "summary.json").read_text())["breakdowns"]["attribute"]
    expected = {(r["task"], r["slice"], r["student"]): r["score"] for r in table}
    assert len(heat["y"]) == len({(t, s) for t, s, _ in expected})  # one row per task and value
    shown = 0
    for row, label in zip(heat["z"], heat["y"], strict=True):
        task = next(t for t in ("task-1", "task-2") if t in label)
        value = label.replace(task, "").strip(" ()·:")
        for student, z in zip(heat["x"], row, strict=True):
            assert z == pytest.approx(expected[(task, value, student)], abs=1e-4), (label, student)
            shown += 1
    assert shown == len(expected)


def test_gold_section_says_what_its_numbers_are(report: Path) -> None:
    """The gold figures come with what they correlate, and the unweighted mean beside the
    judge-weighted one, so a reader can see whether the weighting brought the judges closer
    to gold."""
    import json

    summary = json.loads((report.parent / "summary.json").read_text())
    page = report.read_text(encoding="utf-8")
    section = page.split('id="references"')[1].split("<section")[0]
    assert "per response" in section and "gold ranking" in section
    plain = summary["gold"]["plain_vs_gold"]["pearson"]
    assert f"{plain:.3f}" in section and "plain mean vs gold" in section


def test_teacher_and_bias_sections_explain_their_columns(report: Path) -> None:
    page = report.read_text(encoding="utf-8")
    teachers = page.split('id="teachers"')[1].split("<section")[0].split("<table")[0]
    for term in ("Discrimination", "Separation", "Ranking agreement", "Mean score", "Datapoint weights"):
        assert term in teachers, term
    bias = page.split('id="bias"')[1].split("<section")[0].split("<table")[0]
    assert "—" in bias and "no unrelated" in bias  # why a bias can be missing
    assert "within" in bias.lower()  # the within-datapoint correlation is explained


def test_the_kappa_matrix_scale_spans_the_pairs_not_the_diagonal() -> None:
    from coeval_analysis.reports.figures import matrix_figure as _matrix_figure

    pairs = [
        {"a": "j1", "b": "j2", "kappa": 0.3},
        {"a": "j1", "b": "j3", "kappa": -0.12},
        {"a": "j2", "b": "j3", "kappa": None},
    ]
    trace = _matrix_figure(["j1", "j2", "j3"], pairs, "kappa", "κ")["data"][0]
    assert trace["z"] == [[None, 0.3, -0.12], [0.3, None, None], [-0.12, None, None]]
    assert trace["text"] == [["—", "0.30", "-0.12"], ["0.30", "—", ""], ["-0.12", "", "—"]]
    assert (trace["zmin"], trace["zmax"]) == (-0.3, 0.3)
    faint = _matrix_figure(["j1", "j2"], [{"a": "j1", "b": "j2", "kappa": 0.02}], "kappa", "κ")["data"][0]
    assert (faint["zmin"], faint["zmax"]) == (-0.1, 0.1)


def test_the_data_quality_table_speaks_in_words(report: Path) -> None:
    from coeval_analysis.loading.run_data import DataQuality
    from coeval_analysis.reports.quality_labels import DATA_QUALITY_LABELS, PHASE_LABELS, quality_rows

    fields = DataQuality().as_dict()
    plain = {k for k, v in fields.items() if not isinstance(v, dict)}
    assert plain == set(DATA_QUALITY_LABELS)  # every count has a label
    assert set(fields["datapoints"]) == set(fields["responses"]) == set(PHASE_LABELS)
    rows = quality_rows({**fields, "n_superseded_failures": 3, "missing_factors": {"clarity": 2}})
    assert rows[3] == {"what": "of those, failed attempts that a later record redid", "count": 3}
    assert rows[-1] == {"what": "missing rubric factor: clarity", "count": 2}
    assert {"what": "answers (phase 4): failed records", "count": 0} in rows
    assert not [r for r in rows if r["what"].startswith("n_") or "_" in r["what"].split(":")[0]]

    page = report.read_text(encoding="utf-8")
    section = page[page.index('id="quality"'):]
    section = section[: section.index("</section>")]
    assert "failed judge records (judge failures, never scored as Low)" in section
    assert "n_superseded_failures" not in section and "n_failed" not in section
