"""Model probes: one tiny call per model before a run, so a wrong key or model id fails in
seconds instead of after hours of other models' calls.

``probe_mode``: ``full`` probes every model of the config; ``resume`` only the models that
still have work in the run folder (all of them when the folder does not exist yet);
``disable`` none. ``probe_on_fail``: ``abort`` stops the run (``coeval probe`` exits 2),
``warn`` goes on. Virtual models (``benchmark``) make no calls and are not probed.

    results = probe_models(config, KeyStore.load(keys_file), "full")
    check_probe(results, "abort")  # raises ProbeFailed naming every failed model
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from coeval.config.credentials import KeyStore, redact
from coeval.contract.status import missing_interface
from coeval.interfaces.base import ModelError
from coeval.phase_ids import MAPPING_PHASES
from coeval.phases.base import RunView
from coeval.phases.survey_memo import survey_of
from coeval.plugins.manager import registries as installed
from coeval.scheduler.retry import RetryPolicy
from coeval.scheduler.server_wait import DEFAULT_CONNECT_WAIT_S, ServerWait, is_connection_failure
from coeval.storage.run_folder import RunFolder

log = logging.getLogger("coeval.probe")

if TYPE_CHECKING:
    from coeval.config.model import Config, ModelConfig
    from coeval.plugins.manager import Registries

__all__ = ["PROBE_MODES", "ProbeFailed", "ProbeResult", "aprobe_models", "check_probe", "models_to_probe", "probe_models", "probe_with_retries"]

PROBE_MODES = ("full", "resume", "disable")
DEFAULT_TIMEOUT_S = 60.0
#: Calls per probe: a 503 or 429 is load, not a broken model, so it is asked again (with the
#: run's backoff) before the model is reported as failing.
PROBE_ATTEMPTS = 3


@attrs.frozen
class ProbeResult:
    model: str
    interface: str
    ok: bool
    latency_s: float | None = None
    error: str | None = None
    skipped: bool = False  # virtual model, or not needed under ``resume``

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


class ProbeFailed(RuntimeError):
    """Models failed their probe under ``probe_on_fail: abort``."""

    def __init__(self, failed: Sequence[ProbeResult]) -> None:
        self.failed = list(failed)
        lines = [f"{r.model} ({r.interface}): {r.error}" for r in failed]
        super().__init__(f"{len(failed)} model(s) failed the probe: " + "; ".join(lines))


def _is_virtual(model: ModelConfig, registries: Registries) -> bool:
    facts = registries.interface_facts(model.interface)
    return facts is not None and facts.virtual_teacher


def models_to_probe(config: Config, mode: str, registries: Registries) -> list[ModelConfig]:
    """The models ``mode`` probes: all, or (``resume``) those with missing or failed records."""
    if mode == "disable":
        return []
    models = list(config.models)
    if mode != "resume":
        return models
    run = RunFolder.for_experiment(config.experiment.storage_folder, config.experiment.id)
    if not run.exists():
        return models
    view = RunView(config, run, registries)
    needed: set[str] = set()
    teacher_phases = set(MAPPING_PHASES)
    for entry in registries.phases:
        survey = survey_of(entry.value, view)
        for group, counts in survey.groups.items():
            if counts.ok < counts.expected:
                if entry.name in teacher_phases:
                    needed.update(m.name for m in config.teachers)
                else:
                    needed.add(group)
    return [m for m in models if m.name in needed]


async def probe_with_retries(iface: Any, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
    """``iface.probe()``, asked again after a retryable error (a 503 or a 429). A server that
    refuses connections is waited for up to its ``connect_wait_s`` without using up attempts."""
    policy, rng = RetryPolicy(max_delay_s=5.0, max_retry_after_s=30.0), random.Random()
    server = ServerWait(float(getattr(iface, "connect_wait_s", DEFAULT_CONNECT_WAIT_S)))
    attempt = 0
    while attempt < PROBE_ATTEMPTS:
        attempt += 1
        try:
            await asyncio.wait_for(iface.probe(), timeout_s)
            return
        except Exception as exc:
            pause = server.refused(time.monotonic()) if is_connection_failure(exc) else None
            if pause is not None:
                if server.failures == 1:
                    log.warning("%s: cannot connect; waiting up to %.0f s for the server (connect_wait_s)",
                                redact(str(getattr(iface, "server_label", iface.name))), server.wait_s)
                attempt -= 1  # the server never saw the call
                delay: float | None = pause
            elif isinstance(exc, ModelError):
                delay = policy.delay_for(exc, attempt, rng) if attempt < PROBE_ATTEMPTS else None
            elif isinstance(exc, TimeoutError):
                raise
            else:
                classified = iface.classify_error(exc)
                delay = policy.delay_for(classified, attempt, rng) if attempt < PROBE_ATTEMPTS else None
            if delay is None:
                raise
        await asyncio.sleep(delay)


async def _probe_one(model: ModelConfig, keys: KeyStore, registries: Registries, timeout_s: float) -> ProbeResult:
    if model.interface not in registries.interfaces:
        return ProbeResult(model.name, model.interface, False, error=missing_interface(model.interface))
    iface = None
    start = time.perf_counter()
    try:
        iface = registries.interfaces.get(model.interface)(model, keys.for_provider(model.interface, model.access_key))
        await probe_with_retries(iface, timeout_s)
        return ProbeResult(model.name, model.interface, True, latency_s=round(time.perf_counter() - start, 3))
    except TimeoutError:
        return ProbeResult(model.name, model.interface, False, error=f"no answer within {timeout_s:.0f} s")
    except Exception as exc:
        if iface is not None:
            exc = iface.classify_error(exc)
        kind = getattr(exc, "kind", type(exc).__name__)
        return ProbeResult(model.name, model.interface, False, error=redact(f"{kind}: {exc}")[:500])
    finally:
        if iface is not None:
            with contextlib.suppress(Exception):  # closing must not mask the result
                await iface.aclose()


async def aprobe_models(
    config: Config, keystore: KeyStore | None = None, mode: str = "full", *, registries: Registries,
    timeout_s: float = DEFAULT_TIMEOUT_S, models: Iterable[ModelConfig] | None = None,
) -> list[ProbeResult]:
    if mode not in PROBE_MODES:
        raise ValueError(f"probe mode must be one of {', '.join(PROBE_MODES)}, not {mode!r}")
    keys = keystore if keystore is not None else KeyStore()
    chosen = {m.name for m in (models if models is not None else models_to_probe(config, mode, registries))}
    tasks, results = [], []
    for m in config.models:
        if m.name not in chosen or _is_virtual(m, registries):
            results.append(ProbeResult(m.name, m.interface, True, skipped=True))
        else:
            tasks.append(_probe_one(m, keys, registries, timeout_s))
    results.extend(await asyncio.gather(*tasks))
    order = {m.name: i for i, m in enumerate(config.models)}
    return sorted(results, key=lambda r: order.get(r.model, 0))


def probe_models(
    config: Config, keystore: KeyStore | None = None, mode: str = "full", *, registries: Registries | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> list[ProbeResult]:
    """Probe the models ``mode`` selects, concurrently; one result per model of the config.
    ``registries``: the installed plugins' when None (an entry point of the Python API)."""
    if registries is None:
        registries = installed()
    return asyncio.run(aprobe_models(config, keystore, mode, registries=registries, timeout_s=timeout_s))


def check_probe(results: Sequence[ProbeResult], on_fail: str) -> list[ProbeResult]:
    """The failed results; raises :class:`ProbeFailed` when ``on_fail`` is ``abort``."""
    failed = [r for r in results if not r.ok]
    if failed and on_fail == "abort":
        raise ProbeFailed(failed)
    return failed
