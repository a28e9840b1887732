"""Helpers shared by the batch runners."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from coeval.interfaces.base import ModelError, TransientModelError
from coeval.scheduler.batching.base import BatchRunner

from coeval_providers import _errors
from coeval_providers.interfaces._base import ProviderInterface

__all__ = ["ProviderBatchRunner", "dump_jsonl", "line_error", "load_jsonl"]

IfaceT = TypeVar("IfaceT", bound=ProviderInterface)
T = TypeVar("T")


class ProviderBatchRunner(BatchRunner, Generic[IfaceT]):
    """A batch runner built on its provider's real-time interface: the same client, request
    body, reply parser and error mapping, so a batch record is identical to a real-time one."""

    interface_class: type[IfaceT]

    def __init__(self, model: Any, credentials: Any = None) -> None:
        super().__init__(model, credentials)
        self.iface: IfaceT = self.interface_class(model, credentials)

    async def _call(self, call: Awaitable[T]) -> T:
        """Await one SDK call; what the SDK raises becomes one of CoEval's error kinds."""
        try:
            return await call
        except ModelError:
            raise
        except Exception as exc:
            raise self.iface.classify_error(exc) from None

    async def aclose(self) -> None:
        await self.iface.aclose()


def dump_jsonl(lines: Iterable[Mapping[str, Any]]) -> bytes:
    return "".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines).encode("utf-8")


def load_jsonl(data: bytes | str) -> list[dict[str, Any]]:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes | bytearray) else data
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue  # a damaged line: its request is reported missing, hence failed
        if isinstance(value, dict):
            out.append(value)
    return out


def line_error(provider: str, status: int | None, body: Any, code: str | None = None) -> ModelError:
    """The error of one failed request inside a batch."""
    if code in ("batch_expired", "expired"):
        return TransientModelError(f"{provider} batch: the request expired before the provider ran it")
    if code in ("batch_cancelled", "cancelled", "canceled"):
        return TransientModelError(f"{provider} batch: the request was cancelled")
    if status:
        return _errors.from_status(f"{provider} batch", int(status), body)
    detail = _errors.short_body(body)
    return TransientModelError(f"{provider} batch: request failed{': ' + detail if detail else ''}")



