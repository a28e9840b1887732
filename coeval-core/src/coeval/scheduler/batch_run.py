"""Handing a phase's batch items to the batch executor."""

from __future__ import annotations

import asyncio
import logging

from coeval.config.credentials import redact
from coeval.scheduler.outcomes import Outcomes
from coeval.scheduler.state import _Job, _PhaseRun
from coeval.scheduler.work import WorkOutcome

log = logging.getLogger("coeval.scheduler")


class BatchRun(Outcomes):
    """Handing a phase's batch items to the batch executor."""

    # ------------------------------------------------------------------ batch APIs

    def _start_batch(self, run: _PhaseRun, jobs: list[_Job]) -> None:
        executor = self.batch_executor
        assert executor is not None
        handed: list[_Job] = []
        journal = self.journal
        calls: dict[int, str] = {}
        for job in jobs:
            name = job.item.model.name
            cap = self.limits.quota.get(name)
            if cap is not None and self.calls[name] >= cap:
                self._skip(run, job, "quota")
                continue
            if self.limits.budget_usd is not None and self._over_budget():
                self._skip(run, job, "budget")
                continue
            if journal is not None:
                try:
                    calls[id(job.item)] = journal.started(name, run.phase_id, job.item.key,
                                                          self.admission.estimate(name, run.phase_id))
                except OSError as exc:
                    self._unrecorded(run, job, exc)
                    break
            self.calls[name] += 1
            run.stats.phase_calls += 1
            job.attempts = 1
            handed.append(job)
        if not handed:
            return
        by_item = {id(job.item): job for job in handed}

        def on_outcome(outcome: WorkOutcome) -> None:
            job = by_item.get(id(outcome.item))
            if job is None or job.done:
                log.warning("batch executor reported %s twice or for an unknown item; ignored",
                            getattr(outcome.item, "key", "?"))
                return
            job.done = True
            call = calls.pop(id(outcome.item), None)
            if journal is not None and call is not None:
                journal.ended(call, outcome.item.model.name, outcome.cost_usd)
            if outcome.cost_usd:
                self._add_spend(run, outcome.cost_usd)
            self._deliver(run, job, outcome)

        async def drive() -> None:
            try:
                await executor.run(run.phase_id, [j.item for j in handed], on_outcome)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.error("batch executor failed in %s: %s", run.phase_id, redact(str(exc)))
                for job in handed:
                    if not job.done:
                        job.last_kind, job.last_error = "batch", redact(f"{type(exc).__name__}: {exc}")
                        self._finish(run, job, "failed")
            else:
                for job in handed:
                    if not job.done:
                        self._skip(run, job, "batch_pending")
            finally:
                run.batch_running = False
                run.settle()

        run.batch_running = True
        task = asyncio.ensure_future(drive())
        run.tasks.add(task)
        task.add_done_callback(run.tasks.discard)

