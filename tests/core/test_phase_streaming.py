"""Phases 3-5 stream their work: each phase's first call goes out before the last of its
work items is listed (the light specs, not only the rendered prompts), so a phase of
millions of items starts at once and holds O(concurrency) of them. Counted, not timed."""

from __future__ import annotations

from typing import Any

import pytest
from coeval.evaluators import base as evaluator_base
from coeval.interfaces.base import GenerateRequest, GenerateResult
from coeval.interfaces.mock import MockInterface
from coeval.phases import _evaluation_inputs as evaluation_inputs
from coeval.phases import evaluation, generation, responses

from .pipeline_support import folder, make_config, mock_model, ok_records, run, task

#: More than the scheduler's smallest buffer of routed items (256), so streaming shows.
TOTAL = 400


class _Counts:
    def __init__(self) -> None:
        self.built: dict[str, int] = {"data_generation": 0, "response_collection": 0, "evaluation": 0}
        self.at_first_call: dict[str, int] = {}


def _counting(cls: Any, counts: _Counts, phase: str) -> Any:
    """A stand-in for a phase's spec class that counts the specs built."""

    def build(*args: Any, **kwargs: Any) -> Any:
        counts.built[phase] += 1
        return cls(*args, **kwargs)

    return build


_PHASE_OF_ROLE = {"student": "response_collection", "judge": "evaluation"}


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> _Counts:
    counts = _Counts()
    monkeypatch.setattr(generation, "_Slot", _counting(generation._Slot, counts, "data_generation"))
    monkeypatch.setattr(responses, "_Ask", _counting(responses._Ask, counts, "response_collection"))
    monkeypatch.setattr(evaluation, "Scoring", _counting(evaluator_base.Scoring, counts, "evaluation"))
    generate = MockInterface.generate

    async def noting(self: MockInterface, request: GenerateRequest) -> GenerateResult:
        phase = "data_generation" if request.schema_name == "datapoint" else _PHASE_OF_ROLE.get(request.role or "")
        if phase is not None and phase not in counts.at_first_call:
            counts.at_first_call[phase] = counts.built[phase]
        return await generate(self, request)

    monkeypatch.setattr(MockInterface, "generate", noting)
    return counts


def test_each_phase_calls_before_its_last_item_is_listed(tmp_path: Any, counts: _Counts) -> None:
    config = make_config(tmp_path, [mock_model("m", latency_ms=0)], [task(total=TOTAL)])
    # phases one by one: pipelined, a phase lists what it owes once per pass (each item built
    # by every pass that lists it before it is taken; tests/core/test_pipelined_phases.py)
    result = run(config, pipeline=False)
    assert result.exit_code == 0, result.message
    assert len(ok_records(folder(config), "evaluation")) == TOTAL
    assert counts.built == {"data_generation": TOTAL, "response_collection": TOTAL, "evaluation": TOTAL}
    for phase in counts.built:
        assert counts.at_first_call[phase] < TOTAL, phase  # not the whole phase listed first


