"""The batch executor: carries the items of batch-enabled models through provider batch APIs.

The scheduler hands it every item it :meth:`~ProviderBatchExecutor.wants` (protocol in
:mod:`coeval.scheduler.batch`); :meth:`~ProviderBatchExecutor.run` then, per phase:

1. **Collects before it submits.** Items that already belong to a job in
   ``pending_batches.json`` (a run that crashed, was stopped, or ran past its deadline) are
   collected from that job; they are never submitted again.
2. **Submits the rest**: grouped per model (a job never mixes models), chunked to the
   provider's limits (count, and bytes where the runner says so), each chunk one job. A job
   is written to ``pending_batches.json`` as soon as the provider accepts it, before the
   first poll. A model with fewer items than its provider's minimum job size (Bedrock: 100)
   runs those items in real time instead.
3. **Polls** each job with backoff (the runner's interval, x1.5 per poll, at most 10 min)
   until it ends or the overall deadline passes (26 h: past every provider's 24 h window).
   A job still running at the deadline stays pending; its items are left for
   ``--continue`` or ``coeval status --fetch-batches``. Meanwhile the console's
   :class:`~coeval.scheduler.batching.watch.BatchWatch` (``watch=``) knows of the job: one line when it
   is first polled, and ``waiting for batch`` on the phase's progress bar.
4. **Collects** the job: every item gets exactly one outcome, parsed with ``item.parse``
   as in real time, so batch records are the same records. Requests the provider failed,
   expired or left out become ``failed`` outcomes (``--continue`` retries them; set the
   model's ``batch_enabled: false`` first to retry them in real time). A reply its parser
   rejects (unparseable, or a quality check) gets its remaining attempts in real time at once,
   with the correction turn and resampling of any real-time retry
   (:mod:`coeval.scheduler.batching.realtime`). The job leaves ``pending_batches.json`` only after all
   its outcomes were reported (written).

Batch-specific knobs (model ``parameters``, or the environment for all models):
``batch_poll_interval_s`` / ``COEVAL_BATCH_POLL_INTERVAL`` (first poll interval) and
``batch_deadline_s`` / ``COEVAL_BATCH_DEADLINE`` (seconds a run waits for its jobs).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from coeval.config.credentials import KeyStore, redact
from coeval.interfaces.base import ModelError
from coeval.scheduler.batching.base import BatchJobStatus, BatchRunner
from coeval.scheduler.batching.outcomes import fail_all, item_outcome, missing_reason, read_results
from coeval.scheduler.batching.pending import PendingJob, PendingStore
from coeval.scheduler.batching.realtime import realtime_scheduler, retry_rejected, retryable, run_in_real_time
from coeval.scheduler.batching.submit import chunks, submit_job
from coeval.scheduler.batching.watch import BatchWatch, WaitingJob, epoch_of
from coeval.scheduler.work import WorkItem, WorkOutcome
from coeval.storage.run_folder import RunFolder, utc_now

if TYPE_CHECKING:
    from coeval.config.model import Config, ModelConfig
    from coeval.contract.registries import Registries
    from coeval.interfaces.base import Interface
    from coeval.scheduler import Scheduler

__all__ = ["PollPolicy", "ProviderBatchExecutor", "make_batch_executor"]

_stdlog = logging.getLogger("coeval.batching")

POLL_ENV = "COEVAL_BATCH_POLL_INTERVAL"
DEADLINE_ENV = "COEVAL_BATCH_DEADLINE"


def _env_float(name: str) -> float | None:
    value = os.environ.get(name)
    try:
        return float(value) if value else None
    except ValueError:
        return None


#: How interfaces word "the provider does not know this job" (HTTP 404, Bedrock's
#: ResourceNotFoundException): the only poll failure after which a job is given up.
_GONE = re.compile(r"HTTP 404\b|ResourceNotFound|NOT_FOUND")


def _job_is_gone(exc: ModelError) -> bool:
    return bool(_GONE.search(str(exc)))


@attrs.frozen
class PollPolicy:
    """How often and how long to poll. ``interval_s`` None: the runner's own interval."""

    interval_s: float | None = None
    backoff: float = 1.5
    max_interval_s: float = 600.0
    deadline_s: float = 26 * 3600.0


