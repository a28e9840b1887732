"""Run an experiment: the five phases (and any plugin phases) over one run folder.

    from coeval.config import load_config
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
import json
import sys
import uuid
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from coeval.config.model import Config
from coeval.config.validate import disk_issues, resolve_run_reference
from coeval.planning.cost import estimate_and_report
from coeval.config.credentials import KeyFileError, KeyStore, redact
from coeval.run.drift import record_settings
from coeval.interfaces.base import Interface
from coeval.run.kept_artifacts import as_the_run_did
from coeval.interfaces.known import providing_distribution
from coeval.console.lane_figures import record_lanes
from coeval.console.logs import run_logging
from coeval.phases.info import configured_mode
from coeval.phases.order import ordered_phases
from coeval.phases.base import (
    Phase,
    PhaseContext,
    PhaseError,
    PhaseRefusedError,
    PhaseResult,
    RunView,
    StaticArtifactPhase,
)
from coeval.contract.status import missing_interface
from coeval.contract.manager import registries as installed
from coeval.run.probe import ProbeFailed, ProbeResult, models_to_probe, probe_with_retries
from coeval.console.progress import NullProgress, ProgressReporter
from coeval.run.options import RunOptions
from coeval.run.ingested import merge_ingested
from coeval.run.ledger import Ledger, recount_lost_calls, written_calls
from coeval.run.meta import RunMeta, a_process_stopped_unfinished
from coeval.phases.ordering import batch_enabled, models_needed, phases_that_may_run, run_mode
from coeval.run.signals import Interrupts, handle_signals, off_the_loop, stop_gracefully
from coeval.scheduler import Scheduler, SchedulerLimits
from coeval.scheduler.core import DEFAULT_MAX_ATTEMPTS
from coeval.storage.claims import ModelClaims
from coeval.storage.fork import fork_run
from coeval.storage.leftovers import sweep_temp_files
from coeval.storage.lock import RunFolderBusyError, RunLock
from coeval.storage.run_folder import PHASE_DIRS, RunFolder, cut_partial_last_line, utc_now
from coeval.storage.safe_files import folder_lock
from coeval.storage.snapshot import write_config_snapshot

if TYPE_CHECKING:
    from coeval.contract.manager import Registries

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

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_GAPS = 3
EXIT_INTERRUPTED = 130

_RECORD_PHASES = ("data_generation", "response_collection", "evaluation")
#: Skip causes that are a graceful stop, not a failure.
_LIMIT_CAUSES = frozenset({"quota", "budget"})
#: the name this check had before it moved to :mod:`coeval.run.meta`
_a_process_stopped_unfinished = a_process_stopped_unfinished


class RunError(Exception):
    """The run cannot start or go on (bad input, busy folder, missing distribution)."""


@attrs.frozen
class RunResult:
    """What a run did. ``phases`` maps phase id -> :class:`PhaseResult`."""

    exit_code: int
    run_folder: Path
    status: str  # completed | incomplete | failed | interrupted | error
    phases: Mapping[str, PhaseResult] = attrs.field(factory=dict)
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.exit_code == EXIT_OK

    def counts(self) -> dict[str, dict[str, int]]:
        """Per phase: records written ok / failed by this run, items left (quota, ...)."""
        return {
            name: {"written": r.written, "failed": r.failed, "skipped": r.skipped, "calls": r.calls}
            for name, r in self.phases.items()
        }


# ---------------------------------------------------------------------------- the run


class _Run:
    def __init__(
        self,
        config: Config,
        options: RunOptions,
        *,
        registries: Registries,
        progress: Any,
        interrupts: Interrupts | None,
    ) -> None:
        self.config = config
        #: the config as given (``self.config`` may add ingested tasks): what config.yaml keeps
        self.user_config = config
        self.options = options
        self.registries = registries
        #: the registered phases in run order (phase ids and modes come from them)
        self.phases = ordered_phases(registries)
        self.phase_ids = [p.name for p in self.phases]
        self.progress = progress
        self.interrupts = interrupts
        exp = config.experiment
        self.run = RunFolder.for_experiment(exp.storage_folder, exp.id)
        self.only = frozenset(options.only_models)
        #: Names this process's entry in ``meta["runs"]``: shards append theirs concurrently,
        #: so "the last entry" may be another process's.
        self.run_id = uuid.uuid4().hex[:12]
        self.meta = RunMeta(self.run, self.run_id, self.only)
        self.results: dict[str, PhaseResult] = {}
        self.scheduler: Scheduler | None = None
        self.stop_requested = False
        self.interfaces: dict[str, Interface] = {}
        #: Surveys made before the lock was taken, reused by the phase loop: on a finished
        #: run of a million records a survey is the whole cost of --continue, so make it once.
        self._surveys: dict[str, Any] = {}

    # -- checks before anything is written ------------------------------------------------
    def _preflight(self) -> tuple[dict[str, Any], RunFolder | None]:
        exp, opts, run = self.config.experiment, self.options, self.run
        names = {m.name for m in self.config.models}
        unknown = sorted(self.only - names)
        if unknown:
            raise RunError(f"--only-models names models that are not in the config: {', '.join(unknown)}")
        # the disk rules of config/validate.py, asked again now: the disk may have changed since loading
        experiment = {"id": exp.id, "storage_folder": exp.storage_folder,
                      "resume_from": opts.resume_from or exp.resume_from}
        for issue in disk_issues(experiment, continue_run=opts.continue_run, allow_existing_run=bool(self.only)):
            raise RunError(f"{issue.message} ({issue.rule}); {issue.fix}")
        meta = run.read_meta() if run.exists() else {}
        source = self._source_run(meta)
        return meta, source

    def _source_run(self, meta: Mapping[str, Any]) -> RunFolder | None:
        forked = meta.get("forked_from")
        if isinstance(forked, Mapping) and forked.get("path"):
            return RunFolder(str(forked["path"]))
        ref = self.options.resume_from or self.config.experiment.resume_from
        if not ref:
            return None
        folder = resolve_run_reference(self.config.experiment.storage_folder, ref)  # found: the preflight asked V-10
        if folder.resolve() == self.run.root.resolve():
            raise RunError("resume_from names this run itself; use --continue to resume it in place")
        return RunFolder(folder)

    def _mode(self, phase: Phase) -> str:
        return run_mode(self.config, phase, continue_run=self.options.continue_run)

    def _build_interfaces(self, phases_that_may_run: list[str]) -> None:
        view = RunView(self.config, self.run, self.registries)
        needed = models_needed(view, (p for p in self.phases if p.name in phases_that_may_run), self.only)
        try:
            keys = KeyStore.load(self.options.keys_file)
        except KeyFileError as exc:
            raise RunError(str(exc)) from None
        for m in needed.values():
            if m.interface not in self.registries.interfaces:
                dist = providing_distribution(m.interface)
                if dist is not None:
                    raise RunError(f"model {m.name!r}: {missing_interface(m.interface)}")
                raise RunError(f"model {m.name!r}: unknown interface {m.interface!r}")
            factory = self.registries.interfaces.get(m.interface)
            try:
                self.interfaces[m.name] = factory(m, keys.for_provider(m.interface, m.access_key))
            except Exception as exc:
                reason = (redact(str(exc)) or type(exc).__name__).removeprefix(f"model {m.name!r}: ")
                raise RunError(f"model {m.name!r} ({m.interface}): {reason}") from None

    async def _probe(self) -> None:
        """One tiny call per model about to work (``probe_mode``), before anything is written,
        so a wrong key or model id fails in seconds rather than after hours of other calls."""
        exp = self.config.experiment
        mode = self.options.probe_mode or exp.probe_mode
        if mode == "disable" or not self.interfaces:
            return
        names = sorted({m.name for m in models_to_probe(self.config, mode, self.registries)} & set(self.interfaces))

        async def one(name: str) -> ProbeResult:
            iface = self.interfaces[name]
            try:
                await probe_with_retries(iface, 60.0)
            except Exception as exc:
                err = iface.classify_error(exc) if not isinstance(exc, TimeoutError) else exc
                kind = getattr(err, "kind", type(err).__name__)
                return ProbeResult(name, iface.model.interface, False, error=redact(f"{kind}: {err}")[:500])
            return ProbeResult(name, iface.model.interface, True)

        try:
            results = await asyncio.gather(*(one(n) for n in names))
        except asyncio.CancelledError:  # Ctrl-C before any phase: say so, the run ends without a word otherwise
            sys.stderr.write(f"\ncoeval: interrupted during the start-up probe (a first call to each model: "
                             f"{', '.join(names)}); no phase ran. Run the same command again, or add "
                             "--skip-probe to start without it\n")
            raise
        failed = [r for r in results if not r.ok]
        if not failed:
            return
        if (self.options.probe_on_fail or exp.probe_on_fail) == "abort":
            raise RunError(f"{ProbeFailed(failed)}. Nothing was written; fix the model, or run with "
                           "--probe-on-fail warn (or --probe disable)")
        for r in failed:
            sys.stderr.write(f"coeval: warning: model {r.model} failed its probe ({r.error}); running anyway\n")

    def _batch_executor(self, log: Any) -> Any:
        wanted = any(batch_enabled(self.config, m, p.name) for m in self.config.models for p in self.phases)
        if not wanted:
            return None
        try:
            from coeval.scheduler.batching import make_batch_executor
        except ImportError:
            log.warning("batch is enabled in the config but no batch executor is installed; calls run in real time")
            return None
        return make_batch_executor(
            config=self.config,
            run=self.run,
            interfaces=self.interfaces,
            keys_file=self.options.keys_file,
            enabled=lambda model, phase: batch_enabled(self.config, model, phase),
            log=log,
            watch=getattr(self.progress, "batch_watch", None),
            registries=self.registries,
        )

    def _warn_stale_static_artifacts(self, log: Any) -> None:
        """Phases 1-2 keep an existing artifact (Keep, and ``--continue``): a static map or
        rubric edited in the config since is not used. Say so rather than go on in silence."""
        view = RunView(self.config, self.run, self.registries)
        for entry in self.registries.phases:
            phase = entry.value
            if not isinstance(phase, StaticArtifactPhase) or self._mode(phase) == "New":
                continue
            for task in self.config.tasks:
                for kind, path in phase.artifacts(view, task):
                    static = phase.static_value(view, task, kind)
                    if static is None or not path.is_file():
                        continue
                    with contextlib.suppress(PhaseError):
                        if view.read_json(path) != json.loads(json.dumps(dict(static))):
                            what = "rubric" if kind == "rubric" else f"{kind} attributes"
                            log.warning(f"the config's static {what} differs from the run's; the run keeps its own "
                                        "(start a new experiment id to use the new one)",
                                        phase=phase.name, task=task.name, artifact=str(path))

    # -- main -----------------------------------------------------------------------------
    async def execute(self) -> RunResult:
        meta, source = self._preflight()
        if self.options.continue_run:
            self.user_config = self.config
            self.config = merge_ingested(self.config, meta)
        phases = self.phases
        completed = set(meta.get("phases_completed") or [])
        view = RunView(self.config, self.run, self.registries)
        may_run = await off_the_loop(lambda: phases_that_may_run(  # off the loop: a signal ends the run meanwhile
            phases, view, completed, continue_run=self.options.continue_run, surveys=self._surveys))
        lock = RunLock(self.run.root, shared=bool(self.only))
        claims = ModelClaims(self.run.root, self.only)  # a shard claims its models: never two alike
        # an existing folder is locked before probing, so a busy one is refused at once and
        # with no call; a new one only after (a failed probe must leave nothing behind)
        lock_first = self.run.root.is_dir()
        try:
            if lock_first:
                self._acquire(lock, claims)
            self._build_interfaces(may_run)
            await self._probe()
            if not lock_first:
                self._acquire(lock, claims)
                self._check_still_new()
            level = (self.options.log_level or self.config.experiment.log_level).upper()
            # the console shows warnings and the progress lines; run.log gets every event
            console = self.options.console_level("WARNING" if level == "INFO" else level)
            with run_logging(self.run.log_path, level=level, console_level=console,
                             experiment=self.config.experiment.id) as log:
                result = await self._locked(phases, completed, source, log)
            if self.options.progress and self.options.closing_line:
                sys.stderr.write(f"coeval: run {result.status} ({self.run.root}), exit code {result.exit_code}"
                                 + (f": {result.message}" if result.status != "completed" else "") + "\n")
            return result
        finally:
            for iface in self.interfaces.values():
                with contextlib.suppress(Exception):
                    await iface.aclose()
            claims.release()
            lock.release()

    def _check_still_new(self) -> None:
        """Under the lock, before anything is written: the folder was new when this run
        started up; another run may have made it since (a start-up race). Then this one
        must not touch it."""
        if self.run.meta_path.exists() and not self.options.continue_run and not self.only:
            raise RunError(f"run folder {self.run.root} already exists: another run created it while this one "
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
        fork = None
        if source is not None and not self.run.exists():
            copy = [p.name for p in phases if p.name in PHASE_DIRS and configured_mode(self.config, p) != "New"]
            fork = fork_run(source, self.run, copy)
            copied_calls, copied_spend = written_calls(self.run)
            fork["calls_copied"] = dict(copied_calls)
            fork["spend_copied_usd"] = {k: round(v, 10) for k, v in copied_spend.items()}
            log.info("forked from an earlier run", source=fork["path"], phases=fork["phases_copied"],
                     files=fork["files_copied"])
        killed_before = a_process_stopped_unfinished(self.run.read_meta())
        exp = self.config.experiment
        meta = self.meta.init(exp.id, continue_run=self.options.continue_run,
                              resume_from=self.options.resume_from or exp.resume_from, fork=fork)
        if not self.only:  # alone in the folder: heal files whose last line a crash cut
            sweep_temp_files(self.run.root)  # and remove the temporary files of killed writes
            for phase in (p.name for p in phases if p.name in PHASE_DIRS):
                for path in self.run.jsonl_files(phase):
                    cut = cut_partial_last_line(path)
                    if cut:
                        log.warning("cut a partial last line (a crash interrupted its write)", file=str(path),
                                    bytes=cut)
            if killed_before:  # only a process that never finished can have unsaved counts
                meta = await off_the_loop(recount_lost_calls, self.run, meta, log)
        did = as_the_run_did(self.user_config, self.run)  # kept maps and rubrics, not edits it ignores
        write_config_snapshot(self.run, did)
        record_settings(self.run, did)
        log.info("run started", folder=str(self.run.root), continue_run=self.options.continue_run,
                 only_models=sorted(self.only) or None)
        self._warn_stale_static_artifacts(log)
        limits = SchedulerLimits(
            generation_retries=exp.generation_retries,
            # the bound on calls per item leaves room for every retry the config asks for
            max_attempts=max(DEFAULT_MAX_ATTEMPTS, exp.generation_retries + 1),
            quota={name: q.max_calls for name, q in exp.quota.items()},
            budget_usd=exp.budget_usd,
            calls_before={k: int(v) for k, v in (meta.get("calls") or {}).items()},
            spend_before_usd=float(sum((meta.get("spend_usd") or {}).values())),
        )
        self.scheduler = Scheduler(self.interfaces, limits, progress=self.progress,
                                   batch_executor=self._batch_executor(log))
        if self.interrupts is not None:
            self.interrupts.on_first = self._graceful_stop
        if self.only:  # shards: flush often, and learn what the other shards spent
            ledger = Ledger(self.run, self.scheduler, calls_before=limits.calls_before,
                             spend_before_usd=limits.spend_before_usd, interval_s=0.5)
        else:
            ledger = Ledger(self.run)
        try:
            status, code, message = await self._phases(phases, completed, source, ledger, log)
        except RunError:
            ledger.flush()
            self.meta.finish("failed", EXIT_USAGE)
            raise
        except OSError:
            with contextlib.suppress(OSError):
                ledger.flush()  # the calls were paid even if their records were not written
            raise
        except asyncio.CancelledError:
            ledger.flush()
            self.meta.finish("interrupted", EXIT_INTERRUPTED)
            log.warning("run interrupted; everything written so far is kept", folder=str(self.run.root))
            if self.interrupts is not None:
                self.interrupts.result = self._result(EXIT_INTERRUPTED, "interrupted", "interrupted")
            raise
        ledger.flush()
        self.meta.finish(status, code)
        log.info("run finished", status=status, exit_code=code)
        return self._result(code, status, message)

    def _graceful_stop(self) -> None:
        self.stop_requested = True
        stop_gracefully(self.scheduler)

    def _result(self, code: int, status: str, message: str) -> RunResult:
        return RunResult(exit_code=code, run_folder=self.run.root, status=status, phases=dict(self.results),
                         message=message)

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
                survey = self._surveys.pop(name, None) or phase.survey(view)
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
                if self.only and name in ("attribute_mapping", "rubric_mapping") else None
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
                result.survey = phase.survey(RunView(self.config, self.run, self.registries))
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
    run = _Run(config, options, registries=registries, progress=progress, interrupts=_interrupts)
    try:
        return await run.execute()
    except RunError as exc:
        message = redact(str(exc))
        sys.stderr.write(f"error: {message}\n")
        return RunResult(exit_code=EXIT_USAGE, run_folder=run.run.root, status="error", message=message)
    except OSError as exc:
        # The run folder cannot be written (read-only, disk full, removed under us). Every
        # record written before is complete (a cut-off last line is dropped on the next
        # open), so the user frees space or fixes permissions and runs --continue.
        message = redact(_storage_error(exc, started=run.run.exists()))
        lost = sum(r.unwritten for r in run.results.values())
        if lost:
            message += f" ({lost} finished calls could not be recorded; meta.json counts them, --continue makes them again)"
        with contextlib.suppress(Exception):
            run.meta.finish("error", EXIT_USAGE)
        sys.stderr.write(f"error: {message}\n")
        return RunResult(exit_code=EXIT_USAGE, run_folder=run.run.root, status="error", message=message,
                         phases=dict(run.results))
    finally:
        with contextlib.suppress(Exception):
            progress.close()


def _storage_error(exc: OSError, *, started: bool) -> str:
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
