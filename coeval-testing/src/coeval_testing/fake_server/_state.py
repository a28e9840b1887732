"""Everything a fake server instance remembers: settings, request log, faults, files, jobs."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections import Counter, deque
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import attrs

__all__ = ["FAULT_KINDS", "REJECTED_KEY_PREFIX", "BatchJob", "FakeConfig", "FakeState", "Fault"]

#: Requests whose credential starts with this are answered 401 (the auth-failure path).
REJECTED_KEY_PREFIX = "rejected-"

FAULT_KINDS = frozenset(
    {
        "429",  # rate limited; retry_after / retry_after_ms headers when given
        "500",
        "502",
        "503",
        "529",  # Anthropic's "overloaded"
        "400",
        "401",
        "403",
        "404",
        "hang",  # sleep `hang_s` before answering 200 (client timeouts)
        "malformed",  # 200 whose body is not JSON
        "empty",  # 200 with an empty body
        "shape",  # 200 with valid JSON that lacks the reply fields
        "truncate",  # 200 that promises more bytes than it sends, then closes
        "reset",  # connection closed without a response
        "length",  # a normal reply cut by the token limit (finish reason length)
        "length_empty",  # an empty reply cut by the token limit (finish reason length, no text)
    }
)


@attrs.frozen
class Fault:
    kind: str
    retry_after: str | None = None
    retry_after_ms: str | None = None
    hang_s: float = 30.0
    #: Only requests for this model id take the fault (None: any).
    model: str | None = None

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Fault:
        kind = str(raw["kind"])
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; expected one of {sorted(FAULT_KINDS)}")
        return cls(
            kind=kind,
            retry_after=None if raw.get("retry_after") is None else str(raw["retry_after"]),
            retry_after_ms=None if raw.get("retry_after_ms") is None else str(raw["retry_after_ms"]),
            hang_s=float(raw.get("hang_s", 30.0)),
            model=raw.get("model"),
        )


@attrs.define
class FakeConfig:
    """Behaviour of the fake. Change it per test through :meth:`FakeState.configure`."""

    #: Added to every model call (not to file, job or control routes).
    latency_ms: float = 0.0
    #: Uniform jitter added on top of ``latency_ms`` (deterministic per request index).
    jitter_ms: float = 0.0
    #: When above 0, each call's latency is drawn from a lognormal distribution with median
    #: ``latency_ms`` and this shape (the heavy tail real providers show); deterministic per
    #: request index. ``jitter_ms`` is then not used.
    latency_sigma: float = 0.0
    #: Batch jobs finish after this many status polls ...
    batch_polls_to_complete: int = 2
    #: ... or, when set, after this many seconds (benchmarks).
    batch_seconds_to_complete: float | None = None
    #: How batch jobs end: completed (with ``batch_failed_lines`` failed lines), expired, failed.
    batch_outcome: Literal["completed", "expired", "failed"] = "completed"
    #: Number of lines (the last ones) that fail inside a completed job.
    batch_failed_lines: int = 0
    #: For expired jobs: how many lines were done before the deadline.
    batch_done_before_expiry: int = 0
    #: Number of lines (the first ones) of a completed job answered with junk (see ``_junk``).
    batch_junk_lines: int = 0
    #: Keep request bodies in the log (tests); benchmarks turn it off.
    log_bodies: bool = True
    #: Serve at most this many model calls at once and queue the rest, like a local
    #: inference server (None: no limit). Latency is spent holding a slot.
    slots: int | None = None
    #: Share (0..1) of teacher calls answered with junk (see ``_junk``).
    junk_share: float = 0.0


@attrs.define
class BatchJob:
    """One provider batch job, whatever the provider; routes render it in their own shape."""

    id: str
    provider: str
    model: str | None
    #: custom id -> request body in the provider's own request shape
    requests: list[tuple[str, dict[str, Any]]]
    created_at: float
    polls: int = 0
    state: str = "pending"  # pending | running | completed | expired | failed | cancelled
    #: custom id -> ("ok", response body) | ("error", error mapping) | ("expired", None)
    results: dict[str, tuple[str, Any]] = attrs.field(factory=dict)
    extra: dict[str, Any] = attrs.field(factory=dict)


class FakeState:
    """Shared by all routes of one app. Thread-safe for the test thread reading it."""

    def __init__(self, config: FakeConfig | None = None) -> None:
        self.config = config or FakeConfig()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.counts: Counter[str] = Counter()
        self.log: list[dict[str, Any]] = []
        self._faults: dict[str, deque[Fault]] = {}
        self.files: dict[str, dict[str, Any]] = {}
        self.jobs: dict[str, BatchJob] = {}
        #: (bucket, key) -> bytes: the mini S3 / Cloud Storage
        self.objects: dict[tuple[str, str], bytes] = {}
        self.request_index = 0
        #: Model calls being served now, and the most at once (see ``FakeConfig.slots``).
        self.in_flight = 0
        self.peak_in_flight = 0
        self.slot_gate: asyncio.Semaphore | None = None
        self.slot_count: int | None = None

    # ---- control -------------------------------------------------------------------------
    def configure(self, **changes: Any) -> None:
        with self._lock:
            for key, value in changes.items():
                if not hasattr(self.config, key):
                    raise ValueError(f"unknown fake setting {key!r}")
                setattr(self.config, key, value)

    def reset(self) -> None:
        """Forget log, counters, faults, files and jobs; restore default settings."""
        with self._lock:
            self.config = FakeConfig()
            self.counts.clear()
            self.log.clear()
            self._faults.clear()
            self.files.clear()
            self.jobs.clear()
            self.objects.clear()

    def push_faults(self, route: str, faults: Iterable[Fault | Mapping[str, Any]]) -> None:
        """Queue faults for the next requests of ``route`` (``openai.chat``, ``anthropic.messages``,
        ``gemini.generate``, ``bedrock.converse``, ``ollama.chat``, or ``*`` for any model call)."""
        parsed = [f if isinstance(f, Fault) else Fault.from_dict(f) for f in faults]
        with self._lock:
            self._faults.setdefault(route, deque()).extend(parsed)

    def take_fault(self, route: str, model: str | None) -> Fault | None:
        with self._lock:
            for key in (route, "*"):
                queue = self._faults.get(key)
                if not queue:
                    continue
                for i, fault in enumerate(queue):
                    if fault.model is None or fault.model == model:
                        del queue[i]
                        return fault
        return None

    def pending_faults(self) -> int:
        with self._lock:
            return sum(len(q) for q in self._faults.values())

    # ---- bookkeeping ---------------------------------------------------------------------
    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}"

    def record(self, route: str, entry: dict[str, Any]) -> int:
        with self._lock:
            self.counts[route] += 1
            self.request_index += 1
            entry["route"] = route
            entry["index"] = self.request_index
            entry["time"] = time.time()
            self.log.append(entry)
            return self.request_index

    def requests(self, route: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self.log if route is None or e["route"] == route]

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"counts": dict(self.counts), "requests": len(self.log), "jobs": len(self.jobs)}
