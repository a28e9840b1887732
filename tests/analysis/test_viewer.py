"""``coeval view`` in headless Chromium, against a real server process on a real run made
by ``coeval run`` on the mock interface (one judge replies unparseably half the time)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.analysis.viewer_wait import serve_view

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CONFIG = """\
models:
  - name: stu-good
    interface: mock
    parameters: {seed: 1, quality: 0.95}
    roles: [teacher, student]
  - name: stu-weak
    interface: mock
    parameters: {seed: 2, quality: 0.2}
    roles: [student]
  - name: judge-a
    interface: mock
    parameters: {seed: 3}
    roles: [judge]
  - name: judge-flaky
    interface: mock
    parameters: {seed: 4, malformed_rate: 0.5}
    roles: [judge]
tasks:
  - name: qa
    description: Answer a general-knowledge question in one sentence.
    output_description: One correct, complete sentence.
    target_attributes: {topic: [history, science]}
    nuanced_attributes: {phrasing: [direct]}
    sampling: {target: [1, 1], nuance: [1, 1], total: 6}
    rubric:
      correctness: "The answer is factually right."
      completeness: "The answer addresses the whole question."
    evaluation_mode: single
experiment:
  id: view-test
  storage_folder: ./runs
  generation_retries: 0
"""


def _coeval(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coeval.cli.main", *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=240, check=False)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A finished mock run and a ``coeval view`` process serving it."""
    root = tmp_path_factory.mktemp("view")
    (root / "exp.yaml").write_text(CONFIG, encoding="utf-8")
    env = {**os.environ, "COEVAL_VIEW_CACHE": str(root / "cache")}
    done = _coeval("run", "--config", "exp.yaml", cwd=root, env=env)
    assert done.returncode in (0, 1), done.stderr
    run = root / "runs" / "view-test"
    yield from _serve(run, root, env)


def _serve(run: Path, cwd: Path, env: dict[str, str]) -> Generator[tuple[str, Path], None, None]:
    """A ``coeval view`` process on ``run``, until the generator is closed."""
    for url in serve_view(["--run", str(run)], env, cwd):
        yield url, run


def _datapoint_ids(page: Any) -> list[str]:
    return [str(t) for t in page.locator("table#datapoints a.dp-link").all_inner_texts()]


def test_start_page_lists_the_students(served: tuple[str, Path], page: Any) -> None:
    url, _ = served
    page.goto(url + "/")
    students = page.locator("table#ranking a.student-link").all_inner_texts()
    assert sorted(students) == ["stu-good", "stu-weak"]
    assert students[0] == "stu-good"  # the better mock student ranks first
    assert len(_datapoint_ids(page)) == 6


def test_datapoint_link_shows_every_judges_raw_reply(served: tuple[str, Path], page: Any) -> None:
    url, _ = served
    page.goto(url + "/")
    first = _datapoint_ids(page)[0]
    page.locator("table#datapoints a.dp-link").first.click()
    page.wait_for_load_state()
    assert page.locator("h1").inner_text() == f"Datapoint {first}"
    judgments = page.locator(".card.judgment")
    assert judgments.count() == 4  # 2 students x 2 judges
    raws = page.locator(".card.judgment pre.judge-raw").all_inner_texts()
    assert len(raws) == 4 and all(r.strip() and r != "(not recorded)" for r in raws)
    headers = " ".join(page.locator(".card.judgment h3").all_inner_texts())
    assert "judge-a" in headers and "judge-flaky" in headers
    assert page.locator(".card.answer").count() == 2


