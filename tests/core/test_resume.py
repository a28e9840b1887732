"""--continue and resume_from: the seed docs' resume examples, and what may not be resumed."""

from __future__ import annotations

import json

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

KEEP_EXTEND = {"attribute_mapping": "Keep", "rubric_mapping": "Keep", "data_generation": "Keep",
               "response_collection": "Extend", "evaluation": "Extend"}
KEEP_MODEL = {**KEEP_EXTEND, "response_collection": "Model", "evaluation": "Model"}


def test_seed_example_2_resume_an_interrupted_run_under_a_new_id(tmp_path):
    models = [mock_model("teach", ["teacher"]), mock_model("stud", ["student", "judge"])]
    v1 = make_config(tmp_path, models, [task(total=4)], exp_id="summarise-v1", quota={"stud": {"max_calls": 5}})
    first = run(v1)
    assert first.exit_code == 3  # stopped by the quota only
    v1_folder = folder(v1)
    assert len(ok_records(v1_folder, "response_collection")) == 4
    assert len(ok_records(v1_folder, "evaluation")) == 1
    v1_lines = {p.name: p.read_text() for p in v1_folder.root.rglob("*.jsonl")}

    v2 = make_config(tmp_path, models, [task(total=4)], exp_id="summarise-v2", resume_from="summarise-v1",
                     phases=KEEP_EXTEND)
    second = run(v2)
    assert second.exit_code == 0, second.message
    rf = folder(v2)
    assert len(ok_records(rf, "data_generation")) == 4
    assert len(ok_records(rf, "response_collection")) == 4
    assert len(ok_records(rf, "evaluation")) == 4
    m = meta(rf)
    assert m["phases_completed"] == list(KEEP_EXTEND)
    assert m["calls"].get("teach", 0) == 0  # phases 1-3 kept, nothing regenerated
    assert m["calls"]["stud"] == 3  # only the three missing evaluations
    assert m["forked_from"]["experiment_id"] == "summarise-v1"
    assert m["forked_from"]["phases_copied"] == list(KEEP_EXTEND)
    # the source run is untouched
    assert {p.name: p.read_text() for p in v1_folder.root.rglob("*.jsonl")} == v1_lines


def test_seed_example_3_add_a_new_student_to_a_finished_experiment(tmp_path):
    v1 = make_config(tmp_path, [mock_model("gpt4o")], [task(total=3)], exp_id="summarise-v1")
    assert run(v1).exit_code == 0
    v5 = make_config(
        tmp_path,
        [mock_model("gpt4o", ["teacher", "judge"]), mock_model("llama3-8b", ["student"])],
        [task(total=3)],
        exp_id="summarise-v5",
        resume_from="summarise-v1",
        phases=KEEP_MODEL,
    )
    result = run(v5)
    assert result.exit_code == 0, result.message
    rf = folder(v5)
    responses = ok_records(rf, "response_collection")
    new = {k: v for k, v in responses.items() if v["student_model_id"] == "llama3-8b"}
    assert len(new) == 3 and len(responses) == 6  # the old student's answers are kept
    evaluations = ok_records(rf, "evaluation")
    assert len(evaluations) == 6
    assert {e["student_model_id"] for e in evaluations.values() if e["id"] not in records(folder(v1), "evaluation")} \
        == {"llama3-8b"}
    calls = meta(rf)["calls"]
    assert calls == {"gpt4o": 3, "llama3-8b": 3}  # 3 judgements of the new student, 3 answers
    assert result.phases["data_generation"].calls == 0
    for phase in ("data_generation", "response_collection", "evaluation"):
        assert duplicate_ids(rf, phase) == []


def test_resume_from_accepts_a_path_and_a_new_phase_starts_empty(tmp_path):
    v1 = make_config(tmp_path, [mock_model("m")], [task(total=2)], exp_id="v1")
    assert run(v1).exit_code == 0
    modes = {**KEEP_EXTEND, "data_generation": "New", "response_collection": "New", "evaluation": "New"}
    v2 = make_config(tmp_path, [mock_model("m")], [task(total=2)], exp_id="v2",
                     resume_from=str(folder(v1).root), phases=modes)
    assert run(v2).exit_code == 0
    m = meta(folder(v2))
    assert m["forked_from"]["phases_copied"] == ["attribute_mapping", "rubric_mapping"]
    assert m["calls"]["m"] == 2 + 2 + 2


def test_rubric_extend_merges_new_factors_onto_the_inherited_rubric(tmp_path):
    v1 = make_config(tmp_path, [mock_model("m")], [task(total=1)], exp_id="v1")
    assert run(v1).exit_code == 0
    teacher = mock_model("m", replies={"scoring criteria": {"factors": [
        {"name": "correctness", "description": "Ignored: inherited wins."},
        {"name": "depth", "description": "Goes beyond the obvious."}]}})
    v2 = make_config(tmp_path, [teacher], [task(total=1, rubric="extend")], exp_id="v2", resume_from="v1",
                     phases={**KEEP_EXTEND, "rubric_mapping": "New"})
    assert run(v2).exit_code == 0
    rubric = json.loads(folder(v2).rubric_path("qa").read_text())
    assert rubric == {"correctness": "The answer is right.", "clarity": "The answer is clear.",
                      "depth": "Goes beyond the obvious."}
    # the old single-mode evaluation lacked 'depth': it is scored again, with every factor
    ev = ok_records(folder(v2), "evaluation")
    assert len(ev) == 1 and set(next(iter(ev.values()))["scores"]) == {"correctness", "clarity", "depth"}


