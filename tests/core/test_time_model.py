"""The time model of a run: pipelined phases overlap (also when a past run's pace times
them), a code task's programs cost the sandbox's time, lanes take the latency a run
recorded, and the estimate says what it rests on, with a range where that is weak."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from coeval.planning.cost import estimate as estimate_module
from coeval.planning.cost import estimate_cost, format_estimate
from coeval.planning.cost.program_time import PROGRAM_S

from .pipeline_support import folder, make_config, meta, mock_model, run, task

PIPELINED = ("data_generation", "response_collection", "evaluation")


@pytest.fixture(autouse=True)
def _reference_speed(monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine as fast as the reference one, and quiet: exact figures, whatever the load."""
    monkeypatch.setattr(estimate_module, "speed_factor", lambda: 1.0)
    monkeypatch.setattr(estimate_module, "load_share", lambda: 1.0)


def test_a_plan_after_a_pipelined_run_is_not_the_sum_of_its_phases(tmp_path: Path) -> None:
    """The quick start after one run of it: its phases ran at once, so each one's log entry
    spans the others' (40 s, 80 s, 140 s from one start). The plan learns each phase's pace
    from them, and the run takes about the longest, 140 s, not the 260 s they add up to."""
    config = make_config(tmp_path, [mock_model("a", seed=1), mock_model("b", seed=2)], [task(total=3)])
    assert run(config).exit_code == 0
    rf = folder(config)
    data = meta(rf)
    ends = {"data_generation": "00:00:40", "response_collection": "00:01:20", "evaluation": "00:02:20"}
    for entry in data["phase_log"]:
        if entry["phase"] in ends:
            entry["started_at"], entry["finished_at"] = "2026-01-01T00:00:00Z", f"2026-01-01T{ends[entry['phase']]}Z"
    rf.meta_path.write_text(json.dumps(data), encoding="utf-8")

    estimate = estimate_cost(config, samples=0)
    phases = [estimate.phase_seconds[p] for p in PIPELINED]
    assert phases == pytest.approx([40.0, 80.0, 140.0], abs=0.5)  # each at the pace it kept
    assert estimate.seconds == pytest.approx(140.0, abs=1.0)  # not 260: they ran at once
    assert estimate.seconds < sum(phases)
    assert estimate.time_basis == "at a past run's pace"
    # run one by one, the same phases add up
    assert estimate_cost(config, samples=0, pipeline=False).seconds == pytest.approx(260.0, abs=1.0)


