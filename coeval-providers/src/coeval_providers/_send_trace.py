"""The HTTP client the OpenAI and Anthropic SDKs get: their own aiohttp-under-httpx client,
whose sends are announced to the call ledger (:mod:`coeval.interfaces.sending`).

The ledger must write a call's start before any byte of it reaches the server, and as close
to that moment as it can: every step between the line and the send is a moment where a kill
counts a call the server never saw. httpx's request hook runs before the connection is
taken from the pool (a new connection's connect yields to the event loop, where a kill can
fall). aiohttp's ``on_request_chunk_sent`` trace runs with the connection open, right before
the first body bytes (coalesced with the headers) are handed to the socket, with no yield
in between: the start line is written there. The SDKs' transport module is where each SDK
vendors it; if it moves, or requests go through an environment proxy (whose transport is not
traced), the httpx request hook announces instead.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from coeval.interfaces.sending import announce_send, httpx_request_hook

__all__ = ["sdk_http_client"]

_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


async def _on_chunk_sent(session: Any, context: Any, params: Any) -> None:
    announce_send()  # the first chunk writes the line; later chunks find it written


def _traced_session(transport: Any, limits: Any) -> Any:
    """The session the SDK's transport would make (its connector's settings), traced."""
    import aiohttp

    trace = aiohttp.TraceConfig()
    trace.on_request_chunk_sent.append(_on_chunk_sent)
    connector = aiohttp.TCPConnector(keepalive_timeout=limits.keepalive_expiry, ssl=transport.ssl_context,
                                     limit=limits.max_connections or 0)
    return aiohttp.ClientSession(connector=connector, trace_configs=[trace])


def sdk_http_client(client_class: type, sdk: str, *, limits: Any, timeout: Any) -> Any:
    """``client_class`` (the SDK's ``DefaultAioHttpClient``) whose requests announce their send:
    through the SDK's own aiohttp transport, traced; else through httpx's request hook."""
    transport_class = None
    if not any(os.environ.get(name) for name in _PROXY_VARIABLES):
        try:
            transport_class = importlib.import_module(f"{sdk}._vendor.httpx_aiohttp.transport").AiohttpTransport
        except (ImportError, AttributeError):
            transport_class = None
    if transport_class is None:
        return client_class(limits=limits, timeout=timeout, event_hooks={"request": [httpx_request_hook]})
    transport = transport_class(limits=limits)
    transport.client = lambda: _traced_session(transport, limits)  # made on first use, in the event loop
    return client_class(limits=limits, timeout=timeout, transport=transport)
