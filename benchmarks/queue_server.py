"""An inference server that queues, written for the queueing figure alone: it shares no code
with the project's fake provider (``coeval_testing.fake_server``), so the limiter is measured
against a server it was not tuned on.

It answers OpenAI-style ``POST /v1/chat/completions`` like vLLM's server and serves
``slots`` calls at once, each taking ``service_ms``. What it does with the rest is its
``queue`` behaviour:

* ``fifo``: they wait in an unbounded first-in first-out queue (vLLM's scheduler); a call
  whose client has gone (a client timeout) leaves the queue, as vLLM aborts it;
* ``fifo-keep``: the same, but a call whose client has gone is still served, its slot time
  wasted (a server that does not notice disconnects);
* ``bounded:N``: at most N wait, the next ones get ``503`` at once (a gateway in front);
* ``shared``: every call is taken at once and the slots' time is shared among them, so a
  call that arrives with more than ``slots`` in service takes ``in service / slots`` times
  as long (continuous batching past its sweet spot).
``--metrics`` adds vLLM's ``GET /metrics`` (``vllm:num_requests_running`` and
``vllm:num_requests_waiting``). ``GET /stats`` says how many calls it received, served,
rejected and abandoned, and the most it ever had in service and waiting.

    python -m benchmarks.queue_server --slots 8 --service-ms 100 --queue fifo   # prints its URL
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

from aiohttp import web

__all__ = ["ServerShape", "make_app"]


class ServerShape:
    """How the server serves: ``slots`` at once, ``service_ms`` each, ``queue`` for the rest."""

    def __init__(self, slots: int, service_ms: float, queue: str = "fifo", metrics: bool = False) -> None:
        if queue not in ("fifo", "fifo-keep", "shared") and not queue.startswith("bounded:"):
            raise ValueError(f"queue must be fifo, fifo-keep, shared or bounded:N; got {queue!r}")
        self.slots, self.service_s, self.queue, self.metrics = slots, service_ms / 1000.0, queue, metrics
        self.bound = int(queue.split(":", 1)[1]) if queue.startswith("bounded:") else None

    @property
    def capacity_per_s(self) -> float:
        return self.slots / self.service_s


class _State:
    def __init__(self, shape: ServerShape) -> None:
        self.shape = shape
        self.free = asyncio.Semaphore(shape.slots)
        self.running = self.waiting = 0
        self.received = self.served = self.rejected = self.abandoned = 0
        self.peak_running = self.peak_waiting = 0

    def stats(self) -> dict[str, Any]:
        return {"received": self.received, "served": self.served, "rejected": self.rejected,
                "abandoned": self.abandoned, "peak_running": self.peak_running, "peak_waiting": self.peak_waiting}


def _reply(body: dict[str, Any]) -> web.Response:
    text = "ok"
    reply = {"id": "cmpl-q", "object": "chat.completion", "created": int(time.time()), "model": body.get("model", "m"),
             "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13}}  # fmt: skip
    return web.json_response(reply)


async def _serve_in_a_slot(state: _State) -> None:
    state.waiting += 1
    state.peak_waiting = max(state.peak_waiting, state.waiting)
    try:
        await state.free.acquire()
    finally:
        state.waiting -= 1
    try:
        state.running += 1
        state.peak_running = max(state.peak_running, state.running)
        await asyncio.sleep(state.shape.service_s)
    finally:
        state.running -= 1
        state.free.release()


async def _serve_shared(state: _State) -> None:
    """Shared slots: a call arriving with ``n`` others in service takes ``service_s x
    max(1, (n + 1) / slots)``, so the server's throughput stays ``slots / service_s``."""
    state.running += 1
    state.peak_running = max(state.peak_running, state.running)
    try:
        await asyncio.sleep(state.shape.service_s * max(1.0, state.running / state.shape.slots))
    finally:
        state.running -= 1


def make_app(shape: ServerShape) -> web.Application:
    state = _State(shape)

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        state.received += 1
        if state.shape.bound is not None and state.free.locked() and state.waiting >= state.shape.bound:
            state.rejected += 1
            return web.json_response({"error": {"message": "server busy", "type": "overloaded"}}, status=503)
        serving = _serve_shared(state) if shape.queue == "shared" else _serve_in_a_slot(state)
        try:
            if shape.queue == "fifo-keep":  # served to the end, whether its client waits or not
                await asyncio.shield(asyncio.ensure_future(serving))
            else:
                await serving
        except asyncio.CancelledError:  # the client went away
            state.abandoned += 1
            raise
        state.served += 1
        return _reply(body)

    async def metrics(request: web.Request) -> web.Response:
        waiting = state.waiting if shape.queue != "shared" else max(0, state.running - shape.slots)
        running = min(state.running, shape.slots)
        text = (f'vllm:num_requests_running{{model_name="m"}} {running}\n'
                f'vllm:num_requests_waiting{{model_name="m"}} {waiting}\n')
        return web.Response(text=text, content_type="text/plain")

    async def stats(request: web.Request) -> web.Response:
        return web.json_response(state.stats())

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "m", "object": "model"}]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/stats", stats)
    if shape.metrics:
        app.router.add_get("/metrics", metrics)
    return app


async def _main(shape: ServerShape, port: int) -> None:
    runner = web.AppRunner(make_app(shape), handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=1024)
    await site.start()
    sockets = site._server.sockets if site._server is not None else []  # type: ignore[union-attr]
    print(f"http://127.0.0.1:{sockets[0].getsockname()[1]}", flush=True)
    await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--service-ms", type=float, default=100.0)
    parser.add_argument("--queue", default="fifo", help="fifo, fifo-keep, shared or bounded:N")
    parser.add_argument("--metrics", action="store_true", help="serve vLLM's /metrics")
    args = parser.parse_args(argv)
    shape = ServerShape(args.slots, args.service_ms, args.queue, args.metrics)
    try:
        asyncio.run(_main(shape, args.port))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
