"""The viewer's database built behind a running server (judgments first, "indexing n%"
meanwhile) and ahead of it (at the end of ``coeval run`` and ``coeval analyze``)."""

from __future__ import annotations

import json
import os
import re
import threading
import urllib.error
import urllib.request
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval_analysis.viewer import prebuild, queries, server
from coeval_analysis.viewer import store as store_module
from coeval_analysis.viewer.build import DATAPOINT_SUMMARY, JUDGMENTS_STEP, Step
from coeval_analysis.viewer.rowsql import datapoint_rows_sql
from coeval_analysis.viewer.server import ViewServer
from coeval_analysis.viewer.store import RunStore, cache_path

from tests.analysis.test_viewer import CONFIG

_VALUE = {"High": 1.0, "Medium": 0.5, "Low": 0.0}


def _means(run: Path) -> dict[str, float]:
    values: dict[str, list[float]] = defaultdict(list)
    for rec in _evaluations(run):
        values[rec["student_model_id"]].extend(_VALUE[v] for v in (rec.get("scores") or {}).values())
    return {s: sum(v) / len(v) for s, v in values.items()}


def _evaluations(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for p in sorted((run / "phase5_evaluations").glob("*.jsonl"))
            for line in p.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Builds wait for this event after the preliminary ranking, before their first table
    (set it to let them go; the test's end sets it anyway)."""
    gate = threading.Event()
    original = RunStore._run_steps

    def run_steps(self: RunStore, con: Any) -> None:
        assert gate.wait(60)
        original(self, con)

    monkeypatch.setattr(RunStore, "_run_steps", run_steps)
    monkeypatch.setattr(server, "FIRST_LOOK_S", 0.05)
    monkeypatch.setattr(server, "PAGE_WAIT_S", 0.05)
    yield gate
    gate.set()


@pytest.fixture
def serve() -> Iterator[Callable[[list[RunStore]], str]]:
    servers: list[ViewServer] = []

    def start(stores: list[RunStore]) -> str:
        srv = ViewServer(("127.0.0.1", 0), stores)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return srv.url.rstrip("/")

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()
        for store in srv.stores:
            store.close()


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as reply:
        return str(reply.read().decode("utf-8"))


def test_pages_say_indexing_until_the_records_are_read(
    make_run: Callable[..., Path], tmp_path: Path, held: threading.Event, serve: Callable[[list[RunStore]], str]
) -> None:
    run = make_run("r", datapoints_per_teacher=2)
    store = RunStore(run, cache=tmp_path / "cache", background=True)
    url = serve([store])
    assert store.preliminary_ranking(timeout=30)  # read before the build proper (held here)
    start = _get(url + "/r/0/")
    assert 'id="indexing"' in start and 'http-equiv="refresh"' in start
    assert 'id="ranking"' not in start
    # a preliminary ranking read straight from the files (this run has no retries or
    # duplicates: it is the final one), and the models the run's config names
    expected = _means(run)
    table = start.split('id="preliminary-ranking"')[1].split("</table>")[0]
    shown = re.findall(r'class="student-link"[^>]*>([^<]+)</a></td><td>([0-9.]+)</td>', table)
    assert [s for s, _ in shown] == sorted(expected, key=lambda s: -expected[s])
    assert {s: float(v) for s, v in shown} == pytest.approx(expected, abs=5e-4)
    assert start.count('class="student-link"') == 5 and 'id="outline-judges"' in start
    assert 'id="indexing"' in _get(url + "/r/0/failures")
    status = json.loads(_get(url + "/api/status"))["runs"][0]
    assert status == {"run": "r", "ready": False, "judgments_ready": False, "progress": 0.0,
                      "step": "ranking the students", "error": None, "warnings": []}
    held.set()
    assert store.wait(timeout=60)
    assert json.loads(_get(url + "/api/status"))["runs"][0]["ready"] is True
    start = _get(url + "/r/0/")
    assert 'id="indexing"' not in start and start.count('class="student-link"') == 5
    assert not list((tmp_path / "cache").glob("*.part"))  # the database was put in place
    assert cache_path(run, tmp_path / "cache").exists()


def _summary_with_leaderboard(rows: list[tuple[str, float]]) -> dict[str, Any]:
    """A summary.json holding only a leaderboard: (student, headline) best first, no intervals."""
    from coeval_analysis.leaderboard import build_leaderboard

    board = build_leaderboard(
        [{"student": s, "rank": i, "rank_range": None, "rank_label": str(i), "headline": h,
          "headline_ci": [None, None], "determined": None, "not_determined": None,
          "evidence": {"judged": {"score": h, "ci": [None, None], "n": 2}}} for i, (s, h) in enumerate(rows, 1)],
        [{"key": "judged", "kind": "judged", "title": "judged", "in_headline": True}],
        {}, "the headline is the judged score", 0.95, False,
    )  # fmt: skip
    return {"students": {s: {"score": h} for s, h in rows}, "leaderboard": board}


def test_while_indexing_the_last_analysis_ranking_is_shown(
    make_run: Callable[..., Path], tmp_path: Path, held: threading.Event, serve: Callable[[list[RunStore]], str]
) -> None:
    run = make_run("r", datapoints_per_teacher=2)
    (run / "analysis").mkdir()
    summary = _summary_with_leaderboard([("stu-b", 0.6), ("stu-a", 0.5)])
    (run / "analysis" / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    url = serve([RunStore(run, cache=tmp_path / "cache", background=True)])
    page = _get(url + "/r/0/")
    table = page.split('id="analysis-ranking"')[1].split("</table>")[0]
    assert table.index(">stu-b</a>") < table.index(">stu-a</a>")  # the analysis's order, not re-sorted
    assert '<td class="num">0.600</td><td class="num">—</td><td class="num">0.600</td>' in table
    # the whole leaderboard, as the start page shows it once the records are read
    assert '<p id="tiers"><b>Tiers:</b> stu-b and stu-a, not separable</p>' in page
    assert '<p id="combined">The headline is the judged score.</p>' in page
    held.set()


def test_a_stale_analysis_ranking_is_not_shown(make_run: Callable[..., Path]) -> None:
    from coeval_analysis.viewer.outline import analysis_ranking

    run = make_run("r", datapoints_per_teacher=2)
    (run / "analysis").mkdir()
    path = run / "analysis" / "summary.json"
    path.write_text(json.dumps(_summary_with_leaderboard([("stu-a", 0.5)])), encoding="utf-8")
    assert analysis_ranking(run) == [{"#": "1", "student": "stu-a", "headline": "0.500", "95% CI": "—",
                                      "judged": "0.500"}]
    newest = max(p.stat().st_mtime_ns for p in (run / "phase5_evaluations").glob("*.jsonl"))
    os.utime(path, ns=(newest - 10**9, newest - 10**9))  # written before the last records
    assert analysis_ranking(run) == []
    path.write_text(json.dumps({"students": {"stu-a": {"score": 0.7, "robust_score": 0.5}}}), encoding="utf-8")
    assert analysis_ranking(run) == []  # written before the leaderboard: run coeval analyze again


def test_the_stored_datapoint_table_is_the_computed_one(make_run: Callable[..., Path], tmp_path: Path) -> None:
    run = make_run("r", datapoints_per_teacher=3, failure_rate=0.05, seed=5)
    store = RunStore(run, cache=tmp_path / "cache")
    assert store.has_table(DATAPOINT_SUMMARY)
    stored = store.query(f"SELECT * FROM {DATAPOINT_SUMMARY} ORDER BY datapoint_id")
    computed = store.query(f"SELECT * FROM ({datapoint_rows_sql()}) ORDER BY datapoint_id")
    assert len(stored) == 3 * 2 * 3  # teachers x tasks x datapoints per teacher
    for mine, theirs in zip(stored, computed, strict=True):
        assert mine[:5] == theirs[:5] and mine[5:] == pytest.approx(theirs[5:])
    rows, total = queries.datapoint_table(store, queries.Filters(sort="disagreement"))
    assert total == len(stored)
    assert [r["disagreement"] for r in rows] == sorted((r[6] for r in stored if r[6] is not None), reverse=True)[:50]


def test_gap_sort_under_a_filter_compares_the_two_students(make_run: Callable[..., Path], tmp_path: Path) -> None:
    run = make_run("r", datapoints_per_teacher=3, seed=6)
    kept = {r["id"]: r for r in _evaluations(run)}  # no duplicates in this run
    per: dict[tuple[str, str], list[float]] = defaultdict(list)
    for rec in kept.values():
        if rec["judge_model_id"] == "judge-2":
            per[rec["datapoint_id"], rec["student_model_id"]].extend(_VALUE[v] for v in rec["scores"].values())
    expected = {
        dp: sum(per[dp, "stu-a"]) / len(per[dp, "stu-a"]) - sum(per[dp, "stu-e"]) / len(per[dp, "stu-e"])
        for dp, student in per if student == "stu-a"
    }
    f = queries.Filters.from_query({"judge": "judge-2", "sort": "gap", "a": "stu-a", "b": "stu-e"})
    rows, total = queries.datapoint_table(RunStore(run, cache=tmp_path / "cache"), f)
    assert total == len(expected)
    assert {r["datapoint_id"]: r["gap"] for r in rows} == pytest.approx(expected)
    gaps = [abs(r["gap"]) for r in rows]
    assert gaps == sorted(gaps, reverse=True)


def test_prebuild_builds_only_big_runs(make_run: Callable[..., Path], tmp_path: Path) -> None:
    run = make_run("r", datapoints_per_teacher=2)
    cache = tmp_path / "cache"
    assert prebuild.prebuild(run, cache=cache) is None  # small: the viewer reads it at once anyway
    assert not cache.exists() or not list(cache.glob("*.duckdb"))
    db = prebuild.prebuild(run, cache=cache, min_bytes=0)
    assert db == cache_path(run, cache) and db.exists()
    assert RunStore(run, cache=cache).ready  # opened, not built again


def test_coeval_run_and_analyze_report_viewer_build_the_database_ahead(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prebuild, "MIN_BYTES", 0)
    (tmp_path / "exp.yaml").write_text(CONFIG, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    env = {"COEVAL_VIEW_CACHE": str(tmp_path / "cache")}
    done = CliRunner().invoke(cli, ["run", "--config", "exp.yaml", "-q"], env=env)
    assert done.exit_code in (0, 1), done.output
    run = tmp_path / "runs" / "view-test"
    assert cache_path(run, tmp_path / "cache").exists()

    for db in (tmp_path / "cache").glob("*.duckdb"):
        db.unlink()
    done = CliRunner().invoke(cli, ["analyze", "--run", str(run), "--quiet", "--bootstrap", "0"], env=env)
    assert done.exit_code == 0, done.output
    assert (run / "analysis" / "report.html").exists()
    assert not cache_path(run, tmp_path / "cache").exists()  # the viewer report is written only when asked
    done = CliRunner().invoke(cli, ["analyze", "--run", str(run), "--report", "viewer", "--quiet",
                                    "--bootstrap", "0"], env=env)
    assert done.exit_code == 0, done.output
    assert cache_path(run, tmp_path / "cache").exists()
    assert not (run / "analysis").exists() or not list((run / "analysis").glob("*.duckdb"))


def test_a_continue_that_finds_nothing_to_do_builds_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prebuild, "MIN_BYTES", 0)
    (tmp_path / "exp.yaml").write_text(CONFIG.replace("malformed_rate: 0.5", "malformed_rate: 0"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    env = {"COEVAL_VIEW_CACHE": str(tmp_path / "cache")}
    done = CliRunner().invoke(cli, ["run", "--config", "exp.yaml", "-q"], env=env)
    assert done.exit_code == 0, done.output
    db = cache_path(tmp_path / "runs" / "view-test", tmp_path / "cache")
    assert db.exists()
    db.unlink()
    done = CliRunner().invoke(cli, ["run", "--config", "exp.yaml", "--continue", "-q"], env=env)
    assert done.exit_code == 0, done.output
    assert not db.exists()  # no record written: nothing to build


def test_a_run_that_cannot_be_read_is_a_clear_error(make_run: Callable[..., Path], tmp_path: Path,
                                                     serve: Callable[[list[RunStore]], str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    run = make_run("r", datapoints_per_teacher=2)

    def unreadable(_run: Path, _files: Any = None) -> list[Step]:  # DuckDB fails on the first statement
        return [Step(JUDGMENTS_STEP, f"CREATE TABLE judgments AS SELECT * FROM read_json('{tmp_path}/gone.jsonl')", 1)]

    monkeypatch.setattr(store_module, "build_steps", unreadable)
    store = RunStore(run, cache=tmp_path / "cache", background=True)
    url = serve([store])
    assert store.wait(timeout=60)
    status = json.loads(_get(url + "/api/status"))["runs"][0]
    assert status["ready"] is False and status["error"].startswith(f"reading the records of {run} failed: ")
    with pytest.raises(urllib.error.HTTPError) as page:
        _get(url + "/r/0/")
    body = page.value.read().decode()
    assert page.value.code == 500 and f"reading the records of {run} failed" in body and "Traceback" not in body
    assert not list((tmp_path / "cache").glob("*"))  # no half-built database left behind
    result = CliRunner().invoke(cli, ["export", "--run", str(run), "--format", "csv", "--out", str(tmp_path / "j.csv")],
                                env={"COEVAL_VIEW_CACHE": str(tmp_path / "cache")})
    assert result.exit_code == 2
    assert f"coeval export: reading the records of {run} failed" in result.output and "Traceback" not in result.output


def test_a_folder_among_the_records_is_refused_before_any_build(make_run: Callable[..., Path], tmp_path: Path) -> None:
    """Not a regular file: the run-file guard names it, exit code 2 (docs/security.md)."""
    run = make_run("r", datapoints_per_teacher=2)
    broken = run / "phase5_evaluations" / "broken.jsonl"
    broken.mkdir()
    for args in (["export", "--run", str(run), "--format", "csv", "--out", str(tmp_path / "j.csv")],
                 ["view", "--run", str(run), "--no-browser", "--port", "0"]):
        result = CliRunner().invoke(cli, args, env={"COEVAL_VIEW_CACHE": str(tmp_path / "cache")})
        assert result.exit_code == 2, result.output
        assert f"error: {broken}: is a folder, not a regular file" in result.output and "Traceback" not in result.output
    assert not list((tmp_path / "cache").glob("*.duckdb"))


def test_a_cache_folder_that_cannot_be_made_is_a_usage_error(make_run: Callable[..., Path], tmp_path: Path) -> None:
    run = make_run("r", datapoints_per_teacher=2)
    (tmp_path / "file").write_text("not a folder", encoding="utf-8")
    cache = tmp_path / "file" / "cache"
    for args in (["view", "--run", str(run), "--no-browser", "--port", "0"],
                 ["export", "--run", str(run), "--format", "csv", "--out", str(tmp_path / "j.csv")]):
        result = CliRunner().invoke(cli, args, env={"COEVAL_VIEW_CACHE": str(cache)})
        assert result.exit_code == 2, result.output
        assert f"cannot use the cache folder {cache}" in result.output and "COEVAL_VIEW_CACHE" in result.output
        assert "Traceback" not in result.output
