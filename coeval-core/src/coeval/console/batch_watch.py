"""What a run's provider batch jobs are doing, told to the person at the console.

A batch job can take hours, and a progress bar that sits still for hours looks like a hang.
The executor reports each job it follows here; the watch then

* says one plain line when a job is first polled: job id, request count, provider, model and
  the time of the next poll (a job found pending from an earlier run says so too), and
* answers :meth:`BatchWatch.describe` for the phase's progress bar: ``waiting for batch
  0:12:04, openai 120/400 done`` (the provider's own count, when its API reports one),
  shown in place of an ETA, since no rate of completion predicts a batch.

    watch = BatchWatch(say=print)
    watch.following("evaluation", WaitingJob("batch_1", "openai", "gpt-4o-mini", 400, time.time()))
    watch.polled("evaluation", "batch_1", status, next_poll_in=30.0)
    watch.describe("evaluation")   # 'waiting for batch 0:00:00, openai 0/400 done'
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

import attrs

from coeval.console.eta import hms
from coeval.interfaces.batch import BatchJobStatus

__all__ = ["BatchWatch", "WaitingJob", "clock_time", "epoch_of"]


@attrs.define
class WaitingJob:
    job_id: str
    provider: str
    model: str
    requests: int
    #: when the provider accepted the job (epoch seconds): the wait is counted from here
    submitted_at: float
    #: a job an earlier run submitted, collected by this one
    resumed: bool = False
    provider_done: int | None = None
    provider_total: int | None = None
    announced: bool = False


def clock_time(epoch: float) -> str:
    """``19:45:03``: a moment in local time."""
    return time.strftime("%H:%M:%S", time.localtime(epoch))


def epoch_of(stamp: str | None, default: float) -> float:
    """Epoch seconds of an ISO time (``2026-11-21T20:00:00Z``), or ``default``."""
    if not stamp:
        return default
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return default


class BatchWatch:
    """The batch jobs being waited for, per phase. Called from the event-loop thread; read
    by the progress display's refresh thread (plain attribute reads)."""

    def __init__(self, say: Callable[[str], None] | None = None, clock: Callable[[], float] = time.time) -> None:
        self._say = say
        self._clock = clock
        self._jobs: dict[str, dict[str, WaitingJob]] = {}

    def following(self, phase: str, job: WaitingJob) -> None:
        self._jobs.setdefault(phase, {})[job.job_id] = job

    def polled(self, phase: str, job_id: str, status: BatchJobStatus | None, next_poll_in: float | None) -> None:
        """A poll returned ``status`` (None: it failed); the next one is ``next_poll_in`` s away
        (None: none, the job ended or is left pending)."""
        job = self._jobs.get(phase, {}).get(job_id)
        if job is None:
            return
        if status is not None and status.total:
            job.provider_done, job.provider_total = status.succeeded + status.failed, status.total
        if not job.announced:
            job.announced = True
            self._announce(phase, job, status, next_poll_in)

    def note(self, line: str) -> None:
        """One line for the console about the batch items (e.g. the ones retried in real time)."""
        if self._say is not None:
            self._say(line)

    def ended(self, phase: str, job_id: str) -> None:
        self._jobs.get(phase, {}).pop(job_id, None)

    def waiting(self, phase: str) -> list[WaitingJob]:
        return list(self._jobs.get(phase, {}).values())

    def describe(self, phase: str) -> str | None:
        """``waiting for batch 0:12:04, openai 120/400 done``, or None when no job is waited for."""
        jobs = self.waiting(phase)
        if not jobs:
            return None
        elapsed = hms(self._clock() - min(j.submitted_at for j in jobs))
        what = "waiting for batch" if len(jobs) == 1 else f"waiting for {len(jobs)} batch jobs"
        counted = [j for j in jobs if j.provider_total]
        if not counted:
            return f"{what} {elapsed}"
        providers = "/".join(dict.fromkeys(j.provider for j in counted))
        done = sum(j.provider_done or 0 for j in counted)
        total = sum(j.provider_total or 0 for j in counted)
        return f"{what} {elapsed}, {providers} {done}/{total} done"

    def _announce(self, phase: str, job: WaitingJob, status: BatchJobStatus | None, next_poll_in: float | None) -> None:
        if self._say is None:
            return
        if job.resumed:
            head = (f"{phase}: collecting batch job {job.job_id} ({job.provider}, {job.model}): {job.requests} "
                    f"requests, submitted at {clock_time(job.submitted_at)} by an earlier run")
        else:
            head = f"{phase}: batch job {job.job_id} submitted to {job.provider} ({job.model}): {job.requests} requests"
        if next_poll_in is None:
            tail = "finished; collecting the results" if status is not None and status.terminal else "not polled again"
        else:
            tail = f"next poll at {clock_time(self._clock() + next_poll_in)} (in {round(next_poll_in, 2):g} s)"
        self._say(f"{head}; {tail}")
