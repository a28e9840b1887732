"""What a sandboxed program writes, read through a cap: the last bytes are kept, the rest counted.

A program may write gigabytes to stdout or stderr; the parent's memory must not follow.
The end of stderr is where Python puts the exception, so the tail is what is kept.
"""

from __future__ import annotations

__all__ = ["CAPTURE_BYTES", "CappedStream"]

#: Bytes kept of each stream.
CAPTURE_BYTES = 64 * 1024


class CappedStream:
    """The last ``cap`` bytes of a stream and the number of bytes it carried in all."""

    def __init__(self, cap: int = CAPTURE_BYTES) -> None:
        self.cap = cap
        self.total = 0
        self._kept = bytearray()

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self._kept += chunk[-self.cap:]
        if len(self._kept) > self.cap:
            del self._kept[: len(self._kept) - self.cap]

    @property
    def dropped(self) -> int:
        """Bytes counted and not kept."""
        return self.total - len(self._kept)

    def text(self) -> str:
        return self._kept.decode("utf-8", errors="replace")
