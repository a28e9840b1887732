"""The loop over the phases of one run: each phase in its mode, its result logged, and the
run's verdict (status, exit code, message) from what the phases did."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from coeval.console.lane_figures import record_lanes
from coeval.phases.base import Phase, PhaseContext, PhaseError, PhaseRefusedError, PhaseResult, RunView
from coeval.phases.ids import MAPPING_PHASES
from coeval.phases.survey_memo import survey_of
from coeval.run._state import RunState
from coeval.run.ledger import Ledger
from coeval.run.result import EXIT_FAILED, EXIT_GAPS, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, RunError
from coeval.storage.run_folder import RunFolder, utc_now
from coeval.storage.safe_files import folder_lock

__all__ = ["PhaseLoop"]


#: Skip causes that are a graceful stop, not a failure.
_LIMIT_CAUSES = frozenset({"quota", "budget"})


class PhaseLoop(RunState):
    """Runs the phases in order and says what the run came to."""

    async def _phases(
        self, phases: list[Phase], completed: set[str], source: RunFolder | None, ledger: Ledger, log: Any
    ) -> tuple[str, int, str]:
        assert self.scheduler is not None
        scheduler = self.scheduler
        upstream_wrote = False

        async def submit(phase_id: str, items: Any) -> Any:
            stats = await scheduler.run(phase_id, items)
            record_lanes(self.run, phase_id, stats)  # per-lane figures for `coeval status`
            return stats

        for phase in phases:
            name = phase.name
            mode = self._mode(phase)
            view = RunView(self.config, self.run, self.registries)
            if self.stop_requested:
                break
            if self.options.continue_run and name in completed and not upstream_wrote:
                survey = self._surveys.pop(name, None) or survey_of(phase, view)
                if survey.complete:
                    self.results[name] = PhaseResult(name, mode, status="skipped", survey=survey)
                    log.info("phase skipped: completed earlier", phase=name)
                    continue
            if mode not in getattr(phase, "modes", ("New", "Keep", "Extend", "Model")):
                raise RunError(f"mode {mode} is not allowed for phase {name} (V-08)")
            ctx = PhaseContext(
                self.config, self.run, mode=mode, submit=submit, log=log.bind(phase=name),
                only_models=self.only, record_outcome=ledger.add, registries=self.registries,
                source_run=source,
            )
            result = ctx.result = PhaseResult(name, mode)
            self.results[name] = result
            started = utc_now()
            self.meta.phase_started(name, self.phase_ids)
            log.info("phase started", phase=name, mode=mode)
            # shards share phases 1-2: one asks the teachers, the others then find the artifacts
            shared_lock = folder_lock(self.run.root / ".teacher_phases.lock", thread_local=False) \
                if self.only and name in MAPPING_PHASES else None
            try:
                if shared_lock is not None:
                    await asyncio.to_thread(shared_lock.acquire)
                try:
                    await phase.run(ctx)
                finally:
                    if shared_lock is not None:
                        shared_lock.release()
            except PhaseRefusedError as exc:
                result.status, result.message = "failed", str(exc)
                self.meta.phase_finished(result, started, self.phase_ids)
                log.error("phase refused", phase=name, reason=str(exc))
                return "failed", EXIT_USAGE, str(exc)
            except PhaseError as exc:
                result.status, result.message = "failed", str(exc)
                self.meta.phase_finished(result, started, self.phase_ids)
                log.error("phase failed", phase=name, reason=str(exc))
                return "failed", EXIT_FAILED, str(exc)
            except asyncio.CancelledError:
                result.status = "interrupted"
                self.meta.phase_finished(result, started, self.phase_ids)
                raise
            finally:
                ctx.writers.close()
                ledger.flush()
            if not (self.stop_requested and result.skip_causes["cancelled"]):  # stopped early: not surveyed (slow)
                result.survey = survey_of(phase, RunView(self.config, self.run, self.registries))
            upstream_complete = all(self.results[p.name].status in ("completed", "skipped")  # complete inputs only
                                    for p in phases[: phases.index(phase)] if p.name in self.results)
            result.status = "completed" if upstream_complete and result.survey and result.survey.complete else "partial"
            if self.stop_requested and result.status != "completed":
                result.status = "interrupted"
            self.meta.phase_finished(result, started, self.phase_ids)
            self._log_phase(result, log)
            upstream_wrote = upstream_wrote or result.written > 0
        return self._verdict(phases)

    def _log_phase(self, result: PhaseResult, log: Any) -> None:
        total = result.survey.total if result.survey is not None else None
        fields = {"phase": result.phase, "status": result.status, "written": result.written,
                  "failed": result.failed, "left": result.skipped}
        if total is not None:
            fields.update(expected=total.expected, present_ok=total.ok)
        if result.skip_causes:
            fields["left_by_cause"] = dict(result.skip_causes)
        for cause in _LIMIT_CAUSES & set(result.skip_causes):  # the summary line says it on the console
            log.info(f"{cause} reached: items left for --continue", phase=result.phase,
                     items=result.skip_causes[cause])
        # the console's summary line already says how the phase ended: run.log keeps the details
        log.info("phase finished", **fields)

    def _verdict(self, phases: list[Phase]) -> tuple[str, int, str]:
        if self.stop_requested:
            return "interrupted", EXIT_INTERRUPTED, "interrupted"
        ran = [self.results[p.name] for p in phases if p.name in self.results]
        failed_items = sum(r.failed for r in ran)
        skip_causes: Counter[str] = Counter()
        for r in ran:
            skip_causes.update(r.skip_causes)
        all_complete = all(r.status in ("completed", "skipped") for r in ran) and len(ran) == len(phases)
        if all_complete:
            return "completed", EXIT_OK, "all phases complete"
        old_failures = sum(r.survey.total.failed for r in ran if r.survey is not None)
        if failed_items or (old_failures and not self.only):
            return "incomplete", EXIT_FAILED, f"{failed_items} items failed; see `coeval status`"
        if skip_causes and set(skip_causes) <= _LIMIT_CAUSES:
            return "incomplete", EXIT_GAPS, "stopped by quota or budget; raise it and run with --continue"
        if self.only and not skip_causes:
            return "incomplete", EXIT_OK, "this shard's models are done; other shards' items remain"
        return "incomplete", EXIT_FAILED, "some items are still missing; see `coeval status`"
