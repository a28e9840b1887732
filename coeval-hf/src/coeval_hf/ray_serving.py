"""Deploying local models as Ray Serve applications, and finding or removing them.

One application per model, named ``coeval-<model>-<settings hash>`` and served under the
route prefix of the same name: two runs (or ``coeval serve`` and a run) whose model has
the same weights, engine and resources find the live application and reuse it, and a
changed setting gets a new one. Ray does the placement, the replicas, restarting a lost
replica and the autoscaling; CoEval only describes the application and waits for it.

Every function here blocks (Ray's client calls do); callers on an event loop run them in
a thread.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Mapping
from typing import Any

import attrs
from coeval.config.cluster_block import ClusterSpec

__all__ = [
    "APP_PREFIX",
    "DEFAULT_HTTP_PORT",
    "Deployment",
    "ServeError",
    "app_name",
    "connect",
    "deploy",
    "live_apps",
    "quiet_ray_notices",
    "remove",
]

APP_PREFIX = "coeval-"
#: Ray Serve's HTTP port unless ``COEVAL_SERVE_PORT`` says otherwise (it is cluster-wide:
#: the first ``serve.start`` on a cluster fixes it).
DEFAULT_HTTP_PORT = 8000
#: Calls a replica accepts at once: enough for the transformers engine to fill a batch.
_ONGOING_PER_REPLICA = 64
_lock = threading.Lock()


class ServeError(RuntimeError):
    """Ray could not deploy or reach an application (the message says which and why)."""


@attrs.frozen
class Deployment:
    """A live application: its name, its OpenAI-compatible base URL, and whether this call
    created it (only then does a run tear it down)."""

    name: str
    base_url: str
    created: bool


def _load_settings(model: Mapping[str, Any], spec: ClusterSpec) -> dict[str, Any]:
    """What decides whether a live application can serve this model: weights and load
    options (sampling travels with each call), engine and resources."""
    params = {k: v for k, v in dict(model["parameters"]).items() if k != "cluster"}
    return {"interface": model["interface"], "parameters": params,
            "cluster": attrs.asdict(attrs.evolve(spec, keep_serving=False, address="auto"))}


def app_name(model: Mapping[str, Any], spec: ClusterSpec) -> str:
    """``coeval-<model>-<8 hex of the settings>``."""
    digest = hashlib.sha256(json.dumps(_load_settings(model, spec), sort_keys=True, default=str).encode()).hexdigest()
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in str(model["name"]))
    return f"{APP_PREFIX}{safe}-{digest[:8]}"


class _NoThreadNotice(logging.Filter):
    """Drops Ray's notice that it set no SIGTERM handler: a run joins Ray from a worker
    thread, and its own handler (the graceful stop) is the one that must stay."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("SIGTERM handler is not set")


def quiet_ray_notices() -> None:
    """Keep Ray's lines that mean nothing to a CoEval user out of the run's output."""
    logging.getLogger("ray.serve").setLevel(logging.WARNING)  # its INFO lines would break the progress display
    worker = logging.getLogger("ray._private.worker")
    if not any(isinstance(f, _NoThreadNotice) for f in worker.filters):
        worker.addFilter(_NoThreadNotice())


def connect(address: str) -> None:
    """Join the cluster at ``address`` (``auto``: ``RAY_ADDRESS`` or the local one) once."""
    import ray

    if ray.is_initialized():
        return
    quiet_ray_notices()
    try:
        ray.init(address=address, namespace="coeval", log_to_driver=False, logging_level=logging.WARNING,
                 configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ServeError(f"cannot join the Ray cluster at {address!r}: {exc} "
                         "(start one with `ray start --head`, or set RAY_ADDRESS)") from None


def _http() -> tuple[str, int]:
    host = os.environ.get("COEVAL_SERVE_HOST", "127.0.0.1")
    return host, int(os.environ.get("COEVAL_SERVE_PORT", str(DEFAULT_HTTP_PORT)))


def _start_serve() -> str:
    """Start Serve's HTTP proxy if the cluster has none; the URL root it listens on."""
    from ray import serve

    host, port = _http()
    serve.start(http_options={"host": host, "port": port})
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    return f"http://{shown}:{port}"


def _status(name: str) -> str | None:
    from ray import serve

    app = serve.status().applications.get(name)
    return None if app is None else str(getattr(app.status, "value", app.status))


def live_apps() -> dict[str, str]:
    """Every CoEval application on the cluster: name -> status."""
    from ray import serve

    return {name: str(getattr(app.status, "value", app.status))
            for name, app in serve.status().applications.items() if name.startswith(APP_PREFIX)}


def _application(model: Mapping[str, Any], spec: ClusterSpec) -> Any:
    from ray import serve

    from coeval_hf._ray_replica import ServedModel

    options: dict[str, Any] = {
        "name": "model",
        "ray_actor_options": {"num_cpus": spec.num_cpus, "num_gpus": spec.num_gpus},
        "max_ongoing_requests": _ONGOING_PER_REPLICA,
    }
    if spec.autoscaling:
        options["autoscaling_config"] = {"min_replicas": spec.min_replicas, "max_replicas": spec.max_replicas,
                                         "target_ongoing_requests": 8}
    else:
        options["num_replicas"] = spec.replicas
    params = {k: v for k, v in dict(model["parameters"]).items() if k != "cluster"}
    if model["interface"] == "huggingface" and spec.num_gpus == 0 and params.get("device", "auto") == "auto":
        params["device"] = "cpu"  # a replica without a GPU share runs the model on its CPUs
    make: Any = serve.deployment  # its overloads do not type a class argument
    return make(ServedModel).options(**options).bind(
        {"name": model["name"], "interface": model["interface"], "parameters": params})


def deploy(model: Mapping[str, Any], spec: ClusterSpec, *, wait_s: float) -> Deployment:
    """Deploy ``model`` (a mapping of name, interface, parameters), or find it live; wait
    up to ``wait_s`` for it to be RUNNING."""
    from ray import serve

    name = app_name(model, spec)
    with _lock:
        connect(spec.address)
        root = _start_serve()
        status = _status(name)
        created = status not in ("RUNNING", "DEPLOYING")
        if created:
            serve.run(_application(model, spec), name=name, route_prefix=f"/{name}", blocking=False)
    _wait_running(name, wait_s)
    return Deployment(name=name, base_url=f"{root}/{name}/v1", created=created)


def _wait_running(name: str, wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    while True:
        status = _status(name)
        if status == "RUNNING":
            return
        if status in ("DEPLOY_FAILED", "UNHEALTHY"):
            from ray import serve

            detail = serve.status().applications[name].message
            raise ServeError(f"Ray Serve application {name!r} failed to deploy: {detail.strip()[:800]}")
        if time.monotonic() > deadline:
            raise ServeError(f"Ray Serve application {name!r} not ready after {wait_s:.0f} s (connect_wait_s); "
                             f"status {status}")
        time.sleep(0.5)


def remove(names: list[str] | None = None) -> list[str]:
    """Delete the named applications (None: every CoEval application); the names removed."""
    from ray import serve

    targets = sorted(live_apps()) if names is None else [n for n in names if _status(n) is not None]
    for name in targets:
        serve.delete(name, _blocking=True)
    return targets
