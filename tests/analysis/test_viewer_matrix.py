"""The viewer's matrix, search, diff and failures pages in headless Chromium, against a
real ``coeval view`` process on a mock run (one judge replies unparseably half the time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from coeval_analysis.viewer.diff import diff_html
from coeval_analysis.viewer.matrix import level_of

from tests.analysis.test_viewer import CONFIG, _coeval
from tests.analysis.viewer_wait import serve_view

_VALUE = {"High": 1.0, "Medium": 0.5, "Low": 0.0}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    root = tmp_path_factory.mktemp("matrix")
    (root / "exp.yaml").write_text(CONFIG, encoding="utf-8")
    env = {**os.environ, "COEVAL_VIEW_CACHE": str(root / "cache")}
    done = _coeval("run", "--config", "exp.yaml", cwd=root, env=env)
    assert done.returncode in (0, 1), done.stderr
    run = root / "runs" / "view-test"
    for url in serve_view(["--run", str(run)], env, root):
        yield url + "/r/0", run


def _evaluations(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for f in sorted((run / "phase5_evaluations").glob("*.jsonl"))
            for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]


def _cell_means(run: Path) -> dict[tuple[str, str], float]:
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for rec in _evaluations(run):
        values[(rec["datapoint_id"], rec["student_model_id"])].extend(_VALUE[s] for s in (rec.get("scores") or {}).values())
    return {k: sum(v) / len(v) for k, v in values.items() if v}


@pytest.mark.slow
@pytest.mark.browser
def test_matrix_cells_are_each_answers_mean_score_coloured_by_level(served: tuple[str, Path], page: Any) -> None:
    base, run = served
    page.goto(base + "/matrix")
    students = page.locator("#matrix th.student").all_inner_texts()
    assert students == ["stu-good", "stu-weak"]
    rows = page.locator("#matrix tr.dp-row")
    assert rows.count() == 6
    means = _cell_means(run)
    for i in range(rows.count()):
        dp = rows.nth(i).locator("a.dp-link").inner_text()
        cells = rows.nth(i).locator("td.cell")
        for j, student in enumerate(students):
            cell = cells.nth(j)
            assert float(cell.inner_text()) == pytest.approx(means[(dp, student)], abs=0.005)
            assert f"level-{level_of(means[(dp, student)])}" in (cell.get_attribute("class") or "")
    # every cell counted once by its level; the mock's good student mostly High, its weak one Low
    for level in ("high", "medium", "low"):
        expected = sum(level_of(m) == level for m in means.values())
        assert page.locator(f"#matrix td.cell.level-{level}").count() == expected
    good = [m for (_, s), m in means.items() if s == "stu-good"]
    weak = [m for (_, s), m in means.items() if s == "stu-weak"]
    assert min(good) > max(weak)
    assert sum(level_of(m) == "high" for m in good) >= 4 and all(level_of(m) == "low" for m in weak)


@pytest.mark.slow
@pytest.mark.browser
def test_clicking_a_cell_expands_the_answer_and_its_judgments_inline(served: tuple[str, Path], page: Any) -> None:
    base, run = served
    page.goto(base + "/matrix")
    first = page.locator("#matrix tr.dp-row").first
    dp = first.locator("a.dp-link").inner_text()
    first.locator("td.cell").nth(1).click()
    expanded = page.locator("#matrix tr.expanded")
    expanded.wait_for()
    answer = next(json.loads(line) for f in (run / "phase4_responses").glob("*.jsonl")
                  for line in f.read_text(encoding="utf-8").splitlines()
                  if json.loads(line)["id"] == f"{dp}__stu-weak")
    assert expanded.locator("pre.answer-text").inner_text() == answer["response"]
    judges = expanded.locator(".judgment h4").all_inner_texts()
    assert judges == ["judged by judge-a", "judged by judge-flaky"]
    assert "diff with stu-good" in expanded.inner_text()
    assert page.url.endswith("/matrix")  # inline: no page change
    first.locator("td.cell").nth(1).click()  # the same cell again hides it
    expanded.wait_for(state="detached")


@pytest.mark.slow
@pytest.mark.browser
def test_keyboard_moves_between_cells_and_enter_expands(served: tuple[str, Path], page: Any) -> None:
    base, _ = served
    page.goto(base + "/matrix")
    rows = page.locator("#matrix tr.dp-row")
    selected = page.locator("#matrix td.cell.selected")
    assert selected.count() == 1 and selected.get_attribute("data-student") == "stu-good"
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("k")
    page.keyboard.press("l")
    second_dp = rows.nth(1).locator("a.dp-link").inner_text()
    assert rows.nth(1).locator("td.cell.selected").count() == 1
    assert selected.get_attribute("data-student") == "stu-weak"
    page.keyboard.press("Enter")
    expanded = page.locator("#matrix tr.expanded")
    expanded.wait_for()
    assert expanded.locator("h3").inner_text() == f"stu-weak on {second_dp}"
    # the expansion sits under the second datapoint's row
    assert page.locator("#matrix tr.dp-row:nth-of-type(3) + tr.expanded").count() == 1
    page.keyboard.press("Enter")
    expanded.wait_for(state="detached")
    page.keyboard.press("o")
    page.wait_for_url(f"**/datapoint/{second_dp}")
    assert page.locator("h1").inner_text() == f"Datapoint {second_dp}"


def _word_only_in_rationales(run: Path) -> tuple[str, set[str]]:
    """A word some rationale holds and no prompt or answer does, and the datapoints whose
    rationales hold it."""
    other = " ".join(json.loads(line).get(key) or "" for phase, key in (("phase3_datapoints", "prompt"),
                                                                        ("phase4_responses", "response"))
                     for f in (run / phase).glob("*.jsonl") for line in f.read_text(encoding="utf-8").splitlines())
    words = Counter(w for rec in _evaluations(run) for text in (rec.get("rationale") or {}).values()
                    for w in str(text).lower().split())
    word = next(w for w, _ in words.most_common() if w not in other.lower())
    where = {rec["datapoint_id"] for rec in _evaluations(run)
             if any(word in str(t).lower().split() for t in (rec.get("rationale") or {}).values())}
    return word, where


@pytest.mark.slow
@pytest.mark.browser
def test_search_finds_a_word_from_a_rationale(served: tuple[str, Path], page: Any) -> None:
    base, run = served
    word, datapoints = _word_only_in_rationales(run)
    page.goto(base + "/")
    page.fill("nav input[name=q]", word.upper())  # case does not matter
    page.press("nav input[name=q]", "Enter")
    page.wait_for_url("**/search?q=*")
    hits = page.locator("#hits tr.hit")
    assert {h for h in hits.locator("td:nth-child(1)").all_inner_texts()} == {"rationale"}
    assert set(hits.locator("a.dp-link").all_inner_texts()) == datapoints
    marks = page.locator("#hits mark").all_inner_texts()
    assert marks and {m.lower() for m in marks} == {word}
    n = sum(1 for rec in _evaluations(run)
            if any(word in str(t).lower() for t in (rec.get("rationale") or {}).values()))
    assert page.locator("#search-count").inner_text().startswith(f"{n} prompts, answers and rationales")


@pytest.mark.slow
@pytest.mark.browser
def test_datapoint_page_links_to_a_word_diff_of_two_answers(served: tuple[str, Path], page: Any) -> None:
    base, _ = served
    page.goto(base + "/matrix")
    page.locator("#matrix a.dp-link").first.click()
    page.click("#diff-link")
    page.wait_for_load_state()
    assert page.locator("select[name=a]").input_value() == "stu-good"
    assert page.locator("select[name=b]").input_value() == "stu-weak"
    assert page.locator("#diff del").count() > 0 and page.locator("#diff ins").count() > 0
    page.select_option("select[name=a]", "stu-weak")
    page.select_option("select[name=b]", "stu-good")
    page.click("#diff-pick button")
    page.wait_for_load_state()
    assert "words only in stu-weak" in page.locator("#diff-count").inner_text()


def test_word_diff_marks_what_each_answer_alone_holds() -> None:
    html, only_a, only_b = diff_html("The cat sat on the mat.", "The dog sat on a mat!")
    assert html == "The <del>cat</del><ins>dog</ins> sat on <del>the</del><ins>a</ins> mat<del>.</del><ins>!</ins>"
    assert (only_a, only_b) == (3, 3)
    assert diff_html("<b>", "<b>")[0] == "&lt;b&gt;"


def test_level_of_a_mean_score() -> None:
    assert [level_of(v) for v in (None, 0.0, 0.3, 0.34, 0.5, 0.66, 0.67, 1.0)] == [
        "none", "low", "low", "medium", "medium", "medium", "high", "high"]


@pytest.mark.slow
@pytest.mark.browser
def test_failures_group_identical_errors_and_list_rejected_teacher_replies(served: tuple[str, Path],
                                                                           page: Any) -> None:
    base, run = served
    failed = [r for r in _evaluations(run) if r.get("status") == "failed"]
    by_error = Counter(r["error"] for r in failed)
    assert failed and len(by_error) < len(failed)  # the flaky judge's replies fail with one message
    meta_path = run / "meta.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta["item_quality"] = {"rejected": {"stu-good": {"template_echo": 3, "near_duplicate": 1}}}
    meta_path.write_text(json.dumps(meta), encoding="utf-8")
    page.goto(base + "/failures")
    section = page.locator('section.cause[data-cause="unparseable"]')
    distinct = f"{len(by_error)} distinct error" + ("s" if len(by_error) > 1 else "")
    assert section.locator("h2").inner_text() == f"unparseable ({len(failed)} failed calls, {distinct})"
    first = sorted(r["id"] for r in failed if r["error"] == by_error.most_common(1)[0][0])
    assert section.locator("tr.error-group").first.locator("span.record-id").all_inner_texts() == first[:10]
    assert sorted(int(t) for t in section.locator("td.times").all_inner_texts()) == sorted(by_error.values())
    rejected = page.locator("section#rejected")
    assert rejected.locator("h2").inner_text() == "Rejected teacher replies (4 replies)"
    assert rejected.locator("tr").nth(1).inner_text().split("\t") == ["stu-good", "near_duplicate", "1"]


@pytest.mark.slow
@pytest.mark.browser
def test_counts_say_what_they_count(served: tuple[str, Path], page: Any) -> None:
    base, run = served
    page.goto(base + "/")
    assert page.locator("table#ranking th").all_inner_texts()[3] == "Factor scores"
    assert "Failed judgments" in page.locator("table#datapoints th").all_inner_texts()
    scores = Counter(rec["student_model_id"] for rec in _evaluations(run) for _ in (rec.get("scores") or {}))
    shown = {r.split("\t")[1]: int(r.split("\t")[3]) for r in page.locator("table#ranking tr").all_inner_texts()[1:]}
    assert shown == dict(scores)


@pytest.mark.slow
@pytest.mark.browser
def test_datapoint_table_counts_factor_scores_and_failed_judgments_apart(served: tuple[str, Path], page: Any) -> None:
    base, run = served
    page.goto(base + "/")
    records = _evaluations(run)
    scores = Counter(rec["datapoint_id"] for rec in records for _ in (rec.get("scores") or {}))
    failed = Counter(rec["datapoint_id"] for rec in records if rec.get("status") == "failed")
    assert sum(failed.values()) > 0
    for row in page.locator("table#datapoints tr").all_inner_texts()[1:]:
        cells = row.split("\t")
        assert (int(cells[3]), int(cells[4])) == (scores[cells[0]], failed[cells[0]]), cells[0]


@pytest.mark.slow
@pytest.mark.browser
def test_the_screenshot_script_writes_the_three_pages_and_the_reports_first_screen(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[2] / "scripts" / "viewer_screenshots.py"
    done = subprocess.run([sys.executable, str(script), "--out", str(tmp_path)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    shots = sorted(p.name for p in tmp_path.glob("*.png"))
    assert shots == ["report-leaderboard.png", "viewer-datapoint.png", "viewer-matrix.png", "viewer-start.png"]
    assert all((tmp_path / s).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for s in shots)
    docs = (Path(__file__).resolve().parents[2] / "docs" / "analysis.md").read_text(encoding="utf-8")
    assert all(f"images/{s}" in docs for s in shots)  # the committed copies are shown in the docs