def test_continue_skips_completed_phases_and_makes_no_call(tmp_path):
    cfg = make_config(tmp_path, [mock_model("m")], [task(total=2)])
    assert run(cfg).exit_code == 0
    before = meta(folder(cfg))["calls"]
    again = run(cfg, continue_run=True)
    assert again.exit_code == 0
    assert {p: r.status for p, r in again.phases.items()} == dict.fromkeys(KEEP_EXTEND, "skipped")
    assert meta(folder(cfg))["calls"] == before


def test_continue_after_raising_total_fills_only_the_new_slots(tmp_path):
    cfg = make_config(tmp_path, [mock_model("m")], [task(total=2)])
    assert run(cfg).exit_code == 0
    bigger = make_config(tmp_path, [mock_model("m")], [task(total=3)])
    result = run(bigger, continue_run=True)
    assert result.exit_code == 0
    rf = folder(cfg)
    assert sorted(records(rf, "data_generation")) == [f"qa__m__{i:05d}" for i in (1, 2, 3)]
    assert result.phases["data_generation"].written == 1
    assert result.phases["response_collection"].written == 1
    assert result.phases["evaluation"].written == 1
    for phase in ("data_generation", "response_collection", "evaluation"):
        assert duplicate_ids(rf, phase) == []


def test_continue_needs_an_existing_run_of_the_same_experiment(tmp_path, capsys):
    cfg = make_config(tmp_path, [mock_model("m")], [task(total=1)])
    result = run(cfg, continue_run=True)
    assert result.exit_code == 2 and "V-14" in result.message
    assert not folder(cfg).root.exists()
    assert run(cfg).exit_code == 0
    meta_path = folder(cfg).meta_path
    data = json.loads(meta_path.read_text())
    data["experiment_id"] = "someone-else"
    meta_path.write_text(json.dumps(data))
    result = run(cfg, continue_run=True)
    assert result.exit_code == 2 and "someone-else" in result.message
    assert "someone-else" in capsys.readouterr().err


def test_a_new_run_refuses_an_existing_folder(tmp_path):
    cfg = make_config(tmp_path, [mock_model("m")], [task(total=1)])
    assert run(cfg).exit_code == 0
    result = run(cfg)
    assert result.exit_code == 2 and "--continue" in result.message


def test_continue_runs_phases_4_and_5_for_an_ingested_benchmark_teacher(tmp_path):
    cfg = make_config(tmp_path, [mock_model("m")], [task(total=1)])
    assert run(cfg).exit_code == 0
    rf = folder(cfg)
    # what `coeval ingest` leaves: datapoints of a virtual teacher, an ingest_log entry
    bench_task = {"name": "arc", "description": "Pick the right option.", "output_description": "A letter.",
                  "target_attributes": {"grade": ["g3"]}, "rubric": {"correct": "The option is right."}}
    dp = {"id": "arc__arc-bench__q1", "task_id": "arc", "teacher_model_id": "arc-bench", "prompt": "2+2? A) 4 B) 5",
          "reference_response": "A", "sampled_target_attributes": {}, "status": "ok"}
    path = rf.datapoints_path("arc", "arc-bench")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dp) + "\n")
    rf.update_meta(lambda m: (m.setdefault("ingest_log", []).append(
        {"benchmark": "arc", "task": bench_task, "teacher": {"name": "arc-bench", "interface": "benchmark",
                                                              "roles": ["teacher"]}}),
        m.__setitem__("phases_completed", [p for p in m["phases_completed"]
                                           if p not in ("response_collection", "evaluation")])))
    result = run(cfg, continue_run=True)
    assert result.exit_code == 0, result.message
    assert result.phases["data_generation"].status == "skipped"
    assert result.phases["response_collection"].written == 1
    assert result.phases["evaluation"].written == 1
    assert "arc__arc-bench__q1__m" in ok_records(rf, "response_collection")


def test_continue_warns_when_the_configs_static_rubric_no_longer_matches_the_run(tmp_path):
    cfg = make_config(tmp_path, [mock_model("m")], [task(total=1)])
    assert run(cfg).exit_code == 0
    edited = make_config(tmp_path, [mock_model("m")],
                         [task(total=1, rubric={"correctness": "The answer is right.", "tone": "Polite."})])
    assert run(edited, continue_run=True).exit_code == 0
    rf = folder(cfg)
    # the run keeps scoring with the rubric it started with, and says so instead of staying silent
    assert "tone" not in json.loads((rf.root / "phase2_rubric" / "qa.rubric.json").read_text())
    events = [json.loads(line) for line in (rf.root / "run.log").read_text().splitlines()]
    stale = [e for e in events if e.get("level") == "warning" and e.get("phase") == "rubric_mapping"
             and "differs" in e.get("event", "")]
    assert stale and stale[0]["task"] == "qa", events[-5:]