class _Log:
    """Structlog-style calls (``log.info(event, key=value)``) on either kind of logger."""

    def __init__(self, log: Any) -> None:
        self._log = log

    def __call__(self, level: str, event: str, **kw: Any) -> None:
        if self._log is None:
            text = " ".join(f"{k}={v}" for k, v in kw.items())
            getattr(_stdlog, level)(redact(f"{event} {text}".strip()))
            return
        try:
            getattr(self._log, level)(event, **kw)
        except TypeError:  # a stdlib logger
            getattr(self._log, level)(redact(f"{event} " + " ".join(f"{k}={v}" for k, v in kw.items())))


def _poll_settings(model: ModelConfig, runner: BatchRunner, policy: PollPolicy) -> tuple[float, float]:
    """First poll interval and deadline (seconds) for ``model``'s jobs: its parameters, else the policy."""
    params = model.parameters
    interval = params.get("batch_poll_interval_s", policy.interval_s)
    deadline = params.get("batch_deadline_s", policy.deadline_s)
    return float(interval if interval is not None else runner.poll_interval_s), float(deadline)


def _report_retries(log: _Log, watch: BatchWatch, job: PendingJob, tally: Counter[str]) -> None:
    """One line for the console and run.log: how many of a job's items were retried in real time."""
    n = sum(tally.values())
    log("info", "batch items retried in real time", job=job.job_id, model=job.model, phase=job.phase,
        items=n, ok=tally["ok"], failed=tally["failed"])
    watch.note(f"{job.phase}: {n} {job.model} batch replies failed their parse and were retried in "
               f"real time (real-time price): {tally['ok']} ok, {tally['failed']} failed")


