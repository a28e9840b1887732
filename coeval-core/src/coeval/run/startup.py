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
from coeval.run.probe import ProbeFailed, ProbeResult, models_to_probe, probe_with_retries
from coeval.run.result import RunError
from coeval.run.state import RunState
from coeval.shipped_interfaces import providing_distribution
from coeval.storage.meta_check import BadRunFile, check_meta
from coeval.storage.run_folder import RunFolder

__all__ = ["batch_executor", "build_interfaces", "preflight", "probe", "warn_stale_static_artifacts"]


def preflight(state: RunState) -> tuple[dict[str, Any], RunFolder | None]:
    """The checks that need nothing written: ``--only-models``, the disk rules, ``meta.json``.
    Returns ``meta.json`` as it is, and the run ``resume_from`` (or a fork) starts from."""
    exp, opts, run = state.config.experiment, state.options, state.run
    names = {m.name for m in state.config.models}
    unknown = sorted(state.only - names)
    if unknown:
        raise RunError(f"--only-models names models that are not in the config: {', '.join(unknown)}")
    # the disk rules of config/validate.py, asked again now: the disk may have changed since loading
    experiment = {"id": exp.id, "storage_folder": exp.storage_folder,
                  "resume_from": opts.resume_from or exp.resume_from}
    for issue in disk_issues(experiment, continue_run=opts.continue_run, allow_existing_run=bool(state.only)):
        raise RunError(f"{issue.message} ({issue.rule}); {issue.fix}")
    meta = run.read_meta() if run.exists() else {}
    try:
        check_meta(meta, run.meta_path)
    except BadRunFile as exc:
        raise RunError(str(exc)) from None
    source = _source_run(state, meta)
    return meta, source


def _source_run(state: RunState, meta: Mapping[str, Any]) -> RunFolder | None:
    forked = meta.get("forked_from")
    if isinstance(forked, Mapping) and forked.get("path"):
        return RunFolder(str(forked["path"]))
    ref = state.options.resume_from or state.config.experiment.resume_from
    if not ref:
        return None
    folder = resolve_run_reference(state.config.experiment.storage_folder, ref)  # found: the preflight asked V-10
    if folder.resolve() == state.run.root.resolve():
        raise RunError("resume_from names this run itself; use --continue to resume it in place")
    return RunFolder(folder)


def build_interfaces(state: RunState, phases_that_may_run: list[str]) -> None:
    """One interface per model the phases that may run need, into ``state.interfaces``."""
    view = RunView(state.config, state.run, state.registries)
    needed = models_needed(view, (p for p in state.phases if p.name in phases_that_may_run), state.only)
    try:
        keys = KeyStore.load(state.options.keys_file)
    except KeyFileError as exc:
        raise RunError(str(exc)) from None
    for m in needed.values():
        if m.interface not in state.registries.interfaces:
            dist = providing_distribution(m.interface)
            if dist is not None:
                raise RunError(f"model {m.name!r}: {missing_interface(m.interface)}")
            raise RunError(f"model {m.name!r}: unknown interface {m.interface!r}")
        factory = state.registries.interfaces.get(m.interface)
        try:
            state.interfaces[m.name] = factory(m, keys.for_provider(m.interface, m.access_key))
        except Exception as exc:
            reason = (redact(str(exc)) or type(exc).__name__).removeprefix(f"model {m.name!r}: ")
            raise RunError(f"model {m.name!r} ({m.interface}): {reason}") from None


async def probe(state: RunState) -> None:
    """One tiny call per model about to work (``probe_mode``), before anything is written,
    so a wrong key or model id fails in seconds rather than after hours of other calls."""
    exp = state.config.experiment
    mode = state.options.probe_mode or exp.probe_mode
    if mode == "disable" or not state.interfaces:
        return
    names = sorted({m.name for m in models_to_probe(state.config, mode, state.registries)} & set(state.interfaces))

    async def one(name: str) -> ProbeResult:
        iface = state.interfaces[name]
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
    if (state.options.probe_on_fail or exp.probe_on_fail) == "abort":
        raise RunError(f"{ProbeFailed(failed)}. Nothing was written; fix the model, or run with "
                       "--probe-on-fail warn (or --probe disable)")
    for r in failed:
        sys.stderr.write(f"coeval: warning: model {r.model} failed its probe ({r.error}); running anyway\n")


def batch_executor(state: RunState, log: Any) -> Any:
    """The batch executor for a config that enables batch anywhere (None otherwise)."""
    wanted = any(batch_enabled(state.config, m, p.name) for m in state.config.models for p in state.phases)
    if not wanted:
        return None
    try:
        from coeval.scheduler.batching import make_batch_executor
    except ImportError:
        log.warning("batch is enabled in the config but no batch executor is installed; calls run in real time")
        return None
    return make_batch_executor(
        config=state.config,
        run=state.run,
        interfaces=state.interfaces,
        keys_file=state.options.keys_file,
        enabled=lambda model, phase: batch_enabled(state.config, model, phase),
        log=log,
        watch=getattr(state.progress, "batch_watch", None),
        registries=state.registries,
    )


def warn_stale_static_artifacts(state: RunState, log: Any) -> None:
    """Phases 1-2 keep an existing artifact (Keep, and ``--continue``): a static map or
    rubric edited in the config since is not used. Say so rather than go on in silence."""
    view = RunView(state.config, state.run, state.registries)
    for entry in state.registries.phases:
        phase = entry.value
        if not isinstance(phase, StaticArtifactPhase) or state.mode(phase) == "New":
            continue
        for task in state.config.tasks:
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
