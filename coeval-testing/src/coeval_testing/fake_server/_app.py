"""Builds the fake's aiohttp application. Route order matters: specific provider routes first,
the generic OpenAI-compatible ones next, the S3 catch-all last."""

from __future__ import annotations

from aiohttp import web

from coeval_testing.fake_server import _anthropic, _bedrock, _control, _gemini, _openai, _storage
from coeval_testing.fake_server._core import STATE
from coeval_testing.fake_server._state import FakeConfig, FakeState

__all__ = ["make_app"]


async def _list_models(request: web.Request) -> web.Response:
    """``GET .../models`` is shared by three API families; tell them apart by their headers."""
    state = request.app[STATE]
    if "anthropic-version" in request.headers:
        state.record("anthropic.models", {"method": "GET", "path": request.path})
        return _anthropic.list_models(request)
    if "x-goog-api-key" in request.headers or request.path.startswith(("/v1beta", "/v1alpha")):
        state.record("gemini.models", {"method": "GET", "path": request.path})
        return _gemini.list_models(request)
    return await _openai.list_models(request)


def make_app(state: FakeState | None = None, config: FakeConfig | None = None) -> web.Application:
    app = web.Application(client_max_size=1024**3)
    app[STATE] = state or FakeState(config)
    _control.add_routes(app)
    app.router.add_get(r"/{prefix:.*}models", _list_models)
    _anthropic.add_routes(app)
    _gemini.add_routes(app)
    _storage.add_gcs_routes(app)
    _bedrock.add_routes(app)
    _openai.add_routes(app)
    _storage.add_s3_routes(app)
    return app
