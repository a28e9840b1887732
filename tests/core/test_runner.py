"""The runner: quotas and budgets, flaky providers, determinism, secrets, plugins, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from coeval.cli.status_cmd import collect_status
from coeval.plugins.manager import reset_plugins

from .pipeline_support import (
    duplicate_ids,
    folder,
    lines,
    make_config,
    meta,
    mock_model,
    ok_records,
    records,
    run,
    task,
)

PHASES = ["attribute_mapping", "rubric_mapping", "data_generation", "response_collection", "evaluation"]


def test_mock_smoke_counts(tmp_path):
    cfg = make_config(tmp_path, [mock_model("a"), mock_model("b")], [task(total=5)])
    result = run(cfg)
    assert result.exit_code == 0 and result.status == "completed"
    assert result.counts()["data_generation"]["written"] == 10
    assert result.counts()["response_collection"]["written"] == 20
    assert result.counts()["evaluation"]["written"] == 40
    assert meta(folder(cfg))["phases_completed"] == PHASES


def test_a_quota_caps_one_model_while_the_others_finish_and_continue_fills_exactly_the_gaps(tmp_path):
    models = [mock_model("capped", ["student"]), mock_model("free")]
    cfg = make_config(tmp_path, models, [task(total=4)], quota={"capped": {"max_calls": 3}})
    result = run(cfg)
    assert result.exit_code == 3  # a graceful stop: nothing failed
    rf = folder(cfg)
    m = meta(rf)
    assert m["calls"]["capped"] == 3
    responses = ok_records(rf, "response_collection")
    assert sum(r["student_model_id"] == "capped" for r in responses.values()) == 3
    assert sum(r["student_model_id"] == "free" for r in responses.values()) == 4
    # the free model judged everything that exists
    assert len(ok_records(rf, "evaluation")) == 7
    assert "response_collection" not in m["phases_completed"]
    capped = collect_status(rf.root)["models"][0]
    assert capped == {"model": "capped", "calls": 3, "max_calls": 3, "quota_reached": True, "spend_usd": 0.0,
                      "estimated_calls": 4, "estimated_usd": 0.0}  # the run kept its estimate: 4 planned
    # the quota holds across restarts: --continue without raising it makes no call
    same = run(cfg, continue_run=True)
    assert same.exit_code == 3 and meta(rf)["calls"]["capped"] == 3
    raised = make_config(tmp_path, models, [task(total=4)], quota={"capped": {"max_calls": 10}})
    final = run(raised, continue_run=True)
    assert final.exit_code == 0, final.message
    assert meta(rf)["calls"]["capped"] == 4  # exactly the one missing answer
    assert final.phases["evaluation"].written == 1
    for phase in PHASES[2:]:
        assert duplicate_ids(rf, phase) == []


def test_a_budget_stops_new_calls_and_the_spend_is_kept(tmp_path):
    cfg = make_config(tmp_path, [mock_model("m", cost_per_call_usd=0.01)], [task(total=5)], budget_usd=0.08)
    result = run(cfg)
    assert result.exit_code == 3
    rf = folder(cfg)
    spend = meta(rf)["spend_usd"]["m"]
    assert 0.08 <= spend <= 0.08 + 0.01 * 16  # calls in flight when the budget is hit still finish
    calls = meta(rf)["calls"]["m"]
    assert calls < 15
    status = collect_status(rf.root)
    assert status["budget_reached"] and status["budget_usd"] == 0.08
    again = run(cfg, continue_run=True)
    assert again.exit_code == 3 and meta(rf)["calls"]["m"] == calls


def test_flaky_provider_every_item_completes_within_the_attempt_bound(tmp_path):
    flaky = {"failure_rate": 0.2, "malformed_rate": 0.05, "rate_limit_rate": 0.05, "seed": 3}
    cfg = make_config(tmp_path, [mock_model("a", **flaky), mock_model("b", **flaky)], [task(total=4)],
                      generation_retries=2)
    result = run(cfg)
    assert result.exit_code == 0, result.message
    rf = folder(cfg)
    all_lines = [rec for phase in PHASES[2:] for rec in lines(rf, phase)]
    assert len(all_lines) == 8 + 16 + 32  # one ok line per item, nothing failed
    attempts = [rec["attempts"] for rec in all_lines]
    assert max(attempts) > 1  # faults really happened
    assert max(attempts) <= 6  # the scheduler's bound on calls per item
    m = meta(rf)
    assert sum(m["calls"].values()) == sum(attempts)


def test_unparseable_judge_replies_are_failures_never_scores(tmp_path):
    judge = mock_model("judge", ["judge"], replies={"You are grading": "I think it is pretty good overall!"})
    cfg = make_config(tmp_path, [mock_model("m", ["teacher", "student"]), judge], [task(total=2)],
                      generation_retries=1)
    result = run(cfg)
    assert result.exit_code == 1
    rf = folder(cfg)
    evs = records(rf, "evaluation")
    assert len(evs) == 2
    for ev in evs.values():
        assert ev["status"] == "failed" and ev["scores"] == {}
        assert ev["error_kind"] == "unparseable" and ev["attempts"] == 2
    status = collect_status(rf.root)
    assert status["failures_by_cause"] == {"unparseable": 2}
    evaluation = next(p for p in status["phases"] if p["phase"] == "evaluation")
    assert evaluation["total"]["failed"] == 2 and evaluation["state"] == "incomplete"


def test_same_config_and_seed_draw_the_same_attributes(tmp_path):
    def draws(exp_id, seed):
        cfg = make_config(tmp_path, [mock_model("m")], [task(total=6)], exp_id=exp_id, seed=seed)
        assert run(cfg).exit_code == 0
        return {k: (v["sampled_target_attributes"], v["prompt"]) for k, v in records(folder(cfg), "data_generation").items()}

    first, second, other = draws("one", 11), draws("two", 11), draws("three", 12)
    assert first == second
    assert [a for a, _ in first.values()] != [a for a, _ in other.values()]


def test_secrets_stay_out_of_the_run_folder(tmp_path):
    secret = "sk-test-SECRET-0123456789"
    model = mock_model("m", replies={"Write one test item": [{"mock_error": "fatal", "message": f"bad key {secret}"}]})
    model["access_key"] = secret
    model["parameters"]["api_key"] = secret
    cfg = make_config(tmp_path, [model], [task(total=1)])
    run(cfg)
    rf = folder(cfg)
    for path in rf.root.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path
    failed = [r for r in lines(rf, "data_generation") if r["status"] == "failed"]
    assert failed and "***" in failed[0]["error"]
    snapshot = yaml.safe_load(rf.config_path.read_text())
    assert "access_key" not in snapshot["models"][0] and "api_key" not in snapshot["models"][0]["parameters"]


def test_an_interface_whose_distribution_is_missing_fails_before_any_call(tmp_path, monkeypatch):
    cfg = make_config(tmp_path, [mock_model("m", ["teacher"]),
                                 {"name": "gpt", "interface": "openai", "roles": ["student", "judge"],
                                  "parameters": {"model": "gpt-4o-mini"}}], [task(total=1)])
    monkeypatch.setenv("COEVAL_DISABLE_PLUGINS", "providers")
    reset_plugins()
    try:
        result = run(cfg)
    finally:
        monkeypatch.delenv("COEVAL_DISABLE_PLUGINS")
        reset_plugins()
    assert result.exit_code == 2
    assert result.message == (
        "model 'gpt': interface 'openai' needs coeval-providers, "
        "which is installed but disabled (COEVAL_DISABLE_PLUGINS names 'providers')"
    )
    assert not folder(cfg).root.exists()  # nothing written, so a fixed config can start fresh


def test_the_config_snapshot_loads_back(tmp_path):
    from coeval.plugins.config_loading import read_config_snapshot

    cfg = make_config(tmp_path, [mock_model("m", seed=4)], [task(total=2, label_attributes=["topic"])],
                      quota={"m": {"max_calls": 100}}, budget_usd=5.0, seed=9)
    run(cfg)
    back = read_config_snapshot(folder(cfg))
    assert back is not None
    assert back.models == cfg.models and back.tasks == cfg.tasks
    assert back.experiment == cfg.experiment


def _write_yaml(tmp_path: Path, exp_id: str, total: int, latency: list[int]) -> Path:
    config = {
        "models": [mock_model("a", latency_ms=latency), mock_model("b", latency_ms=latency)],
        "tasks": [task(total=total)],
        "experiment": {"id": exp_id, "storage_folder": str(tmp_path / "runs")},
    }
    path = tmp_path / f"{exp_id}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _coeval(*args: str) -> subprocess.Popen:
    code = "import sys; from coeval.cli.main import main; main(sys.argv[1:])"
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "COLUMNS": "120"})


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_continue_finishes(tmp_path):
    # answers take 0.3-1.5 s: phase 3 is still running when its first datapoint lands
    path = _write_yaml(tmp_path, "interrupted", total=6, latency=[300, 1500])
    rf_root = tmp_path / "runs" / "interrupted"
    proc = _coeval("run", "--config", str(path))
    deadline = time.monotonic() + 60
    dp_file = rf_root / "phase3_datapoints"
    while time.monotonic() < deadline and not (dp_file.is_dir() and any(dp_file.iterdir())):
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    m = json.loads((rf_root / "meta.json").read_text())
    assert m["status"] == "interrupted"
    assert m["runs"][-1]["exit_code"] == 130
    # the calls in flight were finished and written; nothing after them was started
    assert "evaluation" not in m["phases_completed"]
    # every line written is whole
    for f in rf_root.rglob("*.jsonl"):
        for line in f.read_text().splitlines():
            json.loads(line)
    proc = _coeval("run", "--config", str(path), "--continue")
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    from coeval.storage.run_folder import RunFolder

    rf = RunFolder(rf_root)
    assert len(ok_records(rf, "evaluation")) == 48
    for phase in PHASES[2:]:
        assert duplicate_ids(rf, phase) == []


def test_a_failed_probe_stops_the_run_before_anything_is_written(tmp_path):
    broken = mock_model("broken", ["student"], replies={"Reply with the word OK": {"mock_error": "fatal",
                                                                                    "message": "unknown model"}})
    cfg = make_config(tmp_path, [mock_model("m", ["teacher", "judge"]), broken], [task(total=1)], probe_mode="full")
    result = run(cfg)
    assert result.exit_code == 2
    assert "broken" in result.message and "unknown model" in result.message
    assert not folder(cfg).root.exists()
    warn = make_config(tmp_path, [mock_model("m", ["teacher", "judge"]), broken], [task(total=1)],
                       probe_mode="full", probe_on_fail="warn")
    assert run(warn).exit_code == 0
    assert run(cfg, continue_run=True, probe_mode="disable").exit_code == 0


def test_a_transient_error_during_the_probe_is_retried_not_fatal(tmp_path):
    # one 503 or 429 while probing is load, not a broken model: the run must not be refused
    flaky = mock_model("flaky", ["student"], replies={"Reply with the word OK": [
        {"mock_error": "transient"}, {"mock_error": "rate_limit", "retry_after": 0.01}]})
    cfg = make_config(tmp_path, [mock_model("m", ["teacher", "judge"]), flaky], [task(total=1)], probe_mode="full")
    result = run(cfg)
    assert result.exit_code == 0, result.message


def _calls_in_records(rf, model):
    by = {"data_generation": "teacher_model_id", "response_collection": "student_model_id",
          "evaluation": "judge_model_id"}
    return sum(r.get("attempts", 0) for ph, field in by.items() for r in lines(rf, ph) if r.get(field) == model)


def test_calls_lost_with_a_killed_process_still_count_against_the_quota(tmp_path):
    models = [mock_model("a", ["student"]), mock_model("b", ["teacher", "judge"])]
    assert run(make_config(tmp_path, models, [task(total=2)])).exit_code == 0
    rf = folder(make_config(tmp_path, models, [task(total=2)]))
    made = _calls_in_records(rf, "a")
    assert made == 2
    # a kill -9 before the call counter reached meta.json: the records are there, the counts are not
    m = meta(rf)
    m["calls"], m["status"] = {}, "in_progress"
    (rf.root / "meta.json").write_text(json.dumps(m))
    capped = make_config(tmp_path, models, [task(total=3)], quota={"a": {"max_calls": made}})
    result = run(capped, continue_run=True)
    assert result.exit_code == 3, result.message  # a had used its quota already
    assert _calls_in_records(rf, "a") == made
    assert meta(rf)["calls"]["a"] == made


def test_generation_retries_above_the_default_attempt_bound_are_honoured(tmp_path):
    # the judge answers prose seven times, then a valid score: generation_retries 7 must get there
    judge = mock_model("j", ["judge"], replies=["I would rather not say."] * 7)
    cfg = make_config(tmp_path, [mock_model("m", ["teacher", "student"]), judge], [task(total=1)],
                      generation_retries=7)
    assert run(cfg).exit_code == 0
    (evaluation,) = ok_records(folder(cfg), "evaluation").values()
    assert evaluation["attempts"] == 8


def test_a_server_error_does_not_use_up_the_retries_the_config_asks_for(tmp_path):
    # a 503 (a replica restarting), then prose five times, then a valid score: with
    # generation_retries 5 the judge has its five retries for the prose besides the 503
    judge = mock_model("j", ["judge"], replies=[{"mock_error": "transient"}] + ["I would rather not say."] * 5)
    cfg = make_config(tmp_path, [mock_model("m", ["teacher", "student"]), judge], [task(total=1)],
                      generation_retries=5)
    assert run(cfg).exit_code == 0
    (evaluation,) = ok_records(folder(cfg), "evaluation").values()
    assert evaluation["attempts"] == 7


def test_only_a_process_that_never_finished_triggers_the_recount():
    from coeval.run.runner import _a_process_stopped_unfinished

    finished = {"status": "completed", "runs": [{"run_id": "a", "started_at": "t", "finished_at": "t"}]}
    assert not _a_process_stopped_unfinished(finished)
    killed_shard = {"status": "completed", "runs": [*finished["runs"], {"run_id": "b", "started_at": "t"}]}
    assert _a_process_stopped_unfinished(killed_shard)
    assert _a_process_stopped_unfinished({"status": "in_progress", "runs": finished["runs"]})
    assert not _a_process_stopped_unfinished({})
