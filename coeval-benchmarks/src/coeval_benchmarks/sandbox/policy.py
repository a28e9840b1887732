"""Whether code may run where no sandbox can be made (``--allow-unsandboxed-code``)."""

from __future__ import annotations

import os

__all__ = ["ALLOW_UNSANDBOXED_ENV", "unsandboxed_allowed"]

#: Set (to 1) by ``coeval run --allow-unsandboxed-code`` (the core names it the same way).
ALLOW_UNSANDBOXED_ENV = "COEVAL_ALLOW_UNSANDBOXED_CODE"


def unsandboxed_allowed() -> bool:
    return os.environ.get(ALLOW_UNSANDBOXED_ENV, "").strip().lower() in ("1", "true", "yes", "on")
