"""What a run does before it writes anything: the preflight (``--only-models``, the disk
rules asked again), the source run of ``resume_from``, one interface per model needed, the
start-up probe, the batch executor, and the warning for edited static artifacts."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Mapping
from typing import Any

from coeval.config.credentials import KeyFileError, KeyStore, redact
from coeval.config.validate import disk_issues, resolve_run_reference
from coeval.contract.status import missing_interface
from coeval.phases.base import PhaseError, RunView, StaticArtifactPhase
from coeval.phases.run_selection import batch_enabled, models_needed
from coeval.run._state import RunState
from coeval.run.probe import ProbeFailed, ProbeResult, models_to_probe, probe_with_retries
from coeval.run.result import RunError
from coeval.shipped_interfaces import providing_distribution
from coeval.storage.meta_check import BadRunFile, check_meta
from coeval.storage.run_folder import RunFolder

__all__ = ["RunStartup"]


class RunStartup(RunState):
    """The run's steps before anything is written."""

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
        try:
            check_meta(meta, run.meta_path)
        except BadRunFile as exc:
            raise RunError(str(exc)) from None
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
