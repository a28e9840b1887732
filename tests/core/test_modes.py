"""Phase modes (New / Keep / Extend / Model), --only-models shards and the run-folder lock."""

from __future__ import annotations

import threading

import attrs
from coeval.config.model import PhaseModes
from coeval.storage.lock import RunLock

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


def test_new_refuses_to_append_to_existing_records(tmp_path):
    cfg = make_config(tmp_path, [mock_model("a"), mock_model("b")], [task(total=2)])
    assert run(cfg, only_models=("a",)).exit_code == 0
    before = {p.name: p.read_text() for p in folder(cfg).root.rglob("*.jsonl")}
    again = run(cfg, only_models=("a",))  # mode New, and a's datapoints exist
    assert again.exit_code == 2
    assert "New never appends" in again.message and "Extend" in again.message
    assert {p.name: p.read_text() for p in folder(cfg).root.rglob("*.jsonl")} == before


def test_extend_retries_failed_slots_under_the_same_ids(tmp_path):
    flaky = mock_model("t", ["teacher"], replies={"Write one test item": [{"mock_error": "fatal"}] * 2})
    cfg = make_config(tmp_path, [flaky, mock_model("w", ["student", "judge"])], [task(total=4)])
    first = run(cfg)
    assert first.exit_code == 1
    rf = folder(cfg)
    failed = sorted(k for k, v in records(rf, "data_generation").items() if v["status"] == "failed")
    assert len(failed) == 2
    assert "data_generation" not in meta(rf)["phases_completed"]
    # the teacher works again: --continue (Extend) makes exactly those two again
    fixed = make_config(tmp_path, [mock_model("t", ["teacher"]), mock_model("w", ["student", "judge"])],
                        [task(total=4)])
    second = run(fixed, continue_run=True)
    assert second.exit_code == 0, second.message
    assert second.phases["data_generation"].written == 2
    dps = records(rf, "data_generation")
    assert sorted(dps) == [f"qa__t__{i:05d}" for i in range(1, 5)]
    assert all(v["status"] == "ok" for v in dps.values())
    assert sorted(duplicate_ids(rf, "data_generation")) == failed  # a failed line, then its ok line
    assert len(ok_records(rf, "response_collection")) == 4


def test_keep_skips_a_phase_that_has_records_even_with_gaps(tmp_path):
    v1 = make_config(tmp_path, [mock_model("t", ["teacher"]), mock_model("w", ["student", "judge"])],
                     [task(total=4)], exp_id="v1", quota={"t": {"max_calls": 2}})
    assert run(v1).exit_code == 3
    modes = {p: "Keep" for p in PHASES[:3]} | {"response_collection": "Extend", "evaluation": "Extend"}
    v2 = make_config(tmp_path, [mock_model("t", ["teacher"]), mock_model("w", ["student", "judge"])],
                     [task(total=4)], exp_id="v2", resume_from="v1", phases=modes)
    result = run(v2)
    assert result.phases["data_generation"].calls == 0
    assert len(records(folder(v2), "data_generation")) == 2
    assert result.phases["data_generation"].status == "partial"
    assert result.exit_code == 1


def test_model_mode_adds_only_a_new_teacher(tmp_path):
    v1 = make_config(tmp_path, [mock_model("a")], [task(total=2)], exp_id="v1")
    assert run(v1).exit_code == 0
    modes = {"attribute_mapping": "Keep", "rubric_mapping": "Keep", "data_generation": "Model",
             "response_collection": "Model", "evaluation": "Model"}
    v2 = make_config(tmp_path, [mock_model("a", ["student", "judge", "teacher"]), mock_model("b", ["teacher"])],
                     [task(total=2)], exp_id="v2", resume_from="v1", phases=modes)
    result = run(v2)
    assert result.exit_code == 0, result.message
    rf = folder(v2)
    assert result.phases["data_generation"].written == 2  # only b's
    assert {d["teacher_model_id"] for d in records(rf, "data_generation").values()} == {"a", "b"}
    assert result.phases["response_collection"].written == 2  # a answers b's datapoints
    assert meta(rf)["calls"] == {"b": 2, "a": 4}


def test_model_mode_is_refused_for_phases_1_and_2(tmp_path):
    cfg = make_config(tmp_path, [mock_model("m")], [task(total=1)])
    bad = attrs.evolve(cfg, experiment=attrs.evolve(cfg.experiment, phases=PhaseModes(attribute_mapping="Model")))
    result = run(bad)
    assert result.exit_code == 2 and "V-08" in result.message
    assert meta(folder(cfg))["status"] == "failed" and meta(folder(cfg))["runs"][-1]["exit_code"] == 2


