"""How fast this machine runs the run's own kind of work now, for the CPU bound of the time
estimate.

A run on the ``mock`` (or on any fast provider at high concurrency) is bound by its own
CPU: scheduling, records, progress. The CPU a call takes is a figure measured on one
machine, and a machine's speed varies: the same two-core virtual machine ran the same mock
run in 5.3 s one day and 8.6 s another. Two things make it vary, measured apart:

* **the machine's own pace.** The estimate times a small piece of the run's kind of work
  (building a record, writing and reading it as JSON, hashing it) and scales the figure by
  how long it took against the machine the figure was measured on. A shared virtual machine
  runs that work in spells: 0.83 or 1.35 times the reference, switching within a fraction
  of a second to several seconds, and a run of a few seconds mostly keeps the pace of the
  fast spells (the mock's medium shape: 4.2 s, whichever spell the rounds fell in). So the
  rounds are spread over half a second and their lower quartile is the pace; a machine slow
  throughout reads slow.
* **other processes wanting the cores.** Rounds this short are let through whole by a busy
  machine's scheduler (with four processes a core they read barely slowed), so they do not
  see the load; the number of runnable processes per core does. It is sampled between the
  rounds (``/proc/loadavg``: the processes running now, this one included) rather than taken
  from the load average, which still counts the last minute's work (a run just ended, a
  test suite just stopped). The mock's medium shape slowed about as much as that number:
  1.7 times with two busy loops beside it on two cores (1.5 a core), 2.0 times at 2.5 a
  core, 7.3 times at 6.5.

About 60 ms of work and half a second of waiting, once per process.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import statistics
import time

import attrs

__all__ = ["PAUSE_S", "REFERENCE_S", "ROUNDS", "MachineReading", "load_share", "reading", "runnable_now", "speed_factor",
           "work_seconds"]

#: :func:`work_seconds` on the machine the CPU figures of :mod:`coeval.planning.cost.estimate`
#: were measured on (its fast spells, on the two-core machine of ``nox -s bench``).
REFERENCE_S = 0.00377
#: rounds measured, :data:`PAUSE_S` apart
ROUNDS = 16
PAUSE_S = 0.03
_RECORDS = 400
#: a pace far outside this range of the reference is measured wrongly (a debugger, a
#: suspended process), not running that fast or slow
_BOUNDS = (0.25, 10.0)
#: A run slows a little less than this work does on a slower machine (its record writing and
#: the mock's waits overlap its main thread)
_RUN_SLOWDOWN_EXPONENT = 0.9
#: the factor of the reference machine in its fast spells (its pace 0.83 there, damped): on a
#: contended machine the rounds read some of the contention as pace, so the pace that the
#: processes per core multiply is counted at most at this
_FAST_SPELL_FACTOR = 0.85


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


def _pause() -> None:
    time.sleep(PAUSE_S)


def runnable_now() -> int | None:
    """Processes running or waiting for a core right now, this one included (the kernel's
    count in ``/proc/loadavg``); None where the platform does not tell."""
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            return int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return None


def _one_minute_share(cpus: int) -> float:
    try:
        return os.getloadavg()[0] / cpus
    except (OSError, AttributeError):
        return 1.0


@attrs.frozen
class MachineReading:
    """What :func:`reading` measured: the machine's pace against the reference (1.0: as fast)
    and the processes wanting each core (at least 1.0: a core each)."""

    pace: float
    share: float

    @property
    def factor(self) -> float:
        """How much longer the run's own work takes here and now than on the reference machine:
        its pace (damped as the run slows less than the work) or, where more processes want
        the cores than there are cores, that pace (at most the reference's fast spells') times
        their number per core, whichever is slower."""
        low, high = _BOUNDS
        pace = min(high, max(low, self.pace)) ** _RUN_SLOWDOWN_EXPONENT
        return float(min(high, max(pace, self.share * min(pace, _FAST_SPELL_FACTOR))))


@functools.cache
def reading() -> MachineReading:
    """:data:`ROUNDS` rounds of :func:`work_seconds` :data:`PAUSE_S` apart, the runnable
    processes counted between them; once per process."""
    cpus = os.cpu_count() or 1
    work_seconds()  # warm: the first round pays for imports and caches
    rounds, runnable = [], []
    for i in range(ROUNDS):
        if i:
            _pause()
        count = runnable_now()
        if count is not None:
            runnable.append(count)
        rounds.append(work_seconds())
    pace = statistics.quantiles(rounds, n=4)[0] / REFERENCE_S
    share = statistics.fmean(runnable) / cpus if runnable else _one_minute_share(cpus)
    return MachineReading(pace=pace, share=max(1.0, share))


def speed_factor() -> float:
    """How much longer the run's own work takes here and now than on the reference machine
    (1.0: as fast; 2.0: a busy day): :attr:`MachineReading.factor` of :func:`reading`."""
    return reading().factor


def load_share() -> float:
    """Processes wanting each core now (at least 1.0): above 1, a server on this machine takes
    turns on the cores with the run instead of running beside it."""
    return reading().share
