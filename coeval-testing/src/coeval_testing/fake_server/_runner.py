"""Running the fake: in a background thread for tests, or in the foreground as a process."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from aiohttp import web

from coeval_testing.fake_server._app import make_app
from coeval_testing.fake_server._state import FakeConfig, FakeState, Fault

__all__ = ["FakeServer", "serve"]


def _listening_socket(host: str, port: int, reuse_port: bool = False) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(4096)
    sock.setblocking(False)
    return sock


class FakeServer:
    """The fake provider server on its own event loop in a daemon thread.

    ::

        with FakeServer() as fake:
            client = AsyncOpenAI(base_url=fake.url + "/v1", api_key="test")
            fake.push_faults("openai.chat", [{"kind": "429", "retry_after": "1"}])
            ...
            assert fake.counts["openai.chat"] == 2
    """

    def __init__(self, config: FakeConfig | None = None, host: str = "127.0.0.1", port: int = 0) -> None:
        self.state = FakeState(config)
        self.host = host
        self._sock = _listening_socket(host, port)
        self.port: int = self._sock.getsockname()[1]
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # ---- life cycle ------------------------------------------------------------------------
    def start(self) -> FakeServer:
        self._thread = threading.Thread(target=self._run, name="coeval-fake-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("the fake provider server did not start")
        return self

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        loop.run_until_complete(self._serve())
        loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        runner = web.AppRunner(make_app(self.state), access_log=None, handle_signals=False)
        await runner.setup()
        site = web.SockSite(runner, self._sock)
        await site.start()
        self._ready.set()
        await self._stop.wait()
        await runner.cleanup()

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)
        self._sock.close()

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- conveniences for tests --------------------------------------------------------------
    def push_faults(self, route: str, faults: Iterable[Fault | Mapping[str, Any]]) -> None:
        self.state.push_faults(route, faults)

    def configure(self, **changes: Any) -> None:
        self.state.configure(**changes)

    def reset(self) -> None:
        self.state.reset()

    @property
    def counts(self) -> Mapping[str, int]:
        return dict(self.state.counts)

    def requests(self, route: str | None = None) -> list[dict[str, Any]]:
        return self.state.requests(route)


def serve(host: str, port: int, config: FakeConfig, on_ready: Any = None, reuse_port: bool = False) -> None:
    """Serve in the foreground until interrupted; ``on_ready(url)`` is called once listening."""

    async def main() -> None:
        sock = _listening_socket(host, port, reuse_port=reuse_port)
        runner = web.AppRunner(make_app(FakeState(config)), access_log=None)
        await runner.setup()
        await web.SockSite(runner, sock).start()
        if on_ready is not None:
            on_ready(f"http://{host}:{sock.getsockname()[1]}")
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