def test_phase_5_calls_before_it_reads_the_last_answer(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Phase 5 reads the answers' text one file at a time as its scorings are listed: its
    first judge call goes out before the last answer's record is read (a counting reader),
    so a phase of millions never holds every answer."""
    tasks = [task(name=f"t{i}", total=100) for i in range(6)]  # six answer files of 100
    config = make_config(tmp_path, [mock_model("m", latency_ms=0)], tasks)
    read = [0]
    at_first_call: list[int] = []
    reader = evaluation_inputs.read_response_file

    def counting(path: Any) -> Any:
        for rec in reader(path):
            read[0] += 1
            yield rec

    monkeypatch.setattr(evaluation_inputs, "read_response_file", counting)
    generate = MockInterface.generate

    async def noting(self: MockInterface, request: GenerateRequest) -> GenerateResult:
        if request.role == "judge" and not at_first_call:
            at_first_call.append(read[0])
        return await generate(self, request)

    monkeypatch.setattr(MockInterface, "generate", noting)
    result = run(config)
    assert result.exit_code == 0, result.message
    assert len(ok_records(folder(config), "evaluation")) == 600
    assert read[0] >= 600
    assert at_first_call and at_first_call[0] < 600  # not every answer read before the first call


def test_phase_5_calls_before_it_counts_what_it_owes(tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The count of what phase 5 owes (progress and ETA's total: a pass over every answer)
    does not hold its first call back: a count that waits for the first judge call still
    lets the phase finish, and the first call comes before the count, and before any
    datapoint is read for an evaluator of benchmark items (gold, python_tests) on a run
    whose datapoints carry no gold answer and no tests."""
    import threading

    config = make_config(tmp_path, [mock_model("m", latency_ms=0)], [task(total=50)])
    first_call = threading.Event()
    order: list[str] = []
    count = evaluation_inputs.EvaluationState.usable_per_datapoint
    each_datapoint = evaluation_inputs.EvaluationState.each_datapoint

    def late_count(self: Any) -> Any:
        order.append("count starts")
        first_call.wait(timeout=30)  # the count is held until a call went out (it would time out if it held it)
        order.append("counted")
        return count(self)

    def reading(self: Any) -> Any:
        order.append("datapoints read")
        return each_datapoint(self)

    monkeypatch.setattr(evaluation_inputs.EvaluationState, "usable_per_datapoint", late_count)
    monkeypatch.setattr(evaluation_inputs.EvaluationState, "each_datapoint", reading)
    generate = MockInterface.generate

    async def noting(self: MockInterface, request: GenerateRequest) -> GenerateResult:
        if request.role == "judge" and not first_call.is_set():
            order.append("first call")
            first_call.set()
        return await generate(self, request)

    monkeypatch.setattr(MockInterface, "generate", noting)
    # one by one: a pipelined pass counts nothing (tests/core/test_deferred_counts.py)
    result = run(config, progress=True, pipeline=False)  # a summary line per phase (no terminal)
    assert result.exit_code == 0, result.message
    assert len(ok_records(folder(config), "evaluation")) == 50
    assert "first call" in order and "counted" in order
    assert order.index("first call") < order.index("counted")
    assert "datapoints read" not in order
    assert "evaluation: 50/50 done" in capsys.readouterr().err  # the total, counted after the first call


def test_the_scheduler_starts_before_the_total_is_counted() -> None:
    """Items whose total is still being counted (``LazyItems`` over a future) start at once:
    the total arrives later, for progress and the stats; a count that never comes leaves
    the total the number of items run, and ``len`` of specs whose pass ended is that pass's."""
    import asyncio
    from concurrent.futures import Future

    from coeval.config.model import ModelConfig
    from coeval.phases._items import LazyItems, LazySpecs
    from coeval.scheduler import Scheduler, WorkItem

    model = ModelConfig(name="judge", interface="mock", roles=("judge",), parameters={"latency_ms": 0})
    n = 300

    def items(total: Future[int], seen: list[int]) -> LazyItems[int]:
        def build(i: int) -> WorkItem:
            seen.append(i)
            if i == 10 and not total.done():
                total.set_result(n)  # counted while the items run
            return WorkItem(key=f"k{i}", phase="evaluation", model=model, on_done=lambda o: None,
                            request=GenerateRequest(prompt=f"item {i}", params={}, role="judge"))

        return LazyItems(LazySpecs(lambda: iter(range(n)), total), build)

    async def go(total: Future[int]) -> Any:
        seen: list[int] = []
        stats = await Scheduler({"judge": MockInterface(model)}).run("evaluation", items(total, seen))
        return stats, seen

    counted: Future[int] = Future()
    stats, seen = asyncio.run(go(counted))
    assert len(seen) == n and stats.total == n
    never: Future[int] = Future()
    never.set_running_or_notify_cancel()
    specs = LazySpecs(lambda: iter(range(n)), never)
    assert bool(specs) and specs.total_later is never
    assert sum(1 for _ in specs) == n and len(specs) == n  # a whole pass: no wait for the count
    dropped = LazySpecs(lambda: iter(range(n)), never)
    it = iter(dropped)
    next(it), next(it)
    del it  # a stopped phase drops the rest
    assert len(dropped) == 2


def test_phase_4_calls_before_it_reads_the_last_datapoint_file(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Phase 4 reads the datapoints one (task, teacher) file at a time as it lists what it
    owes, and counts them in a thread: its first student call goes out before the last
    datapoint file is read (a counting reader)."""
    import threading

    tasks = [task(name=f"t{i}", total=100) for i in range(6)]  # six datapoint files of 100
    config = make_config(tmp_path, [mock_model("m", latency_ms=0)], tasks)
    read: list[str] = []
    at_first_call: list[int] = []
    reader = responses.load_file_records

    def counting(path: Any) -> Any:
        if "datapoints" in str(path) and threading.current_thread() is threading.main_thread():
            read.append(str(path))  # the listing's reads (the count's run in its own thread)
        return reader(path)

    monkeypatch.setattr(responses, "load_file_records", counting)
    generate = MockInterface.generate

    async def noting(self: MockInterface, request: GenerateRequest) -> GenerateResult:
        if request.role == "student" and not at_first_call:
            at_first_call.append(len(read))
        return await generate(self, request)

    monkeypatch.setattr(MockInterface, "generate", noting)
    result = run(config)
    assert result.exit_code == 0, result.message
    assert len(ok_records(folder(config), "response_collection")) == 600
    assert at_first_call and at_first_call[0] < 6  # not every datapoint file read before the first call
