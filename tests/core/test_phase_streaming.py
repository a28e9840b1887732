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
    result = run(config)
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
