"""`coeval status` and `coeval repair` on healthy and damaged runs."""

from __future__ import annotations

import json

from click.testing import CliRunner
from coeval.cli.main import cli
from coeval.cli.status_cmd import collect_status

from .pipeline_support import (
    duplicate_ids,
    folder,
    make_config,
    meta,
    mock_model,
    ok_records,
    records,
    run,
    task,
)

PHASES = ["attribute_mapping", "rubric_mapping", "data_generation", "response_collection", "evaluation"]


def finished_run(tmp_path):
    cfg = make_config(tmp_path, [mock_model("a"), mock_model("b")], [task(total=2)])
    assert run(cfg).exit_code == 0
    return cfg, folder(cfg)


def test_status_of_a_finished_run(tmp_path):
    _, rf = finished_run(tmp_path)
    result = CliRunner().invoke(cli, ["status", "--run", str(rf.root), "--json"])
    assert result.exit_code == 0, result.output
    status = json.loads(result.output)
    assert status["experiment_id"] == "exp" and status["status"] == "completed"
    assert [p["state"] for p in status["phases"]] == ["complete"] * 5
    evaluation = status["phases"][-1]
    assert evaluation["total"] == {"expected": 16, "ok": 16, "failed": 0, "missing": 0}
    assert evaluation["groups"]["a"]["expected"] == 8
    assert evaluation["files"] == {"files": 4, "lines": 16, "bad_lines": 0, "duplicate_ids": 0}
    assert status["pending_batches"] == [] and status["recent_errors"] == []
    text = CliRunner().invoke(cli, ["status", "--run", str(rf.root)])
    assert text.exit_code == 0 and "response_collection" in text.output and "pending batches: none" in text.output


