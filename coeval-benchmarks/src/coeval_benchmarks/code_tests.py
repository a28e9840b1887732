"""The ``python_tests`` evaluator: a student's code is run against the item's tests.

It applies to a response whose datapoint carries ``tests`` (Python source; HumanEval's
``check(candidate)`` function) and is a code item: a benchmark item with ``gold_metric:
python_tests`` (HumanEval) or a task with ``checker: python_tests``. The program run is the
reply's code (its first Python code block, or the whole reply), preceded by the item's
``code_prefix`` (signature and docstring) when the reply does not define ``entry_point``
itself, then the tests, then ``check(entry_point)`` when the item names one. Score
``pass@1``: 1 when the program exits cleanly, 0 when a test fails, it raises or it times
out. The record keeps the outcome under ``execution``: status (passed, failed, timeout,
error), the captured error (the end of stderr), the duration and whether the network was
isolated. The sandbox (:mod:`coeval.sandbox`) refuses to run code where it cannot cut the
network, unless ``coeval run --allow-unsandboxed-code`` (``COEVAL_ALLOW_UNSANDBOXED_CODE=1``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from coeval.config.model import TaskConfig
from coeval.evaluators.base import ModelFreeEvaluator, Scoring
from coeval.sandbox.policy import unsandboxed_allowed
from coeval.sandbox.run import ExecutionLimits, ExecutionResult, SandboxRefused, run_python

from coeval_benchmarks.extraction import extract_code

__all__ = ["CHECKER", "PASS_FACTOR", "CodeTestsEvaluator", "program_of"]

CHECKER = "python_tests"
PASS_FACTOR = "pass@1"


def _is_code_item(task: TaskConfig, datapoint: Mapping[str, Any]) -> bool:
    tests = datapoint.get("tests")
    if not isinstance(tests, str) or not tests.strip():
        return False
    return datapoint.get("gold_metric") == CHECKER or getattr(task, "checker", None) == CHECKER


def program_of(reply: str, datapoint: Mapping[str, Any]) -> str:
    """The Python program that runs ``reply``'s code against the datapoint's tests."""
    code = extract_code(reply)
    entry = datapoint.get("entry_point")
    prefix = datapoint.get("code_prefix")
    if isinstance(entry, str) and entry and isinstance(prefix, str) and not re.search(
        rf"^\s*def\s+{re.escape(entry)}\s*\(", code, re.M
    ):
        code = prefix + code  # a completion of the body, as HumanEval's own harness runs it
    program = f"{code}\n\n{datapoint['tests']}\n"
    if isinstance(entry, str) and entry:
        program += f"\ncheck({entry})\n"
    return program


class CodeTestsEvaluator(ModelFreeEvaluator):
    """Registered as ``python_tests``; see the module docstring."""

    name = CHECKER
    kind = CHECKER
    #: it scores only datapoints with ``tests``: a run whose datapoints have none is not read for it
    datapoint_fields = ("tests",)

    def __init__(self, limits: ExecutionLimits | None = None) -> None:
        self.limits = limits or ExecutionLimits()
        #: response id -> the execution outcome, until its record is written
        self._outcomes: dict[str, ExecutionResult] = {}

    def factors(self, task: TaskConfig, rubric: Mapping[str, Any], datapoint: Mapping[str, Any]) -> list[str]:
        return [PASS_FACTOR] if _is_code_item(task, datapoint) else []

    def score(
        self,
        task: TaskConfig,
        rubric: Mapping[str, Any],
        datapoint: Mapping[str, Any],
        responses: list[Mapping[str, Any]],
    ) -> list[dict[str, float]]:
        out = []
        for response in responses:
            reply = str(response.get("response") or "")
            try:
                result = run_python(program_of(reply, datapoint), self.limits,
                                    allow_unsandboxed=unsandboxed_allowed())
            except SandboxRefused as exc:
                raise RuntimeError(str(exc)) from None  # the datapoint's records fail; --continue retries
            self._outcomes[str(response.get("id"))] = result
            out.append({PASS_FACTOR: 1.0 if result.passed else 0.0})
        return out

    def record_fields(self, scoring: Scoring, scores: Mapping[str, float]) -> dict[str, Any]:
        """``execution``: status, captured error, duration and network isolation of the run."""
        result = self._outcomes.pop(str(scoring.response.get("id")), None)
        if result is None:
            return {}
        return {"execution": {"status": result.status, "error": result.error, "duration_s": result.duration_s,
                              "network_isolated": result.network_isolated}}
