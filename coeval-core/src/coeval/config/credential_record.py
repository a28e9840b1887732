"""What one model needs to authenticate, as a record: the interfaces and batch runners that
receive it (and the plugin contract that names their factories) import it from here, below
the key-file and environment lookups of :mod:`coeval.config.credentials`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

__all__ = ["SECRET_FIELDS", "Credentials"]

#: Fields of structured entries that are secret.
SECRET_FIELDS = frozenset({"api_key", "secret_access_key", "session_token", "access_key_id", "access_token"})


@attrs.frozen(repr=False)
class Credentials:
    """What one model needs to authenticate. Never printable."""

    provider: str
    api_key: str | None = None
    fields: Mapping[str, Any] = attrs.field(factory=dict)
    source: str | None = None  # "access_key" | "keys_file" | "env" | None

    def __repr__(self) -> str:
        shown = {k: ("***" if k in SECRET_FIELDS else v) for k, v in self.fields.items()}
        key = "***" if self.api_key else None
        return f"Credentials(provider={self.provider!r}, api_key={key}, fields={shown}, source={self.source!r})"

    __str__ = __repr__

    def get(self, field: str, default: Any = None) -> Any:
        if field == "api_key":
            return self.api_key if self.api_key is not None else default
        return self.fields.get(field, default)

    def fingerprint(self) -> str:
        """A stable string identifying the credential (hash it before showing it)."""
        return f"{self.api_key or ''}|{sorted(self.fields.items())!r}"

    @property
    def present(self) -> bool:
        return bool(self.api_key) or any(self.fields.get(k) for k in self.fields)