def test_status_of_a_missing_folder_is_a_clean_error(tmp_path):
    result = CliRunner().invoke(cli, ["status", "--run", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "no such run folder" in result.output
    assert "Traceback" not in result.output


def damage(rf):
    """A crash-cut line, a duplicate, an orphan, and a failed evaluation."""
    dp_path = sorted(rf.jsonl_files("data_generation"))[0]
    text = dp_path.read_text().splitlines(keepends=True)
    dp_path.write_text(text[0] + '{"id": "cut-by-a-crash", "prom\n' + "".join(text[1:]))
    resp_path = sorted(rf.jsonl_files("response_collection"))[0]
    first = resp_path.read_text().splitlines()[0]
    orphan = {**json.loads(first), "id": "qa__zz__00009__a", "datapoint_id": "qa__zz__00009"}
    with resp_path.open("a") as fh:
        fh.write(first + "\n" + json.dumps(orphan) + "\n")
    ev_path = sorted(rf.jsonl_files("evaluation"))[0]
    victim = json.loads(ev_path.read_text().splitlines()[0])
    failed = {**victim, "status": "failed", "scores": {}, "error": "unparseable: nonsense", "error_kind": "unparseable"}
    with ev_path.open("a") as fh:
        fh.write(json.dumps(failed) + "\n")
    return victim["id"]


def test_status_shows_damage_and_failures(tmp_path):
    _, rf = finished_run(tmp_path)
    damage(rf)
    status = collect_status(rf.root)
    phases = {p["phase"]: p for p in status["phases"]}
    assert phases["data_generation"]["files"]["bad_lines"] == 1
    assert phases["response_collection"]["files"]["duplicate_ids"] == 1
    assert phases["evaluation"]["total"]["failed"] == 1 and phases["evaluation"]["state"] == "incomplete"
    assert status["failures_by_cause"] == {"unparseable": 1}
    assert status["recent_errors"][-1]["error"] == "unparseable: nonsense"
    assert any("coeval repair" in n for n in status["notes"])


def test_repair_dry_run_changes_nothing_and_repair_makes_continue_complete(tmp_path):
    cfg, rf = finished_run(tmp_path)
    victim = damage(rf)
    before = {p: p.read_bytes() for p in rf.root.rglob("*") if p.is_file() and p.name != ".run.lock"}
    dry = CliRunner().invoke(cli, ["repair", "--run", str(rf.root), "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    report = json.loads(dry.output)
    assert report["totals"]["bad_lines"] == 1 and report["totals"]["duplicates"] == 2
    assert report["totals"]["orphans"] == 1 and report["totals"]["failed"] == 1
    assert {p: p.read_bytes() for p in before} == before

    fixed = CliRunner().invoke(cli, ["repair", "--run", str(rf.root)])
    assert fixed.exit_code == 0, fixed.output
    assert "reopened phases evaluation" in fixed.output
    for phase in PHASES[2:]:
        assert duplicate_ids(rf, phase) == []
        for path in rf.jsonl_files(phase):
            for line in path.read_text().splitlines():
                assert json.loads(line)["status"] == "ok"
    assert "qa__zz__00009__a" not in records(rf, "response_collection")
    assert victim not in records(rf, "evaluation")
    assert "evaluation" not in meta(rf)["phases_completed"]
    assert meta(rf)["repair_log"][-1]["orphans"] == 1

    calls = sum(meta(rf)["calls"].values())
    result = run(cfg, continue_run=True)
    assert result.exit_code == 0, result.message
    assert sum(meta(rf)["calls"].values()) == calls + 1  # only the judgement that had failed
    assert victim in ok_records(rf, "evaluation")
    assert meta(rf)["phases_completed"] == PHASES
    again = CliRunner().invoke(cli, ["repair", "--run", str(rf.root)])
    assert "nothing to repair" in again.output


def test_repair_rebuilds_an_unreadable_meta(tmp_path):
    cfg, rf = finished_run(tmp_path)
    rf.meta_path.write_text('{"experiment_id": "exp", "phases_comp')
    result = CliRunner().invoke(cli, ["repair", "--run", str(rf.root), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["meta_rebuilt"] is True
    m = meta(rf)
    assert m["experiment_id"] == "exp" and m["phases_completed"] == []
    assert run(cfg, continue_run=True).exit_code == 0
    assert meta(rf)["phases_completed"] == PHASES


def test_repair_refuses_a_folder_in_use(tmp_path):
    from coeval.storage.lock import RunLock

    _, rf = finished_run(tmp_path)
    with RunLock(rf.root):
        result = CliRunner().invoke(cli, ["repair", "--run", str(rf.root)])
    assert result.exit_code == 2 and "another coeval process" in result.output


def test_status_lists_pending_batch_jobs(tmp_path):
    from coeval.scheduler.batching.pending import PendingJob, PendingStore

    _, rf = finished_run(tmp_path)
    PendingStore(rf).add(PendingJob(job_id="batch_1", interface="openai", model="a", phase="evaluation",
                                    items={"r0": "x", "r1": "y"}, state="running"))
    status = collect_status(rf.root)
    assert status["pending_batches"] == [{"job_id": "batch_1", "interface": "openai", "model": "a",
                                          "phase": "evaluation", "submitted_at": status["pending_batches"][0]
                                          ["submitted_at"], "requests": 2, "state": "running",
                                          "polled_at": None, "message": ""}]
    text = CliRunner().invoke(cli, ["status", "--run", str(rf.root)])
    assert "batch_1" in text.output and "2 requests" in text.output


def test_status_tells_a_running_run_from_a_crashed_one(tmp_path):
    from coeval.storage.lock import RunLock

    _, rf = finished_run(tmp_path)
    rf.update_meta(lambda m: (m.__setitem__("status", "in_progress"),
                              m.__setitem__("phases_in_progress", ["evaluation"])))
    crashed = collect_status(rf.root)
    assert crashed["active"] is False and crashed["status"].startswith("stopped")
    with RunLock(rf.root, shared=True):
        running = collect_status(rf.root)
    assert running["active"] is True and running["status"] == "in_progress"


def test_status_never_calls_a_phase_complete_while_an_earlier_phase_has_gaps(tmp_path):
    # every teacher call fails: phases 4-5 expect nothing yet, which is not "complete"
    broken = mock_model("t", ["teacher"], replies={"": {"mock_error": "fatal", "message": "no such model"}})
    cfg = make_config(tmp_path, [broken, mock_model("s", ["student", "judge"])],
                      [task(total=2, rubric="auto")], probe_mode="disable")
    assert run(cfg).exit_code == 1
    states = {p["phase"]: p["state"] for p in collect_status(folder(cfg).root)["phases"]}
    assert states["rubric_mapping"] == "incomplete"
    for later in ("data_generation", "response_collection", "evaluation"):
        assert not states[later].startswith("complete"), states


def test_repair_logs_every_change_it_makes_even_without_reopening_a_phase(tmp_path):
    _, rf = finished_run(tmp_path)
    path = rf.jsonl_files("evaluation")[0]
    first = path.read_text().splitlines()[0]
    with path.open("a") as fh:  # a crash-cut copy of a whole record: no gap, just a bad line
        fh.write(first + "\n" + first[:40])
    fixed = CliRunner().invoke(cli, ["repair", "--run", str(rf.root)])
    assert fixed.exit_code == 0, fixed.output
    m = meta(rf)
    assert m["phases_completed"] == PHASES
    assert m["repair_log"][-1]["bad_lines"] == 1 and m["repair_log"][-1]["duplicates"] == 1


def test_a_running_phase_shows_in_progress_before_its_first_record(tmp_path):
    from coeval.storage.lock import RunLock

    _, rf = finished_run(tmp_path)
    for path in rf.jsonl_files("evaluation"):
        path.unlink()
    rf.update_meta(lambda m: (m.__setitem__("status", "in_progress"), m.__setitem__("phases_in_progress", ["evaluation"]),
                              m.__setitem__("phases_completed", PHASES[:4])))
    with RunLock(rf.root, shared=True):
        states = {p["phase"]: p["state"] for p in collect_status(rf.root)["phases"]}
    assert states["evaluation"] == "in progress"


def test_a_run_recorded_completed_with_gaps_in_its_table_is_reported_incomplete(tmp_path):
    _, rf = finished_run(tmp_path)
    ev = sorted(rf.jsonl_files("evaluation"))[0]
    ev.write_text("".join(ev.read_text().splitlines(keepends=True)[1:]))  # one judgment gone
    assert meta(rf)["status"] == "completed"
    status = collect_status(rf.root)
    assert status["status"] == "incomplete"
    assert [p["state"] for p in status["phases"]][-1] == "incomplete"
    assert status["notes"][-1] == (
        "recorded as completed, but these phases have gaps: evaluation (1 missing). "
        "`coeval run --config <your config> --continue` fills them"
    )
    quiet = CliRunner().invoke(cli, ["status", "--run", str(rf.root), "-q"])
    assert quiet.output == f"{rf.root}: incomplete\n"
    text = CliRunner().invoke(cli, ["status", "--run", str(rf.root)])
    assert "status: incomplete" in text.output and "status: completed" not in text.output
