"""HumanEval items scored by running the student's code against the item's tests, in the
sandbox: a right answer passes, a wrong one fails, an endless loop is stopped within its
limit, and code that reaches for the network or writes outside its folder fails without
touching the machine."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from coeval.config.model import TaskConfig
from coeval.evaluators.base import EvaluationFailed, EvaluationRequest, Scorer, Scoring
from coeval_benchmarks.adapters.humaneval import HumanEval
from coeval_benchmarks.code_program import check_program, code_prefix_of
from coeval_benchmarks.code_tests import CodeTestsEvaluator
from coeval_benchmarks.ingest import _datapoint, load_items
from coeval_benchmarks.sandbox.policy import ALLOW_UNSANDBOXED_ENV
from coeval_benchmarks.sandbox.run import ExecutionLimits, SandboxRefused, run_python

FIXTURES = Path(__file__).parent / "fixtures"
TASK = TaskConfig(name="humaneval", description="d")
LIMITS = ExecutionLimits(cpu_seconds=2, timeout_s=2.0)


def _items() -> list[dict[str, Any]]:
    adapter = HumanEval()
    items, _ = load_items(adapter, "test", FIXTURES)
    return [_datapoint(item, adapter, "humaneval", "humaneval-benchmark", "test", "now") for item in items]


def _fenced(code: str) -> str:
    return f"Here it is:\n```python\n{code}```\n"


async def _no_calls(scorings: Sequence[Scoring], build: Any) -> None:
    raise AssertionError("running tests made a model call")


def _evaluate(datapoint: dict[str, Any], answers: list[str]) -> tuple[list[Any], list[dict[str, Any]]]:
    ev = CodeTestsEvaluator(LIMITS)
    assert ev.factors(TASK, {}, datapoint) == ["pass@1"]
    scorings = [
        Scoring(f"r{i}__python_tests", Scorer("python_tests", ("pass@1",)), TASK, {}, datapoint,
                {"id": f"r{i}", "datapoint_id": datapoint["id"], "response": a})
        for i, a in enumerate(answers)
    ]
    results = asyncio.run(ev.evaluate(EvaluationRequest(scorings), _no_calls))
    fields = [ev.record_fields(s, r) if isinstance(r, dict) else {} for s, r in zip(scorings, results, strict=True)]
    return results, fields


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on the machine's 127.0.0.1 that records whatever reaches it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    got: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            got.append(conn.recv(100) or b"(connected)")
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], got
    stop.set()
    thread.join()
    server.close()


def test_humaneval_items_carry_their_tests_and_are_not_scored_by_bleu() -> None:
    first = _items()[0]
    assert first["gold_metric"] == "python_tests" and first["entry_point"] == "add_one"
    assert "def check(candidate)" in first["tests"]


def test_a_correct_solution_passes_and_a_wrong_one_fails() -> None:
    add_one, evens = _items()
    right_whole = _fenced(add_one["code_prefix"] + "    return x + 1\n")
    right_body = _fenced("    return x + 1\n")  # a completion of the body, as HumanEval's harness runs it
    wrong = _fenced(add_one["code_prefix"] + "    return x + 2\n")
    results, fields = _evaluate(add_one, [right_whole, right_body, wrong])
    assert results == [{"pass@1": 1.0}, {"pass@1": 1.0}, {"pass@1": 0.0}]
    assert fields[0]["execution"]["status"] == "passed" and fields[0]["execution"]["error"] == ""
    assert fields[2]["execution"]["status"] == "failed"
    assert fields[2]["execution"]["error"].endswith("AssertionError")
    assert "harness.py" not in fields[2]["execution"]["error"]
    results, _ = _evaluate(evens, [_fenced("def evens(xs):\n    return [x for x in xs if x % 2 == 0]\n"),
                                   _fenced("def evens(xs):\n    return xs\n")])
    assert results == [{"pass@1": 1.0}, {"pass@1": 0.0}]


def test_an_endless_loop_is_stopped_within_its_limit() -> None:
    add_one = _items()[0]
    started = time.monotonic()
    results, fields = _evaluate(add_one, [_fenced("def add_one(x):\n    while True:\n        pass\n")])
    elapsed = time.monotonic() - started
    assert results == [{"pass@1": 0.0}]
    assert fields[0]["execution"]["status"] == "timeout"
    assert elapsed < LIMITS.wall_seconds + 3  # the limit plus start-up, never the loop's forever


def test_code_that_opens_a_socket_fails_and_reaches_nothing(listener: tuple[int, list[bytes]]) -> None:
    port, got = listener
    add_one = _items()[0]
    sneaky = _fenced(
        "import socket\n"
        f"s = socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
        "s.sendall(b'leaked')\n"
        "def add_one(x):\n    return x + 1\n"
    )
    results, fields = _evaluate(add_one, [sneaky])
    assert results == [{"pass@1": 0.0}]
    assert fields[0]["execution"]["status"] == "failed"
    time.sleep(0.5)
    assert got == []


def test_code_that_writes_outside_its_folder_fails_and_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    add_one = _items()[0]
    sneaky = _fenced(f"open({str(target)!r}, 'w').write('x')\ndef add_one(x):\n    return x + 1\n")
    results, fields = _evaluate(add_one, [sneaky])
    assert results == [{"pass@1": 0.0}]
    assert "FileNotFoundError" in fields[0]["execution"]["error"]  # the folder is not in the sandbox at all
    assert not target.exists()
    inside = _fenced("open('scratch.txt', 'w').write('fine')\ndef add_one(x):\n    return x + 1\n")
    assert _evaluate(add_one, [inside])[0] == [{"pass@1": 1.0}]


def test_memory_processes_and_file_size_are_limited() -> None:
    assert run_python("x = bytearray(8 * 1024 ** 3)\n", LIMITS).error.endswith("MemoryError")
    one = ExecutionLimits(cpu_seconds=2, timeout_s=2.0, processes=1)
    assert run_python("import os\nos.fork()\n", one).status == "failed"
    threads = ("from concurrent.futures import ThreadPoolExecutor\nwith ThreadPoolExecutor(4) as pool:\n"
               "    assert list(pool.map(abs, [-1, -2, -3])) == [1, 2, 3]\n")
    assert run_python(threads, LIMITS).status == "passed"  # the default leaves room for a thread pool
    assert run_python(threads, one).status == "failed"
    big = run_python("open('big', 'wb').write(b'0' * (64 * 1024 * 1024))\n", LIMITS)
    assert big.status == "failed"


def test_no_bubblewrap_means_refusal_unless_allowed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH without bwrap
    with pytest.raises(SandboxRefused, match=r"bubblewrap.*--allow-unsandboxed-code"):
        run_python("pass\n", LIMITS)
    add_one = _items()[0]
    monkeypatch.delenv(ALLOW_UNSANDBOXED_ENV, raising=False)
    results, fields = _evaluate(add_one, [_fenced("def add_one(x):\n    return x + 1\n")])
    assert isinstance(results[0], EvaluationFailed) and "--allow-unsandboxed-code" in results[0].error
    assert "install the bubblewrap package" in results[0].error and fields == [{}]
    monkeypatch.setenv(ALLOW_UNSANDBOXED_ENV, "1")
    results, fields = _evaluate(add_one, [_fenced("def add_one(x):\n    return x + 1\n")])
    assert results == [{"pass@1": 1.0}]
    assert fields[0]["execution"]["sandbox"] == "none" and fields[0]["execution"]["network_isolated"] is False


def _evaluate_with(rubric: dict[str, Any], datapoint: dict[str, Any], answers: list[str]) -> list[Any]:
    ev = CodeTestsEvaluator()
    scorings = [
        Scoring(f"r{i}__python_tests", Scorer("python_tests", ("pass@1",)), TASK, rubric, datapoint,
                {"id": f"r{i}", "datapoint_id": datapoint["id"], "response": a})
        for i, a in enumerate(answers)
    ]
    results = asyncio.run(ev.evaluate(EvaluationRequest(scorings), _no_calls))
    return [(r, ev.record_fields(s, r) if isinstance(r, dict) else {}) for s, r in zip(scorings, results, strict=True)]


def test_workers_and_timeout_come_from_the_factor_params() -> None:
    add_one = _items()[0]
    loop = _fenced("def add_one(x):\n    while True:\n        pass\n")
    right = _fenced("def add_one(x):\n    return x + 1\n")
    rubric: dict[str, Any] = {"pass@1": {"evaluator": "python_tests", "params": {"workers": 2, "timeout_s": 0.5}}}
    started = time.monotonic()
    (looped, fields), (passed, _) = _evaluate_with(rubric, add_one, [loop, right])
    assert looped == {"pass@1": 0.0} and passed == {"pass@1": 1.0}
    assert fields["execution"]["status"] == "timeout"
    assert fields["execution"]["error"] == "timed out: the program and its tests took longer than 0.5 s"
    assert time.monotonic() - started < 2.5  # the two ran side by side, the loop stopped at 0.5 s
    cases: list[tuple[dict[str, Any], str]] = [({"workers": 0}, "workers must be a whole number from 1 to 256; got 0"),
                            ({"timeout_s": "3"}, "timeout_s must be a number of seconds"),
                            ({"memory_mb": 10}, "only workers and timeout_s can be set")]
    for params, message in cases:
        rubric = {"pass@1": {"evaluator": "python_tests", "params": params}}
        [(result, _)] = _evaluate_with(rubric, add_one, [right])
        assert isinstance(result, EvaluationFailed)
        assert result.error.startswith("task humaneval: rubric factor 'pass@1' params: ") and message in result.error


def test_the_code_prefix_of_an_own_data_prompt() -> None:
    """HumanEval's shape (Python defining the entry point) is the code a body completes;
    prose, or Python that does not define it, is not."""
    humaneval_like = 'from typing import List\n\n\ndef total(xs: List[int]) -> int:\n    """Sum of xs."""\n'
    assert code_prefix_of(humaneval_like, "total") == humaneval_like
    assert code_prefix_of(humaneval_like.rstrip("\n"), "total") == humaneval_like.rstrip("\n") + "\n"
    assert code_prefix_of(humaneval_like, "other") is None
    assert code_prefix_of("Write total(xs), the sum of xs.", "total") is None
    assert code_prefix_of("total", "total") is None  # an expression that parses is not a function
    program = check_program(humaneval_like, "    return sum(xs)\n", "def check(f):\n    assert f([1, 2]) == 3\n", "total")
    assert program == humaneval_like + "    return sum(xs)\n\ndef check(f):\n    assert f([1, 2]) == 3\n\ncheck(total)\n"
    assert run_python(program, LIMITS).status == "passed"
