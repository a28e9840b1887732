"""``python -m coeval_testing.fake_server``: run the fake provider server and print its URL."""

from __future__ import annotations

import argparse
import os
import sys

from coeval_testing.fake_server._runner import serve
from coeval_testing.fake_server._state import FakeConfig


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m coeval_testing.fake_server", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="added to every model call")
    parser.add_argument("--jitter-ms", type=float, default=0.0, help="uniform extra latency per call")
    parser.add_argument("--latency-sigma", type=float, default=0.0,
                        help="draw each call's latency from a lognormal with median --latency-ms and this shape")
    parser.add_argument("--batch-seconds", type=float, default=None,
                        help="batch jobs complete after this many seconds (default: after 2 polls)")
    parser.add_argument("--no-log-bodies", action="store_true", help="keep prompts out of the request log")
    parser.add_argument("--workers", type=int, default=1,
                        help="processes sharing the port (SO_REUSEPORT); each keeps its own state, "
                        "so use more than one only for plain model calls")
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be 0-65535, not {args.port}")
    config = FakeConfig(latency_ms=args.latency_ms, jitter_ms=args.jitter_ms, latency_sigma=args.latency_sigma,
                        batch_seconds_to_complete=args.batch_seconds, log_bodies=not args.no_log_bodies)

    def ready(url: str) -> None:
        print(url, flush=True)

    if args.workers > 1:
        if args.port == 0:
            parser.error("--workers needs an explicit --port")
        for _ in range(args.workers - 1):
            if os.fork() == 0:
                serve(args.host, args.port, config, reuse_port=True)
                return
        serve(args.host, args.port, config, on_ready=ready, reuse_port=True)
        return
    try:
        serve(args.host, args.port, config, on_ready=ready)
    except OSError as exc:  # port in use, host not local: one line, not a traceback
        parser.exit(2, f"{parser.prog}: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}\n")


if __name__ == "__main__":
    main(sys.argv[1:])
