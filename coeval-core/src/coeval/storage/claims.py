"""``--only-models`` shards claim their models, so two shards never make the same calls.

Each shard holds ``flock(2)`` on ``.claim.<model>.lock`` for every model it runs, for as
long as it runs; the kernel drops it when the process dies, even by SIGKILL. A second shard
naming a model already claimed refuses at once (exit code 2) and writes nothing. Without
``fcntl`` (Windows) shards already run one at a time (see :mod:`coeval.storage.lock`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from coeval.storage.lock import RunFolderBusyError

__all__ = ["ModelClaims"]


def _claim_path(root: Path, model: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", model)[:60]
    digest = hashlib.sha256(model.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return root / f".claim.{safe}.{digest}.lock"


class ModelClaims:
    """The claims of one shard on its models; :meth:`acquire` fails at once when any is taken."""

    def __init__(self, root: str | os.PathLike[str], models: Iterable[str]) -> None:
        self.root = Path(root)
        self.models = sorted(set(models))
        self._held: list[IO[str]] = []

    def acquire(self) -> None:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: the run lock is exclusive there
            return
        try:
            for model in self.models:
                fh = _claim_path(self.root, model).open("a+", encoding="utf-8")
                try:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    fh.close()
                    raise RunFolderBusyError(
                        f"{self.root}: model {model} is already being run by another --only-models process "
                        "on this folder; running it twice would pay for every call twice. Wait for that "
                        "process to finish (or stop it), or give this one other models"
                    ) from None
                self._held.append(fh)
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        for fh in self._held:
            with contextlib.suppress(OSError):
                fh.close()  # closing the descriptor drops its flock
        self._held.clear()
