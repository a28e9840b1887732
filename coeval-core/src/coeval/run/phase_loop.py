"""The loop over the phases of one run: each phase in its mode (phases 3-5 pipelined when
they may be, see :mod:`coeval.run.pipelining`), its result logged, and the run's verdict
(status, exit code, message) from what the phases did."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections import Counter
from typing import Any

from coeval.console.progress import TrackerPass
from coeval.phase_ids import MAPPING_PHASES
from coeval.phases.base import (
    Phase,
    PhaseContext,
    PhaseError,
    PhaseRefusedError,
    PhaseResult,
    RunView,
    WriterPool,
)
from coeval.phases.evaluation_rounds import adaptive_settings
from coeval.phases.info import configured_mode
from coeval.phases.survey_memo import survey_of
from coeval.run.lane_figures import add_pass, record_lanes
from coeval.run.ledger import Ledger
from coeval.run.pipelining import LISTING_PASSES, Pass, Passes, Upstream, pipeline_group, untaken
from coeval.run.result import EXIT_FAILED, EXIT_GAPS, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, RunError
from coeval.run.state import RunState
from coeval.run.stop_report import LIMIT_CAUSES, count_unlisted, limit_message, stop_the_others, stopped_with
from coeval.scheduler import Scheduler, SchedulerStats
from coeval.storage.run_folder import RunFolder, utc_now
from coeval.storage.safe_files import folder_lock

__all__ = ["PhaseLoop"]


#: How a phase ended when it stops the run: (status, exit code, message).
Verdict = tuple[str, int, str]


class PhaseLoop:
    """Runs the phases in order (some at once) on ``scheduler`` and says what the run came to."""

    def __init__(self, state: RunState, scheduler: Scheduler) -> None:
        self.state = state
        self.scheduler = scheduler
        #: the one progress tracker of each pipelined phase running, shared by its passes
        self._trackers: dict[str, Any] = {}
        #: each pipelined phase's lanes, added up over its passes (for ``lanes.json``)
        self._pass_lanes: dict[str, Any] = {}

    async def run_phases(
        self, phases: list[Phase], completed: set[str], source: RunFolder | None, ledger: Ledger, log: Any
    ) -> Verdict:
        state = self.state
        upstream_wrote = False
        index = 0
        while index < len(phases):
            phase = phases[index]
            if state.stop_requested:
                break
            mode = self._mode_to_run(phase, completed, upstream_wrote, log)
            if mode is None:
                index += 1
                continue
            group = pipeline_group(phases, index, {p.name: state.mode(p) for p in phases}) \
                if self._may_pipeline() else [phase]
            for later in group[1:]:  # fed by a phase that runs: never skipped, but their modes checked
                self._mode_to_run(later, set(), True, log)
            if len(group) == 1:
                verdict = await self._run_phase(phase, mode, source, ledger, log)
            else:
                verdict = await self._run_pipelined(group, source, ledger, log)
            if verdict is not None:
                return verdict
            upstream_wrote = upstream_wrote or any(state.results[p.name].written > 0 for p in group)
            index += len(group)
        return _verdict(self.state, phases, self.scheduler)

    def _may_pipeline(self) -> bool:
        """Pipelining is on, no batch executor keeps a barrier, this process is the folder's
        only writer, and the run is not adaptive (its phase 5 waits for every answer)."""
        state = self.state
        adaptive = adaptive_settings(RunView(state.config, state.run, state.registries))  # phase 5 goes in rounds
        return bool(state.options.pipeline) and self.scheduler.batch_executor is None and not state.only \
            and adaptive is None

    def _mode_to_run(self, phase: Phase, completed: set[str], upstream_wrote: bool, log: Any) -> str | None:
        """The mode ``phase`` runs in, or None when ``--continue`` finds it complete."""
        state = self.state
        name = phase.name
        mode = state.mode(phase)
        if state.options.continue_run and name in completed and not upstream_wrote:
            survey = state.surveys.pop(name, None) or survey_of(phase, RunView(state.config, state.run, state.registries))
            if survey.complete:
                state.results[name] = PhaseResult(name, mode, status="skipped", survey=survey)
                log.info("phase skipped: completed earlier", phase=name)
                return None
        if mode not in getattr(phase, "modes", ("New", "Keep", "Extend", "Model")):
            raise RunError(f"mode {mode} is not allowed for phase {name} (V-08)")
        return mode

    async def _submit(self, phase_id: str, items: Any, fed: Passes | None = None, current: Pass | None = None) -> Any:
        """Hand ``items`` to the scheduler (the pass ``current`` of a pipelined phase: those
        no pass took yet)."""
        state = self.state
        if state.stop_requested:  # a phase (or pass) that reached its calls after the stop makes none
            return None
        if fed is not None and current is not None:
            items = fed.listed_by(current, untaken(items, fed.taken))
        shared = self._trackers.get(phase_id)
        stats = await self.scheduler.run(phase_id, items, tracker=TrackerPass(shared) if shared else None)
        lanes = stats
        if fed is not None:  # the phase's lanes over all its passes
            lanes = add_pass(self._pass_lanes.setdefault(phase_id, SchedulerStats(phase=phase_id)), stats)
        record_lanes(state.run, phase_id, lanes)  # per-lane figures for `coeval status`
        return stats

    async def _run_pipelined(self, group: list[Phase], source: RunFolder | None, ledger: Ledger,
                             log: Any) -> Verdict | None:
        """Run ``group``'s phases at once, each downstream phase in passes fed by the one
        before it; the first phase (in run order) that stops the run gives the verdict."""
        state = self.state
        if state.progress is not None:
            view = RunView(state.config, state.run, state.registries)
            for phase in group:
                self._trackers[phase.name] = state.progress.start_phase(phase.name, _planned(phase, view))
        log.info("phases pipelined", phases=[p.name for p in group])
        feeds: list[Upstream | None] = [None]
        runs = []
        for position, phase in enumerate(group):
            result = state.results[phase.name] = PhaseResult(phase.name, state.mode(phase))
            feed = Upstream(result) if position < len(group) - 1 else None
            runs.append(self._run_phase(phase, result.mode, source, ledger, log, upstream=feeds[-1], feed=feed,
                                        result=result))
            feeds.append(feed)
        tasks = [asyncio.ensure_future(run) for run in runs]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for task in tasks:  # an error (a full disk) stops the other phases, as it would the loop
                if task in done and not task.cancelled() and (error := task.exception()) is not None:
                    await stop_the_others(self.scheduler, tasks)  # for that error, not for a Ctrl-C
                    stopped_with((state.results[p.name] for p in group), error)
                    raise error  # the first error, not what followed it
            verdicts = [task.result() for task in tasks]
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        finally:
            for phase in group:
                tracker = self._trackers.pop(phase.name, None)
                if tracker is not None:
                    tracker.finish()
        return next((v for v in verdicts if v is not None), None)

    async def _run_phase(self, phase: Phase, mode: str, source: RunFolder | None, ledger: Ledger, log: Any, *,
                         upstream: Upstream | None = None, feed: Upstream | None = None,
                         result: PhaseResult | None = None) -> Verdict | None:
        """Run one phase (in passes when ``upstream`` feeds it; ``feed`` is told how it
        ends); its verdict when it stops the run."""
        state = self.state
        name = phase.name
        if result is None:
            result = state.results[name] = PhaseResult(name, mode)
        started = utc_now()
        state.meta.phase_started(name, state.phase_ids)
        log.info("phase started", phase=name, mode=mode)
        verdict: Verdict | None = None
        try:
            verdict = await self._run_passes(phase, mode, result, source, ledger, log, upstream, started)
            if verdict is not None:
                return verdict
            if not (state.stop_requested and result.skip_causes["cancelled"]):  # stopped early: not surveyed (slow)
                result.survey = survey_of(phase, RunView(state.config, state.run, state.registries))
            if upstream is not None:
                await upstream.ended.wait()  # its status is set
            phases = state.phases
            upstream_complete = all(state.results[p.name].status in ("completed", "skipped")  # complete inputs only
                                    for p in phases[: phases.index(phase)] if p.name in state.results)
            complete = upstream_complete and result.survey and result.survey.complete
            result.status = "completed" if complete else "partial"
            if state.stop_requested and result.status != "completed":
                result.status = "interrupted"
            state.meta.phase_finished(result, started, state.phase_ids)
            _log_phase(result, log)
            return None
        except asyncio.CancelledError:
            result.status = "interrupted"
            with contextlib.suppress(OSError):  # a full disk stopped the run: its own error is raised
                state.meta.phase_finished(result, started, state.phase_ids)
            raise
        except OSError as exc:  # a file could not be written (a full disk): the phase did not finish
            result.status, result.message = "failed", f"cannot write {exc.filename or ''}: {exc.strerror or exc}"
            raise
        finally:
            tracker = self._trackers.pop(name, None)  # a pipelined phase's bar ends with the phase
            if tracker is not None:
                count_unlisted(tracker, result, stop_requested=state.stop_requested)
                tracker.finish()
            if feed is not None:
                feed.end(failed=verdict is not None or result.status not in ("completed", "partial"))

    async def _run_passes(self, phase: Phase, mode: str, result: PhaseResult, source: RunFolder | None,
                          ledger: Ledger, log: Any, upstream: Upstream | None, started: str) -> Verdict | None:
        """The phase's run: one pass, or, fed by ``upstream``, a pass each time it has
        written more and a last one once it has ended (none once it failed). A pass may
        start while earlier ones still have calls in flight (at most :data:`LISTING_PASSES`
        still listing items): they share the phase's writers, and an item one pass has taken
        is not taken again."""
        state = self.state
        if upstream is None:
            try:
                await self._pass(phase, mode, result, source, ledger, log)
            except PhaseError as exc:
                return self._failed(exc, phase, result, started, log)
            return None
        fed = Passes(WriterPool(exclusive=not state.only, once=True))
        running: list[Pass] = []
        try:
            while not state.stop_requested:
                ended = upstream.ended.is_set()
                seen = upstream.written()
                running.append(Pass(functools.partial(self._pass, phase, mode, result, source, ledger, log, fed)))
                mode = "Extend"  # a later pass adds to what the first wrote
                if ended:
                    break
                growth = asyncio.ensure_future(upstream.grown(seen))
                await asyncio.wait([growth, running[0].task], return_when=asyncio.FIRST_COMPLETED)
                if not growth.done():  # the older pass ended first: its errors first
                    await _settled(running, running[0])
                    await growth
                if upstream.failed:
                    break  # as if run one by one: nothing more is asked of a failed upstream
                await self._room_for_a_pass(running, fed)
            while running:
                await _settled(running, running[0])
        except PhaseError as exc:
            await _cancel_passes(running)
            return self._failed(exc, phase, result, started, log)
        except BaseException:
            await _cancel_passes(running)
            raise
        finally:
            fed.writers.close()
            ledger.flush_quietly()
        return None

    async def _room_for_a_pass(self, running: list[Pass], fed: Passes) -> None:
        """Settle the passes that ended (their errors here), and wait while
        :data:`LISTING_PASSES` passes still have items to list."""
        while True:
            for done in [p for p in running if p.task.done()]:
                await _settled(running, done)
            if fed.listing(running) < LISTING_PASSES:
                return
            fed.changed.clear()
            changed = asyncio.ensure_future(fed.changed.wait())
            await asyncio.wait([changed, *(p.task for p in running)], return_when=asyncio.FIRST_COMPLETED)
            changed.cancel()

    def _failed(self, exc: PhaseError, phase: Phase, result: PhaseResult, started: str, log: Any) -> Verdict:
        """The verdict of a phase that refused (exit 2) or failed (exit 1)."""
        state = self.state
        refused = isinstance(exc, PhaseRefusedError)
        result.status, result.message = "failed", str(exc)
        state.meta.phase_finished(result, started, state.phase_ids)
        log.error("phase refused" if refused else "phase failed", phase=phase.name, reason=str(exc))
        return "failed", EXIT_USAGE if refused else EXIT_FAILED, str(exc)

    async def _pass(self, phase: Phase, mode: str, result: PhaseResult, source: RunFolder | None, ledger: Ledger,
                    log: Any, fed: Passes | None = None, current: Pass | None = None) -> None:
        """One run of ``phase`` (of a pipelined phase, the pass ``current``: ``fed`` holds
        what its passes share)."""
        state = self.state
        name = phase.name
        submit = self._submit if fed is None else functools.partial(self._submit, fed=fed, current=current)
        ctx = PhaseContext(
            state.config, state.run, mode=mode, submit=submit, log=log.bind(phase=name),
            only_models=state.only, record_outcome=ledger.add, registries=state.registries,
            source_run=source,
        )
        ctx.result = result
        if fed is not None:
            ctx.writers = fed.writers
            ctx.wants_totals = False
        # shards share phases 1-2: one asks the teachers, the others then find the artifacts
        shared_lock = folder_lock(state.run.root / ".teacher_phases.lock", thread_local=False) \
            if state.only and name in MAPPING_PHASES else None
        try:
            if shared_lock is not None:
                await asyncio.to_thread(shared_lock.acquire)
            try:
                await phase.run(ctx)
            finally:
                if shared_lock is not None:
                    shared_lock.release()
        finally:
            if fed is None:
                ctx.writers.close()
                ledger.flush_quietly()


def _planned(phase: Phase, view: RunView) -> int:
    """A pipelined phase's items for its progress bar, from the config (its upstream has
    not made them yet): the calls its plan expects when it starts from nothing, else 0 (the
    bar's total then grows with the passes)."""
    if configured_mode(view.config, phase) != "New":
        return 0
    plan = getattr(phase, "plan", None)
    try:
        return sum(plan(view).calls_by_model.values()) if callable(plan) else 0
    except Exception:  # a plugin phase's plan: the bar does without
        return 0


async def _settled(running: list[Pass], one: Pass) -> None:
    """Wait for the pass ``one``; its error, if any, is raised here."""
    try:
        await one.task
    finally:
        running.remove(one)


async def _cancel_passes(running: list[Pass]) -> None:
    for one in running:
        one.task.cancel()
    await asyncio.gather(*(p.task for p in running), return_exceptions=True)


def _log_phase(result: PhaseResult, log: Any) -> None:
    """The phase's end in run.log, with what it left and why."""
    total = result.survey.total if result.survey is not None else None
    fields = {"phase": result.phase, "status": result.status, "written": result.written,
              "failed": result.failed, "left": result.skipped}
    if total is not None:
        fields.update(expected=total.expected, present_ok=total.ok)
    if result.skip_causes:
        fields["left_by_cause"] = dict(result.skip_causes)
    for cause in LIMIT_CAUSES & set(result.skip_causes):  # the summary line says it on the console
        log.info(f"{cause} reached: items left for --continue", phase=result.phase,
                 items=result.skip_causes[cause])
    # the console's summary line already says how the phase ended: run.log keeps the details
    log.info("phase finished", **fields)


def _verdict(state: RunState, phases: list[Phase], scheduler: Scheduler) -> Verdict:
    """The run's (status, exit code, message) from what its phases did."""
    if state.stop_requested:
        return "interrupted", EXIT_INTERRUPTED, "interrupted"
    ran = [state.results[p.name] for p in phases if p.name in state.results]
    failed_items = sum(r.failed for r in ran)
    skip_causes: Counter[str] = Counter()
    for r in ran:
        skip_causes.update(r.skip_causes)
    all_complete = all(r.status in ("completed", "skipped") for r in ran) and len(ran) == len(phases)
    if all_complete:
        return "completed", EXIT_OK, "all phases complete"
    old_failures = sum(r.survey.total.failed for r in ran if r.survey is not None)
    if failed_items or (old_failures and not state.only):
        return "incomplete", EXIT_FAILED, f"{failed_items} items failed; see `coeval status`"
    if skip_causes and set(skip_causes) <= LIMIT_CAUSES:
        return "incomplete", EXIT_GAPS, limit_message(skip_causes, state.config, scheduler.calls,
                                                      scheduler.spend_usd)
    if state.only and not skip_causes:
        return "incomplete", EXIT_OK, "this shard's models are done; other shards' items remain"
    return "incomplete", EXIT_FAILED, "some items are still missing; see `coeval status`"