def test_a_pipelined_estimate_is_shorter_than_its_phases_added_up(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A teacher, a student and a judge, each a mock lane of its own at 200 ms and 4 calls in
    flight: phases 3-5 run at once, each on its own lane, so the plan is about the longest
    phase, well under the phases added up (as the run takes them with --no-pipeline)."""
    from coeval.interfaces.mock import MockInterface

    monkeypatch.setattr(MockInterface, "default_concurrency", 4)
    monkeypatch.setattr(MockInterface, "max_concurrency", 4)
    models = [mock_model("t", ["teacher"], latency_ms=200), mock_model("s", ["student"], latency_ms=200),
              mock_model("j", ["judge"], latency_ms=200)]
    config = make_config(tmp_path, models, [task(total=40)])
    pipelined = estimate_cost(config, samples=0)
    one_by_one = estimate_cost(config, samples=0, pipeline=False)
    phases = [pipelined.phase_seconds[p] for p in PIPELINED]
    assert phases == pytest.approx([0.2 + 40 * 0.2 / 4] * 3)  # 40 calls, 4 at a time, each phase
    assert one_by_one.seconds == pytest.approx(sum(phases))
    assert max(phases) <= pipelined.seconds <= max(phases) + 1.0 < 0.5 * sum(phases)
    assert pipelined.pipelined_overlap_s == pytest.approx(sum(phases) - pipelined.seconds)
    assert pipelined.time_basis == "from the models' latency settings"


def _code_task(tmp_path: Path, rows: int, workers: int | None) -> dict[str, object]:
    data = tmp_path / "code.jsonl"
    data.write_text("".join(json.dumps({"q": f"Write f{i}(x).", "tests": "def check(f):\n    assert f(1)\n",
                                        "entry": f"f{i}"}) + "\n" for i in range(rows)), encoding="utf-8")
    factor: dict[str, object] = {"evaluator": "python_tests"}
    if workers is not None:
        factor["params"] = {"workers": workers}
    return {"name": "code", "description": "Write the function.", "checker": "python_tests",
            "data": {"file": str(data), "prompt": "q", "tests": "tests", "entry_point": "entry"},
            "rubric": {"pass@1": factor}}


@pytest.mark.parametrize("workers", [1, 4])
def test_a_code_tasks_estimate_counts_its_programs(tmp_path: Path, workers: int) -> None:
    """48 rows, two students: 96 answers, each run as a program in the sandbox, ``workers``
    at a time. The evaluation phase makes no call, yet takes their time."""
    students = [mock_model("right", ["student"]), mock_model("wrong", ["student"])]
    config = make_config(tmp_path, students, [_code_task(tmp_path, 48, workers)])
    estimate = estimate_cost(config, samples=0)
    assert estimate.programs == 96
    assert estimate.to_dict()["sandbox_programs"] == 96
    assert sum(c.calls for c in estimate.cells if c.phase == "evaluation") == 0
    assert estimate.phase_seconds["evaluation"] >= 96 * PROGRAM_S / workers
    assert estimate.phase_seconds["evaluation"] == pytest.approx(96 * PROGRAM_S / workers, abs=0.5)
    assert "96 programs run in the sandbox (code: " + f"{workers} at once)" in estimate.notes
    assert "the sandbox's time per program" in estimate.time_basis


def test_a_code_task_without_settings_runs_as_many_programs_as_there_are_cpus(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    config = make_config(tmp_path, [mock_model("s", ["student"])], [_code_task(tmp_path, 40, None)])
    estimate = estimate_cost(config, samples=0)
    assert estimate.programs == 40
    assert estimate.phase_seconds["evaluation"] == pytest.approx(40 * PROGRAM_S / 8, abs=0.3)


def test_a_past_runs_records_give_each_lane_its_latency(tmp_path: Path) -> None:
    """Without a phase log (an interrupted run), the latency the run's records carry times
    each lane: the mock's setting says 10 ms, its calls took 300 ms each."""
    config = make_config(tmp_path, [mock_model("a", seed=1, latency_ms=10)], [task(total=6)])
    assert run(config).exit_code == 0
    rf = folder(config)
    for path in rf.jsonl_files("response_collection"):
        recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        path.write_text("".join(json.dumps({**r, "latency_ms": 300.0}) + "\n" for r in recs), encoding="utf-8")
    data = meta(rf)
    data["phase_log"] = []
    rf.meta_path.write_text(json.dumps(data), encoding="utf-8")
    estimate = estimate_cost(config, samples=0)
    answers = [c for c in estimate.cells if c.phase == "response_collection" and c.calls]
    assert {c.latency_source for c in answers} == {"history"}
    assert sum(c.seconds for c in answers) == pytest.approx(0.3 * sum(c.calls for c in answers))
    assert "from a past run of this config" in estimate.time_basis


def test_a_guessed_latency_says_so_and_gives_a_range(tmp_path: Path) -> None:
    """No sample call and no history: the time is the interface's typical speed, a guess,
    so the plan gives a wide range and says it is a heuristic."""
    model = {"name": "g", "interface": "openai", "roles": ["teacher", "student", "judge"], "access_key": "sk-test",
             "parameters": {"model": "gpt-4o-mini", "base_url": "http://127.0.0.1:9/v1"}}
    config = make_config(tmp_path, [model], [task(total=20)])
    estimate = estimate_cost(config, samples=0)
    low, high = estimate.seconds_range
    assert estimate.time_basis.startswith("heuristic: no latency known")
    assert low <= 0.5 * estimate.seconds and high >= 2 * estimate.seconds
    assert estimate.basis.weak
    text = format_estimate(estimate)
    assert "time: heuristic: no latency known" in text
    assert estimate.to_dict()["estimated_seconds_range"] == [round(low, 1), round(high, 1)]


def test_a_set_latency_is_one_number(tmp_path: Path) -> None:
    config = make_config(tmp_path, [mock_model("a", latency_ms=100)], [task(total=10)])
    estimate = estimate_cost(config, samples=0)
    assert not estimate.basis.weak
    low, high = estimate.seconds_range
    assert low < estimate.seconds < high <= 1.3 * estimate.seconds


@pytest.mark.parametrize(("share", "server_ms"), [(1.0, 0.0), (4.0, 0.65)])
def test_a_server_on_this_machine_takes_turns_with_the_run_on_a_busy_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, share: float, server_ms: float) -> None:
    """Calls through an SDK to a loopback server with room for all of them in flight: the
    run's CPU bounds them, and on a machine with more processes than cores the server's CPU
    per call too (they take turns on the same cores); on a quiet one it has a core of its own."""
    monkeypatch.setattr(estimate_module, "load_share", lambda: share)
    model = {"name": "g", "interface": "openai", "roles": ["teacher", "student", "judge"], "access_key": "sk-test",
             "parameters": {"model": "gpt-4o-mini", "base_url": "http://127.0.0.1:9/v1", "concurrency": 100000,
                            "max_concurrency": 100000}}
    config = make_config(tmp_path, [model], [task(total=5000)])
    estimate = estimate_cost(config, samples=0, pipeline=False)
    judged = sum(c.calls for c in estimate.cells if c.phase == "evaluation")
    per_call = estimate_module._RUN_CPU_PER_CALL_S + estimate_module._SDK_CPU_PER_CALL_S + server_ms / 1000
    assert estimate.phase_seconds["evaluation"] == pytest.approx(estimate_module._PHASE_START_S + judged * per_call)
