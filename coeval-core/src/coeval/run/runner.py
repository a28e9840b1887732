"""Run an experiment: the five phases (and any plugin phases) over one run folder.

    from coeval.plugins.config_loading import load_config
    from coeval.run.runner import run_experiment
    from coeval.run.options import RunOptions

    result = run_experiment(load_config("exp.yaml"), RunOptions(continue_run=True))
    result.exit_code, result.run_folder, result.phases["evaluation"].written

What a run guarantees:

* **Nothing is paid twice.** Every finished item is one flushed JSON line before it counts
  as done; a restarted run (``--continue``) reads what is there and makes only the calls
  that are missing. A phase is recorded complete only when every expected item has an
  ``ok`` record, so failures and quota gaps are filled by the next ``--continue``.
* **One writer per folder.** A normal run holds the run folder's lock exclusively; a second
  run on the same folder fails at once with a clear message. ``--only-models`` shards hold
  it shared and may work side by side (each model's records go to its own files, and
  ``meta.json`` is updated under a lock).
* **Stopping is safe.** The first Ctrl-C (or SIGTERM) stops starting calls, lets calls in
  flight finish and be written, records the run as interrupted and exits 130; a second
  Ctrl-C stops at once. Everything written so far is kept, and ``--continue`` goes on.
* **Quota and budget hold across restarts**: calls and spend per model are kept in
  ``meta.json``.

Exit codes: 0 complete; 1 items or a phase failed (``coeval status`` says which; fill
with ``--continue``); 2 the run could not start (bad input, busy folder, missing plugin);
3 stopped only by a quota or budget, nothing failed (raise it and ``--continue``);
130 interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import TYPE_CHECKING, Any

from coeval.config.credentials import redact
from coeval.config.model import Config
from coeval.config.phase_order import ordered_phases
from coeval.console.logs import run_logging
from coeval.console.progress import NullProgress, ProgressReporter
from coeval.phase_ids import RECORD_PHASES
from coeval.phases.base import Phase, RunView
from coeval.phases.info import configured_mode
from coeval.phases.run_selection import batch_enabled, phases_that_may_run
from coeval.planning.cost import estimate_and_report, planned_phase_seconds, record_estimate
from coeval.planning.ingested import merge_ingested
from coeval.plugins.manager import registries as installed
from coeval.run import startup
from coeval.run.call_estimates import call_estimates
from coeval.run.collector import run_collector
from coeval.run.drift import record_settings
from coeval.run.kept_artifacts import as_the_run_did
from coeval.run.ledger import Ledger, reconcile_ledger, written_calls
from coeval.run.meta import a_process_stopped_unfinished
from coeval.run.options import RunOptions
from coeval.run.phase_loop import PhaseLoop
from coeval.run.result import (
    EXIT_FAILED,
    EXIT_GAPS,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    RunError,
    RunResult,
)
from coeval.run.signals import Interrupts, handle_signals, off_the_loop, stop_gracefully
from coeval.run.state import RunState
from coeval.scheduler import Scheduler, SchedulerLimits
from coeval.scheduler.limits import max_attempts_for
from coeval.storage.claims import ModelClaims
from coeval.storage.fork import fork_run
from coeval.storage.leftovers import remove_stale_scratch, sweep_temp_files
from coeval.storage.lock import RunFolderBusyError, RunLock
from coeval.storage.run_folder import PHASE_DIRS, RunFolder, cut_partial_last_line
from coeval.storage.safe_files import UnsafeRunFile
from coeval.storage.snapshot import write_config_snapshot

if TYPE_CHECKING:
    from coeval.plugins.manager import Registries

__all__ = [
    "EXIT_FAILED",
    "EXIT_GAPS",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "RunError",
    "RunResult",
    "arun_experiment",
    "batch_enabled",
    "merge_ingested",
    "ordered_phases",
    "run_experiment",
]

_RECORD_PHASES = RECORD_PHASES
#: the name this check had before it moved to :mod:`coeval.run.meta`
_a_process_stopped_unfinished = a_process_stopped_unfinished


# ---------------------------------------------------------------------------- the run


class ExperimentRun:
    """One run: its state (:class:`~coeval.run.state.RunState`), the start-up
    (:mod:`coeval.run.startup`), the lock, and the phase loop
    (:class:`~coeval.run.phase_loop.PhaseLoop`) once the scheduler is built."""

    def __init__(self, config: Config, options: RunOptions, *, registries: Registries, progress: Any,
                 interrupts: Interrupts | None) -> None:
        self.state = RunState(config, options, registries=registries, progress=progress, interrupts=interrupts)

    async def execute(self) -> RunResult:
        state = self.state
        meta, source = startup.preflight(state)
        if state.options.continue_run:
            state.user_config = state.config
            state.config = merge_ingested(state.config, meta)
        phases = state.phases
        completed = set(meta.get("phases_completed") or [])
        view = RunView(state.config, state.run, state.registries)
        may_run = await off_the_loop(lambda: phases_that_may_run(  # off the loop: a signal ends the run meanwhile
            phases, view, completed, continue_run=state.options.continue_run, surveys=state.surveys))
        lock = RunLock(state.run.root, shared=bool(state.only))
        claims = ModelClaims(state.run.root, state.only)  # a shard claims its models: never two alike
        # an existing folder is locked before probing, so a busy one is refused at once and
        # with no call; a new one only after (a failed probe must leave nothing behind)
        lock_first = state.run.root.is_dir()
        try:
            if lock_first:
                self._acquire(lock, claims)
            startup.build_interfaces(state, may_run)
            await startup.probe(state)
            if not lock_first:
                self._acquire(lock, claims)
                self._check_still_new()
            level = (state.options.log_level or state.config.experiment.log_level).upper()
            # the console shows warnings and the progress lines; run.log gets every event
            console = state.options.console_level("WARNING" if level == "INFO" else level)
            with run_logging(state.run.log_path, level=level, console_level=console,
                             experiment=state.config.experiment.id) as log:
                result = await self._locked(phases, completed, source, log)
            if state.options.progress and state.options.closing_line:
                sys.stderr.write(f"coeval: run {result.status} ({state.run.root}), exit code {result.exit_code}"
                                 + (f": {result.message}" if result.status != "completed" else "") + "\n")
            return result
        finally:
            for iface in state.interfaces.values():
                with contextlib.suppress(Exception):
                    await iface.aclose()
            claims.release()
            lock.release()

    def _check_still_new(self) -> None:
        """Under the lock, before anything is written: the folder was new when this run
        started up; another run may have made it since (a start-up race). Then this one
        must not touch it."""
        state = self.state
        if state.run.meta_path.exists() and not state.options.continue_run and not state.only:
            raise RunError(f"run folder {state.run.root} already exists: another run created it while this one "
                           "was starting (V-11); nothing was written. Pass --continue to resume it, or choose a "
                           "new experiment.id")

    @staticmethod
    def _acquire(lock: RunLock, claims: ModelClaims) -> None:
        try:
            lock.acquire()
            claims.acquire()
        except RunFolderBusyError as exc:
            raise RunError(str(exc)) from None

    async def _locked(self, phases: list[Phase], completed: set[str], source: RunFolder | None, log: Any) -> RunResult:
        state = self.state
        fork = None
        if source is not None and not state.run.exists():
            copy = [p.name for p in phases if p.name in PHASE_DIRS and configured_mode(state.config, p) != "New"]
            fork = fork_run(source, state.run, copy)
            copied_calls, copied_spend = written_calls(state.run)
            fork["calls_copied"] = dict(copied_calls)
            fork["spend_copied_usd"] = {k: round(v, 10) for k, v in copied_spend.items()}
            log.info("forked from an earlier run", source=fork["path"], phases=fork["phases_copied"],
                     files=fork["files_copied"])
        killed_before = a_process_stopped_unfinished(state.run.read_meta())
        exp = state.config.experiment
        meta = state.meta.init(exp.id, continue_run=state.options.continue_run,
                               resume_from=state.options.resume_from or exp.resume_from, fork=fork)
        if not state.only:  # alone in the folder: heal files whose last line a crash cut
            sweep_temp_files(state.run.root)  # and remove the temporary files of killed writes
            remove_stale_scratch()  # and the scratch copies of killed `repair --dry-run`s
            for phase in (p.name for p in phases if p.name in PHASE_DIRS):
                for path in state.run.jsonl_files(phase):
                    cut = cut_partial_last_line(path)
                    if cut:
                        log.warning("cut a partial last line (a crash interrupted its write)", file=str(path),
                                    bytes=cut)
            # calls a killed process had in flight count as made; meta.json counts the ledger's
            meta = await off_the_loop(lambda: reconcile_ledger(state.run, meta, log, killed_before=killed_before))
        did = as_the_run_did(state.user_config, state.run)  # kept maps and rubrics, not edits it ignores
        write_config_snapshot(state.run, did)
        record_settings(state.run, did)
        if not state.options.continue_run and fork is None:  # for `coeval status`: estimated against actual
            await off_the_loop(lambda: record_estimate(state.config, only_models=state.options.only_models,
                                                       keys_file=state.options.keys_file, registries=state.registries,
                                                       pipeline=state.options.pipeline))
        if hasattr(state.progress, "expect"):  # the bars' ETA before a rate is known: the plan's
            state.progress.expect(planned_phase_seconds(state.run.root))
        log.info("run started", folder=str(state.run.root), continue_run=state.options.continue_run,
                 only_models=sorted(state.only) or None)
        startup.warn_stale_static_artifacts(state, log)
        estimates = await off_the_loop(lambda: call_estimates(state.config, state.registries)) \
            if exp.budget_usd is not None else {}
        limits = SchedulerLimits(
            generation_retries=exp.generation_retries,
            # the bound on calls per item leaves room for every retry the config asks for
            max_attempts=max_attempts_for(exp.generation_retries),
            quota={name: q.max_calls for name, q in exp.quota.items()},
            budget_usd=exp.budget_usd,
            calls_before={k: int(v) for k, v in (meta.get("calls") or {}).items()},
            spend_before_usd=float(sum((meta.get("spend_usd") or {}).values())),
            call_estimates_usd=estimates,
        )
        if state.only:  # shards: flush often, and learn what the other shards spent
            ledger = Ledger(state.run, state.run_id, calls_before=limits.calls_before,
                            spend_before_usd=limits.spend_before_usd, interval_s=0.5)
        else:
            ledger = Ledger(state.run, state.run_id)
        state.scheduler = scheduler = Scheduler(state.interfaces, limits, progress=state.progress,
                                                batch_executor=startup.batch_executor(state, log), journal=ledger)
        if state.only:
            ledger.scheduler = state.scheduler
        if state.interrupts is not None:
            state.interrupts.on_first = self._graceful_stop
        try:
            status, code, message = await PhaseLoop(state, scheduler).run_phases(phases, completed, source, ledger, log)
        except RunError:
            ledger.close()
            state.meta.finish("failed", EXIT_USAGE)
            raise
        except OSError:
            with contextlib.suppress(OSError):
                ledger.close()  # the calls were paid even if their records were not written
            raise
        except asyncio.CancelledError:
            ledger.close()
            state.meta.finish("interrupted", EXIT_INTERRUPTED)
            log.warning("run interrupted; everything written so far is kept", folder=str(state.run.root))
            if state.interrupts is not None:
                state.interrupts.result = self._result(EXIT_INTERRUPTED, "interrupted", "interrupted")
            raise
        ledger.close()
        state.meta.finish(status, code)
        log.info("run finished", status=status, exit_code=code)
        return self._result(code, status, message)

    def _graceful_stop(self) -> None:
        state = self.state
        state.stop_requested = True
        stop_gracefully(state.scheduler)

    def _result(self, code: int, status: str, message: str) -> RunResult:
        state = self.state
        return RunResult(exit_code=code, run_folder=state.run.root, status=status, phases=dict(state.results),
                         message=message)


# ---------------------------------------------------------------------------- entry points


async def arun_experiment(
    config: Config,
    options: RunOptions = RunOptions(),  # noqa: B008 - frozen attrs instance
    *,
    registries: Registries | None = None,
    progress: Any = None,
    _interrupts: Interrupts | None = None,
) -> RunResult:
    """Run the experiment in the running event loop (for embedding). Cancelling the task
    stops the run; what was written is kept and ``meta.json`` says ``interrupted``.
    ``registries``: the plugins' phases, interfaces and evaluators (the installed ones when
    None: this is an entry point of the Python API)."""
    if registries is None:
        registries = installed()
    if progress is None:
        # progress=False: an embedding program gets no console output at all
        progress = (ProgressReporter(enabled=None if options.verbosity >= 0 else False, summary=options.verbosity >= 0)
                    if options.progress else NullProgress())
    run = ExperimentRun(config, options, registries=registries, progress=progress, interrupts=_interrupts)
    try:
        with run_collector():
            return await run.execute()
    except RunError as exc:
        message = redact(str(exc))
        sys.stderr.write(f"error: {message}\n")
        return RunResult(exit_code=EXIT_USAGE, run_folder=run.state.run.root, status="error", message=message)
    except OSError as exc:
        # The run folder cannot be written (read-only, disk full, removed under us). Every
        # record written before is complete (a cut-off last line is dropped on the next
        # open), so the user frees space or fixes permissions and runs --continue.
        message = redact(_storage_error(exc, started=run.state.run.exists()) + "." + _calls_made(run.state))
        with contextlib.suppress(Exception):
            run.state.meta.finish("error", EXIT_USAGE)
        sys.stderr.write(f"error: {message}\n")
        return RunResult(exit_code=EXIT_USAGE, run_folder=run.state.run.root, status="error", message=message,
                         phases=dict(run.state.results))
    finally:
        with contextlib.suppress(Exception):
            progress.close()


def _calls_made(run: RunState) -> str:
    """How many calls this process made, as the call ledger counts them, and how many of
    them lost their record: the one count the console, ``--json`` and (once it can be
    written) ``meta.json`` give."""
    sched = run.scheduler
    if sched is None:
        return ""
    made = sum(sched.calls.values()) - sum(sched.limits.calls_before.values())
    lost = sum(r.unwritten for r in run.results.values())
    text = f" {made} calls made by this run, each counted in calls.jsonl (quotas and the budget hold)"
    if lost:
        text += f"; {lost} of them finished but their records could not be written: --continue makes them again"
    return text


def _storage_error(exc: OSError, *, started: bool) -> str:
    if isinstance(exc, UnsafeRunFile):  # a FIFO or an outside link among the run's files: the file and the rule
        return str(exc)
    what = f" {exc.filename}" if exc.filename else ""
    reason = exc.strerror or str(exc) or type(exc).__name__
    if not started:  # no meta.json: nothing to continue from
        return f"cannot write{what}: {reason}. Nothing was written; fix the cause (free disk space, permissions) and run again"
    return (f"cannot write{what}: {reason}. Records written so far are kept; fix the cause "
            "(free disk space, permissions) and run again with --continue")


def run_experiment(
    config: Config,
    options: RunOptions = RunOptions(),  # noqa: B008 - frozen attrs instance
    *,
    registries: Registries | None = None,
) -> RunResult:
    """Run the experiment to the end (blocking). Ctrl-C stops it cleanly (exit code 130).

    With ``options.estimate_only`` or ``experiment.estimate_cost: true`` the cost estimate is
    printed and written to ``cost_estimate.json`` first; ``estimate_only`` then returns
    without running any phase (status ``estimated``). ``registries``: the plugins' phases,
    interfaces and evaluators (the installed ones when None).
    """
    if registries is None:
        registries = installed()
    if options.estimate_only or config.experiment.estimate_cost:
        estimated = _estimate_first(config, options, registries)
        if options.estimate_only:
            return estimated
    interrupts = Interrupts(None)

    async def main() -> RunResult:
        interrupts.task = asyncio.current_task()
        with handle_signals(asyncio.get_running_loop(), interrupts):
            try:
                return await arun_experiment(config, options, registries=registries, _interrupts=interrupts)
            except asyncio.CancelledError:
                return interrupts.result or _interrupted(config)

    try:
        with asyncio.Runner() as runner:
            return runner.run(main())
    except KeyboardInterrupt:
        return interrupts.result or _interrupted(config)


def _estimate_first(config: Config, options: RunOptions, registries: Registries) -> RunResult:
    """Print and store the cost estimate; warn when it exceeds ``budget_usd``."""
    estimate = estimate_and_report(
        config,
        only_models=options.only_models,
        keys_file=options.keys_file,
        continue_run=options.continue_run,
        samples=options.estimate_samples,
        write_file=True,
        registries=registries,
        pipeline=options.pipeline,
    )
    budget = config.experiment.budget_usd
    message = ""
    if budget is not None and estimate.total_cost_usd > budget:
        message = (
            f"the estimate (${estimate.total_cost_usd:,.2f}) exceeds budget_usd (${budget:,.2f}); "
            "the run stops making calls when the budget is spent"
        )
        sys.stderr.write(f"coeval: warning: {message}\n")
    run = RunFolder.for_experiment(config.experiment.storage_folder, config.experiment.id)
    return RunResult(exit_code=EXIT_OK, run_folder=run.root, status="estimated", message=message)


def _interrupted(config: Config) -> RunResult:
    run = RunFolder.for_experiment(config.experiment.storage_folder, config.experiment.id)
    return RunResult(exit_code=EXIT_INTERRUPTED, run_folder=run.root, status="interrupted", message="interrupted")

