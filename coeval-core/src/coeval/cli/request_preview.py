"""``coeval run --dry-run``: the exact chat request body each model's calls will send, so a
sampling key that a server would ignore or rename is visible before any call."""

from __future__ import annotations

import json
from typing import Any

from coeval.config.credentials import redact
from coeval.interfaces.base import GenerateRequest
from coeval.plugins.manager import registries

__all__ = ["format_request_bodies"]

_PROMPT = "<prompt>"


def _body(model: Any, registries: Any) -> dict[str, Any] | None:
    factory = registries.interfaces.get(model.interface) if model.interface in registries.interfaces else None
    if factory is None:
        return None
    iface = factory(model, None)
    build = getattr(iface, "build_body", None)
    if build is None:
        return None
    role = model.roles[0] if model.roles else "student"
    body = build(GenerateRequest(prompt=_PROMPT, params=model.params_for(role)))
    return dict(body) if isinstance(body, dict) else None


def format_request_bodies(config: Any) -> str:
    """One block per model whose interface builds a JSON request body (others are skipped)."""
    regs = registries()
    lines: list[str] = []
    for model in config.models:
        try:
            body = _body(model, regs)
        except Exception as exc:  # a preview must never stop the dry run, but says why (bad parameters)
            reason = (redact(str(exc)) or type(exc).__name__).removeprefix(f"model {model.name!r}: ")
            lines.append(f"request body of {model.name}: not available ({reason})")
            continue
        if body is not None:
            lines.append(f"request body of {model.name} ({model.interface}):")
            lines.append(json.dumps(body, indent=2, sort_keys=False))
    return "\n".join(lines) + ("\n" if lines else "")
