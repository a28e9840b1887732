"""The five phases on the mock: teacher phases, sampling, judging, evaluators, failures."""

from __future__ import annotations

import itertools
import json

import pytest
from coeval import hookimpl

from .pipeline_support import (
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

TARGET_PROMPT = "covering every combination"  # words of the map_target_attrs template
NUANCED_PROMPT = "surface variation"  # map_nuanced_attrs
RUBRIC_PROMPT = "scoring criteria"  # autorubric


@pytest.fixture
def recording(recording_mock):
    """Route every `mock` model through RecordingMock."""
    return recording_mock


def test_auto_attributes_and_rubric_merge_teachers_and_keep_seeds(tmp_path, recording):
    a = mock_model("teacher-a", ["teacher"], replies={
        TARGET_PROMPT: {"attributes": [{"name": "Difficulty", "values": ["easy", "hard"]},
                                       {"name": "topic", "values": ["science"]}]},
        NUANCED_PROMPT: {"attributes": [{"name": "tone", "values": ["dry"]}]},
        RUBRIC_PROMPT: {"factors": [{"name": "accuracy", "description": "Right facts."}]},
    })
    b = mock_model("teacher-b", ["teacher"], replies={
        TARGET_PROMPT: {"difficulty": ["Easy", "expert"]},
        NUANCED_PROMPT: {"attributes": [{"name": "Tone", "values": ["warm", "dry"]}]},
        RUBRIC_PROMPT: {"factors": [{"name": "Accuracy", "description": "Other wording."},
                                    {"name": "style", "description": "Reads well."}]},
    })
    c = mock_model("worker", ["student", "judge"])
    cfg = make_config(tmp_path, [a, b, c], [task(target_attributes="auto", nuanced_attributes="auto", rubric="auto",
                                                 target_attributes_seed={"topic": ["history"]}, total=4)])
    result = run(cfg)
    assert result.exit_code == 0, result.message
    rf = folder(cfg)
    target = json.loads(rf.target_attrs_path("qa").read_text())
    assert target == {"topic": ["history", "science"], "difficulty": ["easy", "hard", "expert"]}
    assert json.loads(rf.nuanced_attrs_path("qa").read_text()) == {"tone": ["dry", "warm"]}
    rubric = json.loads(rf.rubric_path("qa").read_text())
    assert rubric == {"accuracy": "Right facts.", "style": "Reads well."}
    # phase 3 draws only from the merged map; judges score the merged rubric
    for dp in ok_records(rf, "data_generation").values():
        for k, v in dp["sampled_target_attributes"].items():
            assert v in target[k]
    for ev in ok_records(rf, "evaluation").values():
        assert set(ev["scores"]) == {"accuracy", "style"}
    # structured output for teachers and judges, none for students
    by_role = {}
    for _model, req in recording:
        by_role.setdefault(req.role, set()).add((req.schema_name, req.json_schema is not None))
    assert by_role["teacher"] == {("target_attributes", True), ("nuanced_attributes", True), ("rubric", True),
                                  ("datapoint", True)}
    assert by_role["student"] == {("reply", False)}
    assert by_role["judge"] == {("judge_single", True)}


def test_a_teacher_that_fails_leaves_phase_one_open_and_continue_asks_only_it(tmp_path):
    good = mock_model("good", ["teacher"], replies={TARGET_PROMPT: {"a": ["1", "2"]}})
    bad = mock_model("bad", ["teacher"], replies={TARGET_PROMPT: {"mock_error": "fatal"}})
    worker = mock_model("worker", ["student", "judge"])
    cfg = make_config(tmp_path, [good, bad, worker], [task(target_attributes="auto")])
    result = run(cfg)
    assert result.exit_code == 1
    rf = folder(cfg)
    assert not rf.target_attrs_path("qa").exists()
    assert "attribute_mapping" not in meta(rf)["phases_completed"]
    assert result.phases["data_generation"].written == 0
    calls_before = meta(rf)["calls"]
    fixed = make_config(tmp_path, [good, mock_model("bad", ["teacher"], replies={TARGET_PROMPT: {"a": ["3"]}}), worker],
                        [task(target_attributes="auto")])
    result = run(fixed, continue_run=True)
    assert result.exit_code == 0, result.message
    assert json.loads(rf.target_attrs_path("qa").read_text()) == {"a": ["1", "2", "3"]}
    calls = meta(rf)["calls"]
    assert calls["good"] - calls_before["good"] == 3  # phase 3 only: its proposal was kept
    assert calls["bad"] - calls_before["bad"] == 1 + 3


def test_complete_covers_the_whole_cross_product(tmp_path):
    t = mock_model("t", ["teacher"], replies={TARGET_PROMPT: {"attributes": [
        {"name": "a", "values": ["1", "2"]}, {"name": "b", "values": ["x", "y", "z"]}]}})
    cfg = make_config(tmp_path, [t, mock_model("w", ["student", "judge"])],
                      [task(target_attributes="complete", total=2)])
    assert run(cfg).exit_code == 0
    dps = ok_records(folder(cfg), "data_generation")
    combos = sorted((d["sampled_target_attributes"]["a"], d["sampled_target_attributes"]["b"]) for d in dps.values())
    assert combos == sorted(itertools.product(["1", "2"], ["x", "y", "z"]))


def test_store_nuanced_and_ids_follow_the_data_format(tmp_path):
    cfg = make_config(tmp_path, [mock_model("m.1")], [task(total=3, store_nuanced=True)])
    assert run(cfg).exit_code == 0
    rf = folder(cfg)
    dps = records(rf, "data_generation")
    assert sorted(dps) == [f"qa__m.1__{i:05d}" for i in (1, 2, 3)]
    for dp in dps.values():
        assert set(dp["sampled_nuanced_attributes"]) == {"tone"}
        assert dp["status"] == "ok" and dp["attempts"] >= 1 and "input_tokens" in dp["usage"]
    resp = records(rf, "response_collection")
    assert sorted(resp) == [f"qa__m.1__{i:05d}__m.1" for i in (1, 2, 3)]
    ev = records(rf, "evaluation")
    assert sorted(ev) == [f"qa__m.1__{i:05d}__m.1__m.1" for i in (1, 2, 3)]
    one = next(iter(ev.values()))
    assert one["student_model_id"] == "m.1" and one["evaluator"] == "llm_judge"
    assert one["evaluation_mode"] == "single"


def test_per_factor_writes_one_record_per_factor(tmp_path):
    cfg = make_config(tmp_path, [mock_model("a"), mock_model("b")], [task(total=2, evaluation_mode="per_factor")])
    assert run(cfg).exit_code == 0
    evs = ok_records(folder(cfg), "evaluation")
    # 2 teachers x 2 datapoints x 2 students x 2 judges x 2 factors
    assert len(evs) == 32
    for rid, ev in evs.items():
        assert rid.endswith("__" + ev["factor"]) and list(ev["scores"]) == [ev["factor"]]
        assert ev["scores"][ev["factor"]] in ("High", "Medium", "Low")


def test_label_attributes_are_scored_by_exact_match_without_a_judge(tmp_path, recording):
    student = mock_model("student", ["student"], replies=["Positive.", "negative", "It is positive"] * 10)
    cfg = make_config(tmp_path, [mock_model("t", ["teacher", "judge"]), student], [task(
        total=6,
        target_attributes={"sentiment": ["positive", "negative"], "product": ["phone", "shoe"]},
        sampling={"target": [1, 1], "nuance": [0, 0], "total": 6},
        label_attributes=["sentiment"],
        rubric={"sentiment": "Label matches.", "reasoning": "The reasoning holds."},
    )])
    assert run(cfg).exit_code == 0
    rf = folder(cfg)
    dps = ok_records(rf, "data_generation")
    assert all(list(d["sampled_target_attributes"]) == ["sentiment"] for d in dps.values())
    evs = ok_records(rf, "evaluation")
    label = {k: v for k, v in evs.items() if v["evaluator"] == "label"}
    judged = {k: v for k, v in evs.items() if v["evaluator"] == "llm_judge"}
    assert len(label) == 6 and len(judged) == 6
    for ev in judged.values():
        assert set(ev["scores"]) == {"reasoning"}  # the label factor is not asked of the judge
    responses = ok_records(rf, "response_collection")
    for ev in label.values():
        gold = dps[ev["datapoint_id"]]["sampled_target_attributes"]["sentiment"]
        answer = responses[ev["response_id"]]["response"]
        expected = 1.0 if answer.strip(". ").lower() == gold else 0.0
        assert ev["scores"] == {"sentiment": expected}
        assert ev["judge_model_id"] == "label" and ev["attempts"] == 0
    judge_prompts = [r.prompt for m, r in recording if r.role == "judge"]
    assert judge_prompts and all("Label matches." not in p for p in judge_prompts)
    assert any(rec["evaluator"] == "label" for rec in lines(rf, "evaluation"))


class _LengthRatio:
    def score(self, candidates, references):
        return [min(len(c), len(r)) / max(len(c), len(r), 1) for c, r in zip(candidates, references, strict=True)]


class _LengthRatioPlugin:
    @hookimpl
    def register_metrics(self, register):
        register("length_ratio", _LengthRatio)


def test_metric_factors_use_the_registered_metric(tmp_path, pm):
    pm.register(_LengthRatioPlugin(), name="test")
    cfg = make_config(tmp_path, [mock_model("m")], [task(total=2, rubric={
        "clarity": "Clear.", "closeness": {"metric": "length_ratio", "description": "Close to the reference."}})])
    assert run(cfg).exit_code == 0
    rf = folder(cfg)
    evs = ok_records(rf, "evaluation")
    metric = [e for e in evs.values() if e["evaluator"] == "metric"]
    judged = [e for e in evs.values() if e["evaluator"] == "llm_judge"]
    assert len(metric) == 2 and len(judged) == 2
    dps, resps = records(rf, "data_generation"), records(rf, "response_collection")
    for e in metric:
        ref, ans = dps[e["datapoint_id"]]["reference_response"], resps[e["response_id"]]["response"]
        assert e["scores"]["closeness"] == pytest.approx(min(len(ans), len(ref)) / max(len(ans), len(ref)), abs=1e-6)
        assert e["metrics"] == {"closeness": "length_ratio"}
    assert all(set(e["scores"]) == {"clarity"} for e in judged)


def test_failed_datapoints_are_never_answered_and_failed_responses_never_judged(tmp_path):
    broken_teacher = mock_model("broken-teacher", ["teacher"], malformed_rate=1.0, max_faults_in_a_row=100)
    good_teacher = mock_model("good-teacher", ["teacher"])
    flaky_student = mock_model("flaky-student", ["student"], replies=[{"mock_error": "fatal"}] * 10)
    good_student = mock_model("good-student", ["student", "judge"])
    cfg = make_config(tmp_path, [broken_teacher, good_teacher, flaky_student, good_student], [task(total=2)],
                      generation_retries=1)
    result = run(cfg)
    assert result.exit_code == 1
    rf = folder(cfg)
    dps = records(rf, "data_generation")
    failed_dps = {k for k, v in dps.items() if v["status"] == "failed"}
    assert len(failed_dps) == 2
    for k in failed_dps:
        assert dps[k]["attempts"] == 2  # 1 + generation_retries, never more
        assert dps[k]["error_kind"] == "unparseable" and dps[k]["prompt"] == ""
    resps = records(rf, "response_collection")
    assert not {r["datapoint_id"] for r in resps.values()} & failed_dps
    failed_resps = {k for k, v in resps.items() if v["status"] == "failed"}
    assert len(failed_resps) == 2 and all(resps[k]["student_model_id"] == "flaky-student" for k in failed_resps)
    assert all(resps[k]["attempts"] == 1 and resps[k]["error_kind"] == "fatal" for k in failed_resps)
    evs = records(rf, "evaluation")
    assert len(evs) == 2
    assert not {e["response_id"] for e in evs.values()} & failed_resps
    assert meta(rf)["phases_completed"] == ["attribute_mapping", "rubric_mapping"]


def test_a_metric_nobody_registered_stops_phase_5_before_any_judge_call(tmp_path, pm):
    plugin = _LengthRatioPlugin()
    pm.register(plugin, name="test")
    cfg = make_config(tmp_path, [mock_model("m")], [task(total=1, rubric={
        "clarity": "Clear.", "closeness": {"metric": "length_ratio", "description": "Close."}})])
    pm.unregister(plugin)
    result = run(cfg)
    assert result.exit_code == 1
    assert "length_ratio" in result.message and "coeval-analysis" in result.message
    assert result.phases["evaluation"].status == "failed" and result.phases["evaluation"].calls == 0
    assert records(folder(cfg), "evaluation") == {}
