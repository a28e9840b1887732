"""Concurrency lanes for ``coeval plan`` and ``coeval run --dry-run``: which models share a
lane (same interface, endpoint and credential) and the lane's bound (the smallest
``max_concurrency`` among them). Keys carry a hash of the credential, never the secret."""

from __future__ import annotations

from typing import Any

from coeval.plugins.manager import registries

__all__ = ["format_lanes", "lanes_of"]


def lanes_of(config: Any, keys: Any = None) -> dict[str, dict[str, Any]]:
    """lane key -> {models, max_concurrency, queue_aware, replicas, one_at_a_time}; models whose
    interface cannot be built here (not installed, missing settings) are left out."""
    regs = registries()
    lanes: dict[str, dict[str, Any]] = {}
    for model in config.models:
        if model.interface not in regs.interfaces:
            continue
        try:
            creds = keys.for_provider(model.interface, model.access_key) if keys is not None else None
            iface = regs.interfaces.get(model.interface)(model, creds)
            key = iface.connection_key()
        except Exception:  # a preview never stops the command; the run reports it properly
            continue
        lane = lanes.setdefault(key, {"models": [], "max_concurrency": iface.max_concurrency,
                                      "queue_aware": bool(getattr(iface, "queue_aware", False)),
                                      "replicas": len(iface.replica_views()),
                                      "one_at_a_time": regs.runs_one_at_a_time(model.interface)})
        lane["models"].append(model.name)
        lane["max_concurrency"] = min(lane["max_concurrency"], iface.max_concurrency)
    return lanes


def format_lanes(config: Any, keys: Any = None) -> str:
    lanes = lanes_of(config, keys)
    if not lanes:
        return ""
    lines = ["concurrency lanes (interface@endpoint:credential hash):"]
    for key, lane in lanes.items():
        mode = ", latency-aware" if lane["queue_aware"] else ""
        where = f" on each of {lane['replicas']} replicas" if lane.get("replicas", 0) > 1 else ""
        serial = "; the engine runs them one at a time" if lane.get("one_at_a_time") else ""
        lines.append(f"  {key}: {', '.join(lane['models'])} "
                     f"(at most {lane['max_concurrency']} in flight{where}{mode}{serial})")
    return "\n".join(lines) + "\n"
