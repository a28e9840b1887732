"""The control API under ``/_fake/``: queue faults, change settings, read the log and counters.

Tests running the fake in-process use :class:`~coeval_testing.fake_server.FakeState`
directly; these routes serve a fake started as a subprocess (benchmarks, manual use)::

    POST /_fake/faults  {"route": "openai.chat", "faults": [{"kind": "429", "retry_after": "1"}]}
    POST /_fake/config  {"latency_ms": 200, "batch_outcome": "expired"}
    POST /_fake/reset
    GET  /_fake/stats   {"counts": {"openai.chat": 12, ...}, "requests": 12, "jobs": 0}
    GET  /_fake/log     [{"route": ..., "path": ..., "model": ..., ...}, ...]
"""

from __future__ import annotations

from aiohttp import web

from coeval_testing.fake_server._core import STATE

__all__ = ["add_routes"]


async def post_faults(request: web.Request) -> web.Response:
    body = await request.json()
    try:
        request.app[STATE].push_faults(str(body.get("route", "*")), body.get("faults", []))
    except (KeyError, ValueError) as exc:
        return web.json_response({"error": str(exc)}, status=400)
    return web.json_response({"queued": request.app[STATE].pending_faults()})


async def post_config(request: web.Request) -> web.Response:
    try:
        request.app[STATE].configure(**(await request.json()))
    except (TypeError, ValueError) as exc:
        return web.json_response({"error": str(exc)}, status=400)
    return web.json_response({"ok": True})


async def post_reset(request: web.Request) -> web.Response:
    request.app[STATE].reset()
    return web.json_response({"ok": True})


async def get_stats(request: web.Request) -> web.Response:
    return web.json_response(request.app[STATE].stats())


async def get_log(request: web.Request) -> web.Response:
    route = request.query.get("route")
    return web.json_response(request.app[STATE].requests(route))


def add_routes(app: web.Application) -> None:
    r = app.router
    r.add_post("/_fake/faults", post_faults)
    r.add_post("/_fake/config", post_config)
    r.add_post("/_fake/reset", post_reset)
    r.add_get("/_fake/stats", get_stats)
    r.add_get("/_fake/log", get_log)
