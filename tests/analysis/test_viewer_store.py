"""The viewer's DuckDB store, export and comparison, on synthetic runs with known content
(the new format and the legacy one)."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval_analysis.viewer import queries
from coeval_analysis.viewer.server import shared_datapoints
from coeval_analysis.viewer.store import RunStore

_VALUE = {"High": 1.0, "Medium": 0.5, "Low": 0.0}


def _last_by_id(run: Path) -> dict[str, dict[str, Any]]:
    """What the store must keep: per id, an ok record over a failed one, then the latest."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted((run / "phase5_evaluations").glob("*.jsonl")):
        for line in path.open(encoding="utf-8"):
            rec = json.loads(line)
            old = out.get(rec["id"])
            if old is None or rec.get("scores") or not old.get("scores"):
                out[rec["id"]] = rec
    return out


def _expected_means(run: Path) -> dict[str, float]:
    values: dict[str, list[float]] = defaultdict(list)
    for rec in _last_by_id(run).values():
        student = rec.get("student_model_id") or rec["response_id"][len(rec["datapoint_id"]) + 2:]
        values[student].extend(_VALUE[s] for s in (rec.get("scores") or {}).values())
    return {s: sum(v) / len(v) for s, v in values.items()}


@pytest.fixture
def store_of(tmp_path: Path) -> Callable[[Path], RunStore]:
    def make(run: Path) -> RunStore:
        return RunStore(run, cache=tmp_path / "cache")

    return make


@pytest.mark.parametrize("old_format", [False, True])
def test_ranking_matches_the_records_in_both_formats(
    make_run: Callable[..., Path], store_of: Callable[[Path], RunStore], old_format: bool
) -> None:
    run = make_run("r", old_format=old_format, failure_rate=0.05, duplicate_rate=0.05, seed=3)
    rows = queries.ranking(store_of(run))
    expected = _expected_means(run)
    assert [r["student"] for r in rows] == sorted(expected, key=lambda s: -expected[s])
    for r in rows:
        assert r["mean"] == pytest.approx(expected[r["student"]])


def test_export_writes_one_row_per_judgment(make_run: Callable[..., Path], tmp_path: Path) -> None:
    run = make_run("r", failure_rate=0.05, seed=4)
    records = _last_by_id(run)
    n_scores = sum(len(r["scores"]) for r in records.values() if r.get("scores"))
    n_failed = sum(1 for r in records.values() if not r.get("scores"))
    assert n_failed > 0
    out = tmp_path / "j.parquet"
    result = CliRunner().invoke(cli, ["export", "--run", str(run), "--format", "parquet", "--out", str(out)],
                                env={"COEVAL_VIEW_CACHE": str(tmp_path / "cache")})
    assert result.exit_code == 0, result.output
    table = pd.read_parquet(out)
    assert len(table) == n_scores + n_failed
    assert list(table.columns[:12]) == ["datapoint_id", "response_id", "sample", "samples", "evaluation_id", "task",
                                        "teacher", "student", "judge", "factor", "level", "score"]
    one = next(r for r in records.values() if r.get("scores"))
    mine = table[table.evaluation_id == one["id"]].set_index("factor")["level"].to_dict()
    assert mine == one["scores"]
    assert int(table.factor.isna().sum()) == n_failed


def test_shared_datapoints_of_a_forked_run(make_run: Callable[..., Path], store_of: Callable[[Path], RunStore],
                                           tmp_path: Path) -> None:
    first = make_run("a", datapoints_per_teacher=4)
    second = tmp_path / "b"
    shutil.copytree(first, second)
    dp_file = sorted((second / "phase3_datapoints").glob("*.jsonl"))[0]
    lines = dp_file.read_text(encoding="utf-8").splitlines()
    changed = json.loads(lines[0])
    changed["prompt"] = "a different item under the same id"
    dp_file.write_text("\n".join([json.dumps(changed), *lines[2:]]) + "\n", encoding="utf-8")  # one changed, one gone
    total = sum(1 for p in (first / "phase3_datapoints").glob("*.jsonl") for _ in p.open())
    shown, n = shared_datapoints(store_of(first), store_of(second))
    assert n == total - 2
    assert changed["id"] not in {r["id"] for r in shown}


def test_view_of_a_folder_that_is_no_run_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["view", "--run", str(tmp_path), "--no-browser"])
    assert result.exit_code == 2
    assert f"--run {tmp_path}: not a run folder" in result.output
    assert "Traceback" not in result.output


def test_a_run_that_grew_is_read_again_and_its_old_cache_dropped(
    make_run: Callable[..., Path], store_of: Callable[[Path], RunStore], tmp_path: Path
) -> None:
    run = make_run("r", datapoints_per_teacher=2)
    before = store_of(run).query("SELECT count(*) FROM evals")[0][0]
    path = sorted((run / "phase5_evaluations").glob("*.jsonl"))[0]
    rec = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    rec["id"] += "__extra"
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(rec) + "\n")
    assert store_of(run).query("SELECT count(*) FROM evals")[0][0] == before + 1
    assert len(list((tmp_path / "cache").glob("*.duckdb"))) == 1


def test_storage_folder_puts_every_runs_ranking_side_by_side(make_run: Callable[..., Path], tmp_path: Path) -> None:
    import threading
    import urllib.request

    from coeval_analysis.viewer.cli import _runs
    from coeval_analysis.viewer.server import ViewServer

    make_run("runs/first", datapoints_per_teacher=2, seed=1)
    make_run("runs/second", datapoints_per_teacher=2, seed=2)
    (tmp_path / "runs" / "not-a-run").mkdir()
    found = _runs((), tmp_path / "runs")
    assert [p.name for p in found] == ["first", "second"]
    server = ViewServer(("127.0.0.1", 0), [RunStore(p, cache=tmp_path / "cache") for p in found])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with urllib.request.urlopen(server.url, timeout=30) as reply:
            page = reply.read().decode()
        with urllib.request.urlopen(server.url + "api/ping", timeout=30) as reply:
            ping = json.loads(reply.read())
    finally:
        server.shutdown()
        server.server_close()
    assert 'id="ranking-0"' in page and 'id="ranking-1"' in page
    assert '<a href="/r/0/">first</a>' in page and '<a href="/r/1/">second</a>' in page
    # same synthetic items (same ids and prompts) in both: all shared
    n = sum(1 for p in (found[0] / "phase3_datapoints").glob("*.jsonl") for _ in p.open())
    assert f'<p id="shared-count">{n} datapoints' in page
    assert ping == {"runs": [str(p.resolve()) for p in found]}
