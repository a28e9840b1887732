"""Ingest writes phase 1-3 artifacts for a virtual teacher, idempotently, and reopens 4-5."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from coeval.storage import RunFolder, iter_jsonl
from coeval_benchmarks.adapters.arc import ARCChallenge
from coeval_benchmarks.adapters.gsm8k import GSM8K
from coeval_benchmarks.adapters.mmlu import MMLU
from coeval_benchmarks.adapters.sciq import SciQ
from coeval_benchmarks.ingest import IngestError, ingest, select_items

from tests.benchmarks.conftest import ALL_PHASES, FIXTURES, snapshot


def datapoints(run: RunFolder, task: str, teacher: str) -> list[dict]:
    return list(iter_jsonl(run.datapoints_path(task, teacher)))


def test_ingest_writes_attributes_rubric_datapoints_and_log(finished_run: Path) -> None:
    run = RunFolder(finished_run)
    result = ingest(run, MMLU(), data_dir=FIXTURES)
    assert (result.written, result.skipped, result.available) == (5, 0, 5)

    attrs = json.loads(run.target_attrs_path("mmlu").read_text())
    assert attrs["correct_answer"] == ["A", "B", "C", "D"]
    assert "college_medicine" in attrs["subject"]
    assert json.loads(run.nuanced_attrs_path("mmlu").read_text()) == {}
    assert set(json.loads(run.rubric_path("mmlu").read_text())) == {"correctness", "clarity"}

    records = datapoints(run, "mmlu", "mmlu-benchmark")
    assert len(records) == 5
    first = records[0]
    assert first["id"] == "mmlu__mmlu-benchmark__test-00000"
    assert first["task_id"] == "mmlu" and first["teacher_model_id"] == "mmlu-benchmark"
    assert first["benchmark_id"] == "mmlu" and first["benchmark_split"] == "test"
    assert first["benchmark_native_id"] == "test-00000"
    assert first["label"] == "C" and first["choices"]["C"] == "29" and first["gold_metric"] == "choice"
    assert first["sampled_target_attributes"] == {"subject": "elementary_mathematics", "correct_answer": "C"}
    assert first["reference_response"] == "C. 29"
    assert first["status"] == "ok"

    meta = run.read_meta()
    assert meta["phases_completed"] == ["attribute_mapping", "rubric_mapping", "data_generation"]
    (entry,) = meta["ingest_log"]
    assert entry["benchmark"] == "mmlu" and entry["n_written"] == 5 and entry["n_skipped"] == 0
    assert entry["teacher"] == {"name": "mmlu-benchmark", "interface": "benchmark", "roles": ["teacher"]}
    task = entry["task"]
    assert task["name"] == "mmlu" and task["category"] == "benchmark"
    assert task["target_attributes"] == attrs
    assert task["rubric"] == json.loads(run.rubric_path("mmlu").read_text())
    assert task["label_attributes"] == ["correct_answer"]
    assert task["sampling"]["total"] == 0  # the virtual teacher generates nothing


def test_second_ingest_writes_nothing(finished_run: Path) -> None:
    run = RunFolder(finished_run)
    ingest(run, MMLU(), data_dir=FIXTURES)
    ingest(run, GSM8K(), data_dir=FIXTURES)
    before = snapshot(finished_run)
    again = ingest(run, MMLU(), data_dir=FIXTURES)
    again_gsm = ingest(run, GSM8K(), data_dir=FIXTURES)
    assert (again.written, again.skipped, again.logged) == (0, 5, False)
    assert (again_gsm.written, again_gsm.logged) == (0, False)
    assert snapshot(finished_run) == before


def test_ingest_leaves_the_runs_own_artifacts_alone(finished_run: Path) -> None:
    before = snapshot(finished_run)
    ingest(RunFolder(finished_run), SciQ(), data_dir=FIXTURES)
    after = snapshot(finished_run)
    assert after["config.yaml"] == before["config.yaml"]
    assert after["phase2_rubric/summaries.rubric.json"] == before["phase2_rubric/summaries.rubric.json"]


def test_a_larger_limit_adds_items_and_reopens_phases_again(finished_run: Path) -> None:
    run = RunFolder(finished_run)
    small = ingest(run, GSM8K(), data_dir=None, limit=3)
    first_ids = [r["id"] for r in datapoints(run, "gsm8k", "gsm8k-benchmark")]
    run.update_meta(lambda m: m.update(phases_completed=list(ALL_PHASES)))  # --continue finished
    bigger = ingest(run, GSM8K(), data_dir=None, limit=8)
    ids = [r["id"] for r in datapoints(run, "gsm8k", "gsm8k-benchmark")]
    assert small.written == 3 and (bigger.written, bigger.skipped) == (5, 3)
    assert ids[:3] == first_ids and len(set(ids)) == 8
    meta = run.read_meta()
    assert "response_collection" not in meta["phases_completed"]
    assert [e["n_written"] for e in meta["ingest_log"]] == [3, 5]


def test_limit_spreads_over_the_split_and_is_stable() -> None:
    items = [GSM8K().item({"question": f"q{i}", "answer": f"#### {i}"}, i, "test") for i in range(200)]
    chosen = select_items(items, 20)
    assert [i.native_id for i in chosen] == [i.native_id for i in select_items(items, 20)]
    assert {i.native_id for i in chosen} <= {i.native_id for i in select_items(items, 40)}
    assert max(int(i.label) for i in chosen) > 100  # not just the first rows of the file
    assert [int(i.label) for i in chosen] == sorted(int(i.label) for i in chosen)  # file order kept


def test_datapoints_without_a_log_entry_are_logged_and_phases_reopened(finished_run: Path) -> None:
    """A crash after the datapoints but before the log entry heals on the next ingest."""
    run = RunFolder(finished_run)
    ingest(run, SciQ(), data_dir=FIXTURES)
    run.update_meta(lambda m: m.update(ingest_log=[], phases_completed=list(ALL_PHASES)))
    healed = ingest(run, SciQ(), data_dir=FIXTURES)
    assert (healed.written, healed.logged) == (0, True)
    meta = run.read_meta()
    assert len(meta["ingest_log"]) == 1 and meta["ingest_log"][0]["task"]["name"] == "sciq"
    assert "evaluation" not in meta["phases_completed"]


def test_ingest_into_an_existing_config_task_keeps_its_rubric(finished_run: Path) -> None:
    run = RunFolder(finished_run)
    result = ingest(run, SciQ(), data_dir=FIXTURES, task_name="summaries")
    assert any("already exists" in w for w in result.warnings)
    assert json.loads(run.rubric_path("summaries").read_text()) == {"accuracy": "Matches the paragraph."}
    assert not run.target_attrs_path("summaries").exists()
    entry = run.read_meta()["ingest_log"][0]
    assert entry["task"]["name"] == "summaries" and entry["task"]["rubric"] == {"accuracy": "Matches the paragraph."}
    assert len(datapoints(run, "summaries", "sciq-benchmark")) == 2


def test_not_a_run_folder(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="not a run folder"):
        ingest(RunFolder(tmp_path / "nowhere"), SciQ(), data_dir=FIXTURES)


def test_teacher_name_taken_by_a_real_model_is_refused(finished_run: Path) -> None:
    config = finished_run / "config.yaml"
    config.write_text(config.read_text().replace("name: mock-a", "name: sciq-benchmark"))
    with pytest.raises(IngestError, match="model 'sciq-benchmark' already exists with interface 'mock'"):
        ingest(RunFolder(finished_run), SciQ(), data_dir=FIXTURES)


def test_logged_task_and_teacher_make_a_valid_config(finished_run: Path) -> None:
    """What the pipeline merges into the config on --continue passes config validation."""
    import copy

    from coeval.plugins.config_loading import load_config
    from coeval_benchmarks.adapters import builtin_adapters

    from tests.benchmarks.conftest import CONFIG

    run = RunFolder(finished_run)
    for adapter in builtin_adapters():
        ingest(run, adapter, data_dir=FIXTURES, limit=2)
    config = copy.deepcopy(CONFIG)
    for entry in run.read_meta()["ingest_log"]:
        config["tasks"].append(entry["task"])
        config["models"].append(entry["teacher"])
    loaded = load_config(config, check_filesystem=False)
    assert len(loaded.tasks) == 11 and not loaded.warnings
    mmlu = loaded.task("mmlu")
    assert mmlu.label_attributes == ("correct_answer",) and mmlu.sampling.total == 0
    assert loaded.model("gsm8k-benchmark").interface == "benchmark"


def test_teacher_named_by_the_config_receives_the_datapoints(finished_run: Path) -> None:
    """A config may already name its benchmark teacher (``arc-challenge``, interface benchmark)."""
    config = finished_run / "config.yaml"
    config.write_text(config.read_text().replace(
        "models:\n", "models:\n- name: arc-challenge\n  interface: benchmark\n  roles: [teacher]\n", 1))
    run = RunFolder(finished_run)
    result = ingest(run, ARCChallenge(), data_dir=FIXTURES, teacher_name="arc-challenge", task_name="science")
    assert (result.teacher, result.written) == ("arc-challenge", 3)
    assert {r["teacher_model_id"] for r in datapoints(run, "science", "arc-challenge")} == {"arc-challenge"}
    assert run.read_meta()["ingest_log"][0]["teacher"]["name"] == "arc-challenge"


@pytest.mark.parametrize(("option", "value"), [("task_name", "my task"), ("teacher_name", "a__b")])
def test_names_that_cannot_be_ids_are_refused(finished_run: Path, option: str, value: str) -> None:
    with pytest.raises(IngestError, match="letters, digits"):
        ingest(RunFolder(finished_run), SciQ(), data_dir=FIXTURES, **{option: value})


def test_task_stays_the_benchmarks_after_the_runner_copies_it_into_config_yaml(finished_run: Path) -> None:
    """On --continue the runner writes ingested tasks into the run's config.yaml; a later,
    larger ingest must still extend the benchmark's own attributes without warnings."""
    import yaml

    run = RunFolder(finished_run)
    ingest(run, MMLU(), data_dir=FIXTURES, limit=2)
    config = yaml.safe_load(run.config_path.read_text())
    entry = run.read_meta()["ingest_log"][0]
    config["tasks"].append(entry["task"])
    config["models"].append(entry["teacher"])
    run.config_path.write_text(yaml.safe_dump(config))

    more = ingest(run, MMLU(), data_dir=FIXTURES)
    assert more.written == 3 and not more.warnings
    assert json.loads(run.target_attrs_path("mmlu").read_text())["correct_answer"] == ["A", "B", "C", "D"]
    assert run.read_meta()["ingest_log"][-1]["owns_task"] is True


def test_a_users_task_is_never_taken_over(finished_run: Path) -> None:
    run = RunFolder(finished_run)
    ingest(run, SciQ(), data_dir=FIXTURES, task_name="summaries", limit=1)
    again = ingest(run, SciQ(), data_dir=FIXTURES, task_name="summaries")
    assert again.written == 1 and any("already exists" in w for w in again.warnings)
    assert not run.target_attrs_path("summaries").exists()
    assert [e["owns_task"] for e in run.read_meta()["ingest_log"]] == [False, False]