def test_two_shards_share_a_folder_and_a_final_continue_completes_it(tmp_path):
    models = [mock_model("a", latency_ms=5), mock_model("b", latency_ms=5)]
    cfg = make_config(tmp_path, models, [task(total=3)])
    results = {}

    def shard(name):
        results[name] = run(cfg, only_models=(name,))

    threads = [threading.Thread(target=shard, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {n: r.exit_code for n, r in results.items()} == {"a": 0, "b": 0}, {n: r.message for n, r in results.items()}
    rf = folder(cfg)
    assert len(records(rf, "data_generation")) == 6
    final = run(cfg, continue_run=True)
    assert final.exit_code == 0, final.message
    assert len(ok_records(rf, "response_collection")) == 12
    assert len(ok_records(rf, "evaluation")) == 24
    for phase in ("data_generation", "response_collection", "evaluation"):
        assert duplicate_ids(rf, phase) == [], phase
    m = meta(rf)
    assert m["phases_completed"] == PHASES
    # calls recorded by both shards and the final run add up to the records written
    assert sum(m["calls"].values()) == sum(r["attempts"] for ph in PHASES[2:] for r in lines(rf, ph))


def test_a_second_run_on_a_busy_folder_fails_at_once(tmp_path):
    cfg = make_config(tmp_path, [mock_model("m")], [task(total=1)])
    assert run(cfg).exit_code == 0
    with RunLock(folder(cfg).root):  # another process holds the folder
        result = run(cfg, continue_run=True)
        assert result.exit_code == 2 and "another coeval process" in result.message
        shard = run(cfg, continue_run=True, only_models=("m",))
        assert shard.exit_code == 2
    with RunLock(folder(cfg).root, shared=True):  # a shard is working: other shards may join
        assert run(cfg, continue_run=True, only_models=("m",)).exit_code == 0
        assert run(cfg, continue_run=True).exit_code == 2


def test_concurrent_shards_ask_each_teacher_for_attributes_once(tmp_path, recording_mock):
    from .pipeline_support import RecordingMock
    models = [mock_model("a", latency_ms=50), mock_model("b", latency_ms=50)]
    cfg = make_config(tmp_path, models, [task(total=1, target_attributes="auto", rubric="auto")])
    threads = [threading.Thread(target=run, args=(cfg,), kwargs={"only_models": (n,)}) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    asked = sorted((m, r.schema_name) for m, r in RecordingMock.requests if r.role == "teacher"
                   and r.schema_name in ("target_attributes", "rubric"))
    assert asked == [("a", "rubric"), ("a", "target_attributes"), ("b", "rubric"), ("b", "target_attributes")]


def test_each_concurrent_shard_records_its_own_end_in_the_run_log(tmp_path):
    models = [mock_model("a", ["teacher", "student", "judge"], latency_ms=100),
              mock_model("b", ["student"], latency_ms=5)]
    cfg = make_config(tmp_path, models, [task(total=2)])
    threads = [threading.Thread(target=run, args=(cfg,), kwargs={"only_models": (n,)}) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    runs = meta(folder(cfg))["runs"]
    assert sorted(tuple(r["only_models"]) for r in runs) == [("a",), ("b",)]
    for entry in runs:
        assert entry.get("exit_code") == 0 and entry.get("finished_at"), runs


def test_a_busy_folder_is_refused_before_any_model_is_probed(tmp_path):
    cfg = make_config(tmp_path, [mock_model("m")], [task(total=1)])
    assert run(cfg).exit_code == 0
    # the probe would fail loudly if it were called: the busy folder must be reported first, with no call
    probed = make_config(tmp_path, [mock_model("m", replies={"Reply with the word OK": {"mock_error": "fatal"}})],
                         [task(total=2)], probe_mode="full")  # one more datapoint: work to do
    with RunLock(folder(cfg).root):
        result = run(probed, continue_run=True)
    assert result.exit_code == 2 and "another coeval process" in result.message, result.message


def test_a_shard_stops_at_the_budget_when_another_shard_spent_it(tmp_path, pm):
    from coeval.plugins.manager import CORE_PLUGIN

    from .conftest import CoreWith
    from .pipeline_support import RecordingMock

    cfg = make_config(tmp_path, [mock_model("a", latency_ms=20, cost_per_call_usd=0.001), mock_model("b")],
                      [task(total=40)], budget_usd=1.0)
    rf = folder(cfg)

    class OtherShardSpends(RecordingMock):
        async def generate(self, request):
            if len(RecordingMock.requests) == 5:  # meanwhile shard b spends the whole budget
                rf.update_meta(lambda m: m.setdefault("spend_usd", {}).__setitem__("b", 1.0))
            return await super().generate(request)

    pm.unregister(name=CORE_PLUGIN)
    pm.register(CoreWith(mock=OtherShardSpends), name=CORE_PLUGIN)
    RecordingMock.requests = []
    result = run(cfg, only_models=("a",))
    assert result.exit_code == 3, result.message
    # alone it would make 120 calls (write, answer and judge 40 items): it stopped when it learnt of b's spend
    assert len(RecordingMock.requests) < 80
    assert sum(meta(rf)["spend_usd"].values()) < 1.1