class ProviderBatchExecutor:
    """The scheduler's :class:`~coeval.scheduler.batch.BatchExecutor` over the providers' batch APIs
    (the registered runners)."""

    def __init__(
        self,
        *,
        run: RunFolder,
        config: Config,
        enabled: Callable[[ModelConfig, str], bool],
        keys: KeyStore | None = None,
        interfaces: Mapping[str, Interface] | None = None,
        registries: Registries,
        log: Any = None,
        poll: PollPolicy | None = None,
        submit: bool = True,
        wait: bool = True,
        generation_retries: int | None = None,
        watch: BatchWatch | None = None,
    ) -> None:
        self.run_folder = run
        self.config = config
        self.enabled = enabled
        self.keys = keys if keys is not None else KeyStore()
        self.interfaces = interfaces or {}
        self.registries = registries
        self.log = _Log(log)
        base = poll or PollPolicy()
        env_interval, env_deadline = _env_float(POLL_ENV), _env_float(DEADLINE_ENV)
        self.poll_policy = attrs.evolve(
            base,
            interval_s=env_interval if env_interval is not None else base.interval_s,
            deadline_s=env_deadline if env_deadline is not None else base.deadline_s,
        )
        self.may_submit = submit
        self.wait = wait
        self.generation_retries = config.experiment.generation_retries if generation_retries is None else generation_retries
        self.store = PendingStore(run)
        #: the console's view of the jobs being waited for (:mod:`coeval.scheduler.batching.watch`)
        self.watch = watch or BatchWatch()
        self._wants: dict[tuple[str, str], bool] = {}
        self._runners: dict[str, BatchRunner] = {}
        self._pending_keys: dict[str, set[str]] | None = None
        #: what happened, for reports: jobs submitted / collected / left pending
        self.submitted: list[str] = []
        self.collected: list[str] = []
        self.left_pending: list[str] = []
        #: items whose rejected batch reply was retried in real time
        self.retried_in_real_time = 0
        #: set by :meth:`stop_waiting` (a first Ctrl-C) so a poll loop's sleep ends at once
        self._stop_event: asyncio.Event | None = None
        #: the run's scheduler (:meth:`attach`) and the schedulers retrying items now
        self._parent: Scheduler | None = None
        self._retrying: set[Scheduler] = set()

    def attach(self, scheduler: Scheduler) -> None:
        """The scheduler that hands this executor its items: real-time retries of rejected
        batch replies count toward its quotas and budget."""
        self._parent = scheduler

    def stop_waiting(self) -> None:
        """Stop waiting for jobs now (first Ctrl-C): each wait ends within one poll and its job
        stays in ``pending_batches.json`` for ``run --continue`` or ``status --fetch-batches``.
        Safe to call from a signal handler installed with ``loop.add_signal_handler``."""
        self.wait = False
        if self._stop_event is not None:
            self._stop_event.set()
        for scheduler in list(self._retrying):
            scheduler.cancel()  # calls in flight finish; the rest keep their batch reply's record

    async def _nap(self, seconds: float) -> None:
        """Sleep between polls, waking early when :meth:`stop_waiting` is called."""
        if not self.wait:
            return
        if self._stop_event is None:
            self._stop_event = asyncio.Event()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop_event.wait(), timeout=seconds)

    # ---- the protocol ------------------------------------------------------------------------
    def wants(self, item: WorkItem) -> bool:
        """Batch-enabled model with a registered runner; in collect-only mode, only items of
        pending jobs."""
        if not self.may_submit:
            if self._pending_keys is None:
                self._pending_keys = self.store.item_keys_by_phase()
            return item.key in self._pending_keys.get(item.phase, set())
        key = (item.model.name, item.phase)
        decision = self._wants.get(key)
        if decision is None:
            decision = self._wants[key] = bool(self.enabled(item.model, item.phase)) and (
                item.model.interface in self.registries.batch_runners
            )
        return decision

    async def run(self, phase_id: str, items: Sequence[WorkItem], on_outcome: Callable[[WorkOutcome], None]) -> None:
        items = list(items)
        if not items:
            return
        by_key = {item.key: item for item in items}
        tasks: list[Any] = []
        for job in self.store.load():
            if job.phase != phase_id:
                continue
            mine = {cid: by_key.pop(key) for cid, key in job.items.items() if key in by_key}
            if mine:
                self.log("info", "batch job found pending; collecting it instead of submitting again",
                         job=job.job_id, model=job.model, items=len(mine))
                tasks.append(self._follow(job, mine, on_outcome))
        if by_key and self.may_submit:
            groups: dict[str, list[WorkItem]] = defaultdict(list)
            for item in by_key.values():
                groups[item.model.name].append(item)
            for model_items in groups.values():
                tasks.append(self._submit_and_follow(phase_id, model_items, on_outcome))
        try:
            results = await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            await self.aclose()
        errors = [r for r in results if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError)]
        if any(isinstance(r, asyncio.CancelledError) for r in results):
            raise asyncio.CancelledError
        if errors:
            raise errors[0]

    # ---- runners -----------------------------------------------------------------------------
    def runner_for(self, model: ModelConfig) -> BatchRunner:
        runner = self._runners.get(model.name)
        if runner is None:
            factory = self.registries.batch_runners.get(model.interface)
            runner = self._runners[model.name] = factory(model, self.keys.for_provider(model.interface, model.access_key))
        return runner

    # ---- submitting --------------------------------------------------------------------------
    async def _submit_and_follow(self, phase_id: str, items: list[WorkItem], on_outcome: Callable[[WorkOutcome], None]) -> None:
        model = items[0].model
        try:
            runner = self.runner_for(model)
        except Exception as exc:
            fail_all(items, "fatal", f"batch runner for {model.interface}: {redact(str(exc))}", on_outcome)
            return
        minimum = int(getattr(runner, "min_requests_per_job", 0) or 0)
        if len(items) < minimum:
            self.log("info", "too few items for a batch job; running them in real time", model=model.name,
                     items=len(items), minimum=minimum)
            await self._realtime(phase_id, items, on_outcome)
            return
        by_key = {item.key: item for item in items}
        cuts = chunks(runner, [(item.key, item.request) for item in items])
        await asyncio.gather(*(self._submit_chunk(phase_id, model, runner, [by_key[key] for key, _ in chunk], on_outcome)
                               for chunk in cuts))

    async def _submit_chunk(self, phase_id: str, model: ModelConfig, runner: BatchRunner,
                            chunk: list[WorkItem], on_outcome: Callable[[WorkOutcome], None]) -> None:
        # custom ids numbered within the job: short, valid for every provider, unique per job
        numbered = {f"r{i}": item for i, item in enumerate(chunk)}
        requests = [(cid, item.request) for cid, item in numbered.items()]
        try:
            job_id = await submit_job(runner, requests)
        except ModelError as exc:
            fail_all(list(numbered.values()), exc.kind, f"batch submission failed: {redact(str(exc))}", on_outcome)
            return
        job = PendingJob(job_id=job_id, interface=model.interface, model=model.name, phase=phase_id,
                         items={cid: item.key for cid, item in numbered.items()})
        self.store.add(job)  # before the first poll: a crash from here on never re-submits
        self.submitted.append(job_id)
        self.log("info", "batch job submitted", job=job_id, model=model.name, phase=phase_id, requests=len(requests))
        await self._follow(job, numbered, on_outcome, runner=runner)

    # ---- following a job ---------------------------------------------------------------------
    async def _follow(self, job: PendingJob, items: Mapping[str, WorkItem], on_outcome: Callable[[WorkOutcome], None],
                      runner: BatchRunner | None = None) -> None:
        """Poll ``job`` until it ends, then collect it; the console's watch knows of it meanwhile."""
        resumed = job.job_id not in self.submitted
        self.watch.following(job.phase, WaitingJob(
            job.job_id, job.interface, job.model, len(job.items),
            submitted_at=epoch_of(job.submitted_at, time.time()) if resumed else time.time(), resumed=resumed))
        try:
            await self._poll_and_collect(job, items, on_outcome, runner)
        finally:
            self.watch.ended(job.phase, job.job_id)

    async def _poll_and_collect(self, job: PendingJob, items: Mapping[str, WorkItem],
                                on_outcome: Callable[[WorkOutcome], None], runner: BatchRunner | None) -> None:
        model = next(iter(items.values())).model
        if runner is None:
            try:
                runner = self.runner_for(model)
            except Exception as exc:
                self.log("error", "cannot reach the batch job's provider; the job stays pending", job=job.job_id,
                         error=redact(str(exc)))
                self.left_pending.append(job.job_id)
                return
        interval, deadline_s = _poll_settings(model, runner, self.poll_policy)
        deadline = time.monotonic() + deadline_s
        status: BatchJobStatus | None = None
        failures = 0
        while True:
            try:
                status = await runner.poll(job.job_id)
                failures = 0
            except ModelError as exc:
                if not exc.retryable and not _job_is_gone(exc):
                    # a missing or refused key, a setting left out: the provider still runs
                    # (and bills) the job, so keep it for the run that has the right settings
                    self.log("error", "batch job cannot be polled; it stays pending: fix this, then run "
                             "`coeval status --fetch-batches` or `coeval run --continue`", job=job.job_id,
                             model=model.name, error=redact(str(exc)))
                    self.left_pending.append(job.job_id)
                    return
                if not exc.retryable:
                    self.log("error", "batch job cannot be polled", job=job.job_id, error=redact(str(exc)))
                    fail_all(list(items.values()), exc.kind, f"batch job {job.job_id}: {redact(str(exc))}", on_outcome)
                    self.store.remove(job.job_id)
                    return
                failures += 1
                self.log("warning", "batch poll failed; will poll again", job=job.job_id, error=redact(str(exc)))
            if status is not None and status.terminal:
                self.watch.polled(job.phase, job.job_id, status, None)
                break
            if status is not None:
                with contextlib.suppress(OSError, ValueError):
                    self.store.update(job.job_id, state=status.state, polled_at=utc_now(), message=status.message)
            if not self.wait or time.monotonic() + interval > deadline:
                why = "not finished yet" if not self.wait else "still running at the deadline"
                # collect-only (status --fetch-batches): its own summary says what stays pending
                self.log("warning" if self.may_submit else "info",
                         f"batch job {why}; collect it later with `coeval run --continue` or "
                         "`coeval status --fetch-batches`", job=job.job_id, model=model.name,
                         state=status.state if status else "unknown")
                self.left_pending.append(job.job_id)
                return
            nap = interval if failures == 0 else min(interval, 30.0)
            self.watch.polled(job.phase, job.job_id, status, nap)
            await self._nap(nap)
            interval = min(interval * self.poll_policy.backoff, self.poll_policy.max_interval_s)
        await self._collect(job, items, status, runner, on_outcome)

    async def _collect(self, job: PendingJob, items: Mapping[str, WorkItem], status: BatchJobStatus, runner: BatchRunner,
                       on_outcome: Callable[[WorkOutcome], None]) -> None:
        results, status, error = await read_results(runner, job, status)
        if results is None:
            self.log("warning", "batch results could not be read; the job stays pending", job=job.job_id, error=error)
            self.left_pending.append(job.job_id)
            return
        missing = missing_reason(job, status)
        ok = failed = 0
        rejected: list[WorkOutcome] = []
        iface = self.interfaces.get(job.model)
        for cid, item in items.items():
            outcome = item_outcome(item, results.get(cid), missing)
            # after a first Ctrl-C (self.wait off) no new call starts: the batch reply's record stands
            if iface is not None and self.wait and retryable(outcome, self.generation_retries):
                rejected.append(outcome)
                continue
            if outcome.status == "ok":
                ok += 1
            else:
                failed += 1
            on_outcome(outcome)
        retried = await self._retry_rejected(job, rejected, iface) if rejected else []
        for outcome in retried:  # reported with no wait in between, then the job leaves the file
            ok, failed = (ok + 1, failed) if outcome.status == "ok" else (ok, failed + 1)
            on_outcome(outcome)
        self.store.remove(job.job_id)  # only now: every item's record has been written
        self.collected.append(job.job_id)
        self.log("info", "batch job collected", job=job.job_id, model=job.model, state=status.state, ok=ok, failed=failed,
                 retried_in_real_time=len(rejected))
        if retried:
            self.retried_in_real_time += len(retried)
            _report_retries(self.log, self.watch, job, Counter[str](o.status for o in retried))

    async def _retry_rejected(self, job: PendingJob, rejected: list[WorkOutcome], iface: Interface | None) -> list[WorkOutcome]:
        """Give the items whose batch reply was rejected their remaining attempts in real time."""
        assert iface is not None
        scheduler = realtime_scheduler(job.model, iface, self.generation_retries, self._parent, share_quota=True,
                                       spend_pending_usd=sum(o.cost_usd or 0.0 for o in rejected))
        self.log("info", "batch replies rejected by their parser; retrying them in real time (real-time price)",
                 job=job.job_id, model=job.model, items=len(rejected))
        self._retrying.add(scheduler)
        try:
            return await retry_rejected(job.phase, rejected, scheduler)
        finally:
            self._retrying.discard(scheduler)

    # ---- real-time fallback ------------------------------------------------------------------
    async def _realtime(self, phase_id: str, items: list[WorkItem], on_outcome: Callable[[WorkOutcome], None]) -> None:
        """Items too few for a batch job go through a scheduler of their own (same retry policy)."""
        await run_in_real_time(phase_id, items, self.interfaces.get(items[0].model.name), self.generation_retries,
                               self._parent, on_outcome)

    async def aclose(self) -> None:
        for runner in self._runners.values():
            with contextlib.suppress(Exception):
                await runner.aclose()
        self._runners.clear()


def make_batch_executor(
    *,
    config: Config,
    run: RunFolder,
    enabled: Callable[[ModelConfig, str], bool],
    registries: Registries,
    interfaces: Mapping[str, Interface] | None = None,
    keys_file: str | None = None,
    log: Any = None,
    **options: Any,
) -> ProviderBatchExecutor:
    """The executor ``coeval run`` gives its scheduler when a config enables batch anywhere."""
    return ProviderBatchExecutor(run=run, config=config, enabled=enabled, keys=KeyStore.load(keys_file),
                         interfaces=interfaces, registries=registries, log=log, **options)