def test_filters_and_disagreement_sort_change_the_table(served: tuple[str, Path], page: Any) -> None:
    url, _ = served
    page.goto(url + "/")
    count_all = page.locator("#count").inner_text()
    assert count_all.startswith("6 datapoints")
    page.select_option("select[name=score]", "Low")
    page.click("#filters button")
    page.wait_for_load_state()
    low_only = _datapoint_ids(page)
    assert "score=Low" in page.url
    assert 0 < len(low_only) <= 6
    # every mean on the Low-only page is 0: only Low judgments remain
    means = page.locator("table#datapoints tr td:nth-child(6)").all_inner_texts()
    assert means and all(m == "0.000" for m in means)

    page.goto(url + "/")
    by_id = _datapoint_ids(page)
    page.select_option("select[name=sort]", "disagreement")
    page.click("#filters button")
    page.wait_for_load_state()
    disputed = _datapoint_ids(page)
    values = [float(v) for v in page.locator("table#datapoints td.disagreement").all_inner_texts() if v]
    assert sorted(disputed) == sorted(by_id)
    assert values == sorted(values, reverse=True)
    assert values[0] > values[-1]  # the judges do not agree equally on every item
    assert disputed != by_id


def test_failure_explorer_shows_an_unparseable_reply(served: tuple[str, Path], page: Any) -> None:
    url, _ = served
    page.goto(url + "/")
    page.click("nav >> text=Failures")
    page.wait_for_load_state()
    section = page.locator('section.cause[data-cause="unparseable"]')
    assert section.count() == 1
    assert re.fullmatch(r"unparseable \(\d+ failed calls?, \d+ distinct errors?\)", section.locator("h2").inner_text())
    raw = section.locator("pre.failure-raw").first.inner_text()
    assert raw.strip()  # the reply the judge actually sent, kept although it did not parse
    assert "judge-flaky" in section.locator("table").inner_text()


def test_report_links_into_the_running_viewer(served: tuple[str, Path], page: Any, tmp_path: Path) -> None:
    url, run = served
    env = {**os.environ, "COEVAL_VIEW_URL": url}
    done = _coeval("analyze", "--run", str(run), "--out", str(tmp_path / "a"), "--bootstrap", "0", "--quiet",
                   cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    page.goto((tmp_path / "a" / "report.html").as_uri())
    page.click("#viewer-find")
    page.locator("#viewer-failures").wait_for(timeout=10_000)
    # the sections themselves now link to the matching viewer pages, through /open (a navigation)
    jumps = {sec: urlsplit(page.locator(f"section#{sec} p.viewer-jump a").get_attribute("href") or "")
             for sec in ("ranking", "judges", "agreement", "missing", "quality")}
    assert {f"{j.scheme}://{j.netloc}{j.path}" for j in jumps.values()} == {url + "/open"}
    assert {sec: parse_qs(j.query) for sec, j in jumps.items()} == {
        sec: {"run": [str(run.resolve())], "to": [to]} for sec, to in (
            ("ranking", "/"), ("judges", "/?sort=disagreement"), ("agreement", "/?sort=disagreement"),
            ("missing", "/failures"), ("quality", "/failures"))}
    page.click("section#quality p.viewer-jump a")
    page.wait_for_load_state()
    assert page.locator('section.cause[data-cause="unparseable"]').count() == 1
    page.go_back()
    page.click("#viewer-find")
    page.locator("#viewer-start").wait_for(timeout=10_000)
    page.click("#viewer-start")
    page.wait_for_load_state()
    assert page.url.startswith(url + "/r/0/")
    assert sorted(page.locator("table#ranking a.student-link").all_inner_texts()) == ["stu-good", "stu-weak"]


def test_a_legacy_run_is_browsable(tmp_path: Path, page: Any) -> None:
    from coeval_testing.synthetic import SyntheticSpec, write_synthetic_run

    run = write_synthetic_run(tmp_path / "legacy", SyntheticSpec(old_format=True, datapoints_per_teacher=2))
    server = _serve(run, tmp_path, {**os.environ, "COEVAL_VIEW_CACHE": str(tmp_path / "cache")})
    url, _ = next(server)
    try:
        page.goto(url + "/")
        assert page.locator("table#ranking a.student-link").all_inner_texts()[0] == "stu-a"  # the best student
        page.locator("table#datapoints a.dp-link").first.click()
        page.wait_for_load_state()
        raws = page.locator(".card.judgment pre.judge-raw").all_inner_texts()
        assert len(raws) == 25 and set(raws) == {"(not recorded)"}  # 5 students x 5 judges; old records have no raw
    finally:
        server.close()
