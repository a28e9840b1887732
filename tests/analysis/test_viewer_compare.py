"""The comparison page of ``coeval view`` in headless Chromium: a mock run and a run forked
from it with ``resume_from`` (one more student), served as ``--run A --run B`` and as
``--storage-folder F``, against the records themselves."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from tests.analysis.test_viewer import CONFIG, _coeval
from tests.analysis.viewer_wait import serve_view

pytestmark = [pytest.mark.browser, pytest.mark.slow]

_VALUE = {"High": 1.0, "Medium": 0.5, "Low": 0.0}
#: the fork: the same items (phases 1-3 kept), one student more (phases 4-5 extended)
FORK = CONFIG.replace(
    "  - name: judge-a\n",
    "  - name: stu-new\n    interface: mock\n    parameters: {seed: 5, quality: 0.6}\n    roles: [student]\n"
    "  - name: judge-a\n",
).replace("id: view-test", "id: view-fork\n  resume_from: view-test")


def _means(run: Path) -> dict[str, str]:
    """Each student's mean score over the run's ok judgments, as the page prints it
    (the last ok record of an id wins, as the store keeps it)."""
    kept: dict[str, dict[str, Any]] = {}
    for path in sorted((run / "phase5_evaluations").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            if rec.get("status") == "ok" or rec["id"] not in kept:
                kept[rec["id"]] = rec
    values: dict[str, list[float]] = defaultdict(list)
    for rec in kept.values():
        if rec.get("status") == "ok":
            values[rec["student_model_id"]].extend(_VALUE[s] for s in rec["scores"].values())
    return {s: f"{sum(v) / len(v):.3f}" for s, v in values.items()}


def _datapoint_ids(run: Path) -> set[str]:
    return {json.loads(line)["id"] for p in (run / "phase3_datapoints").glob("*.jsonl")
            for line in p.read_text(encoding="utf-8").splitlines()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """``runs/view-test`` and ``runs/view-fork`` (forked from it), made by ``coeval run``."""
    root = tmp_path_factory.mktemp("compare")
    (root / "exp.yaml").write_text(CONFIG, encoding="utf-8")
    (root / "fork.yaml").write_text(FORK, encoding="utf-8")
    env = {**os.environ, "COEVAL_VIEW_CACHE": str(root / "cache")}
    for config in ("exp.yaml", "fork.yaml"):
        done = _coeval("run", "--config", config, cwd=root, env=env)
        assert done.returncode in (0, 1), done.stderr
    return root, env


def _serve(args: list[str], cwd: Path, env: dict[str, str]) -> Generator[str, None, None]:
    yield from serve_view(args, env, cwd)


def _ranking(page: Any, k: int) -> dict[str, str]:
    rows = page.locator(f"table#ranking-{k} tr").all()[1:]
    cells = [r.locator("td").all_inner_texts() for r in rows]
    return {c[1]: c[2] for c in cells}


def _check_side_by_side(page: Any, url: str, root: Path, order: list[str]) -> None:
    page.goto(url + "/")
    assert page.locator("#compare .card h2").all_inner_texts() == order
    for k, name in enumerate(order):
        assert _ranking(page, k) == _means(root / "runs" / name)
    assert sorted(_ranking(page, order.index("view-fork"))) == ["stu-good", "stu-new", "stu-weak"]
    assert sorted(_ranking(page, order.index("view-test"))) == ["stu-good", "stu-weak"]
    # the fork kept every item of its source: all are shared, each linked in both runs
    shared = _datapoint_ids(root / "runs" / "view-test")
    assert _datapoint_ids(root / "runs" / "view-fork") == shared
    assert page.locator("#shared-count").inner_text().startswith(f"{len(shared)} datapoints")
    assert set(page.locator("table#shared tr td:first-child").all_inner_texts()) == shared


def test_two_runs_side_by_side_with_their_shared_datapoints(runs: tuple[Path, dict[str, str]], page: Any) -> None:
    root, env = runs
    server = _serve(["--run", "runs/view-test", "--run", "runs/view-fork"], root, env)
    url = next(server)
    try:
        _check_side_by_side(page, url, root, ["view-test", "view-fork"])
        first = page.locator("table#shared tr td:first-child").first.inner_text()
        page.locator("table#shared tr").nth(1).locator("a", has_text="in view-fork").click()
        page.wait_for_load_state()
        assert page.url == f"{url}/r/1/datapoint/{first}"
        answers = page.locator(".card.answer h3").all_inner_texts()
        assert sorted(answers) == ["stu-good", "stu-new", "stu-weak"]  # the fork's new student answered it too
    finally:
        server.close()


def test_storage_folder_lists_every_run(runs: tuple[Path, dict[str, str]], page: Any) -> None:
    root, env = runs
    server = _serve(["--storage-folder", "runs"], root, env)
    url = next(server)
    try:
        _check_side_by_side(page, url, root, ["view-fork", "view-test"])  # the folder's runs, by name
        page.locator("#compare .card h2 a", has_text="view-test").click()
        page.wait_for_load_state()
        assert page.url == url + "/r/1/"
        assert sorted(page.locator("table#ranking a.student-link").all_inner_texts()) == ["stu-good", "stu-weak"]
    finally:
        server.close()


def test_an_analysed_run_shows_its_leaderboard_beside_the_other(runs: tuple[Path, dict[str, str]], tmp_path: Path,
                                                                 page: Any) -> None:
    import shutil

    from coeval_analysis.leaderboard import leaderboard
    from coeval_analysis.leaderboard.view import leaderboard_table

    root, env = runs
    for name in ("view-test", "view-fork"):
        shutil.copytree(root / "runs" / name, tmp_path / name)
    done = _coeval("analyze", "--run", str(tmp_path / "view-test"), "-q", "--report", "summary", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    table = leaderboard_table(leaderboard(json.loads((tmp_path / "view-test" / "analysis" / "summary.json").read_text())))
    for url in _serve(["--run", str(tmp_path / "view-test"), "--run", str(tmp_path / "view-fork")], tmp_path, env):
        page.goto(url + "/")
        analysed = [r.locator("td").all_inner_texts() for r in page.locator("table#ranking-0 tr").all()[1:]]
        assert [tuple(c.strip() for c in row) for row in analysed] == list(table.rows)  # the leaderboard, as printed
        assert _ranking(page, 1) == _means(tmp_path / "view-fork")  # no analysis: the mean, said to be one
        assert "Mean score of the judgments (no current analysis)" in page.locator("#compare .card").nth(1).inner_text()
        break
