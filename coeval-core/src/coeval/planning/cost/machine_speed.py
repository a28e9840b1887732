"""How fast this machine runs the run's own kind of work now, for the CPU bound of the time
estimate.

A run on the ``mock`` (or on any fast provider at high concurrency) is bound by its own
CPU: scheduling, records, progress. The CPU a call takes is a figure measured on one
machine, and a machine's speed varies: the same two-core virtual machine ran the same mock
run in 5.3 s one day and 8.6 s another. So the estimate times a small piece of that kind of
work (building a record, writing and reading it as JSON, hashing it) here and now, and
scales the figure by how long it took against the machine the figure was measured on.
About 20 ms, once per process.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import statistics
import time

__all__ = ["REFERENCE_S", "speed_factor", "work_seconds"]

#: :func:`work_seconds` on the machine the CPU figures of :mod:`coeval.planning.cost.estimate`
#: were measured on (the median of fresh processes on the two-core machine of ``nox -s bench``).
REFERENCE_S = 0.00377
_ROUNDS = 7
_RECORDS = 400
#: a machine far outside this range of the reference is measured wrongly (a debugger, a
#: suspended process), not running that fast or slow. A two-core machine shared by a dozen
#: busy processes measured 5 to 8 times the reference, and ran the mock's medium shape at
#: 7.3 times its CPU per call: such a machine is that slow
_BOUNDS = (0.25, 10.0)


def work_seconds() -> float:
    """Wall seconds of one round of record work: ``_RECORDS`` records built, written as
    JSON, hashed and read back (wall, not CPU: a machine slowed by its neighbours counts)."""
    started = time.perf_counter()
    for i in range(_RECORDS):
        record = {"id": f"task__teacher__{i:05d}__student__judge", "scores": {"accuracy": "High", "clarity": "Low"},
                  "usage": {"input_tokens": 312 + i, "output_tokens": 48}, "status": "ok",
                  "request": {"prompt": "Rate the answer on each criterion. " * 8}}
        line = json.dumps(record, ensure_ascii=False)
        digest = hashlib.blake2b(line.encode(), digest_size=8).hexdigest()
        back = json.loads(line)
        back["hash"] = digest
        sorted(back.items())
    return time.perf_counter() - started


#: A run slows a little less than this work does when other processes take the cores (its
#: record writing and the mock's waits overlap its main thread): under two busy loops on the
#: two cores this work took 2.08 times as long and the mock run 1.7 times; with a dozen busy
#: processes on them, the work 7.6 times and the mock run 7.3 times. 0.9 keeps both within
#: 15% (2.08 ** 0.9 = 1.93; 7.6 ** 0.9 = 6.2).
_RUN_SLOWDOWN_EXPONENT = 0.9


def load_share() -> float:
    """How many processes want each core, over the last minute (the 1-minute load average
    per CPU, at least 1): a busy machine's scheduler lets a short burst of work through
    whole, so the rounds alone read a machine with four processes a core as barely slowed
    (x1.2, while the mock's medium shape took 2.3 times its CPU time); the load average
    says what the run's next minutes share. 1.0 where the platform does not tell."""
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):
        return 1.0
    return max(1.0, load / (os.cpu_count() or 1))


@functools.cache
def speed_factor() -> float:
    """How much longer the run's own work takes here and now than on the reference machine
    (1.0: as fast; 1.5: a busy day): the median of a few rounds of that work against the
    reference, or where the load average's processes per core (:func:`load_share`) say the
    cores are busier than that burst saw, the geometric mean of the two; damped as the run
    itself slows (:data:`_RUN_SLOWDOWN_EXPONENT`)."""
    work_seconds()  # warm: the first round pays for imports and caches
    measured = statistics.median(work_seconds() for _ in range(_ROUNDS)) / REFERENCE_S
    measured = max(measured, math.sqrt(measured * load_share()))
    low, high = _BOUNDS
    return float(min(high, max(low, measured)) ** _RUN_SLOWDOWN_EXPONENT)
