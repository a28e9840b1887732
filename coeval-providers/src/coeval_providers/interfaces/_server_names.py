"""Standard sampling names mapped to what each self-hosted server reads.

``parameters.server`` says which engine sits behind a ``vllm``/``openai`` base URL
(``vllm``, ``sglang``, ``tgi``, ``llamacpp``); the default is vLLM's naming. llama.cpp's
server reads ``repeat_penalty`` and silently ignores ``repetition_penalty``, so the
standard name is renamed for it. The table is in docs/local-models.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SERVER_NAMES", "rename_for_server"]

#: server -> {standard name: the name that server reads}
SERVER_NAMES: Mapping[str, Mapping[str, str]] = {
    "vllm": {},
    "sglang": {},
    "tgi": {},
    "llamacpp": {"repetition_penalty": "repeat_penalty"},
}


def rename_for_server(body: dict[str, Any], params: Mapping[str, Any]) -> None:
    """Rename ``body``'s standard sampling keys for ``params['server']`` (in place)."""
    if params.get("repeat_penalty") is not None:
        body["repeat_penalty"] = params["repeat_penalty"]
    server = str(params.get("server") or "vllm").lower().replace(".", "").replace("-", "").replace("_", "")
    for standard, native in SERVER_NAMES.get(server, {}).items():
        if standard in body:
            body.setdefault(native, body.pop(standard))
