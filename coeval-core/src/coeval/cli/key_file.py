"""Writing and listing the key file that :mod:`coeval.config.credentials` reads, for
``coeval keys`` (the run only reads it, through the credentials).

The file is the one ``find_keys_file`` finds (``--keys``, ``$COEVAL_KEYS_FILE``,
``./keys.yaml``, ``~/.coeval/keys.yaml``), or ``~/.coeval/keys.yaml`` when there is none.
It is always written with mode 600 (temp file + rename, so a reader never sees half of
it); a key value is never returned for display, only a mask of it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import attrs
import yaml

from coeval.config._schema_check import did_you_mean
from coeval.config._yaml import load_yaml_guarded
from coeval.config.credentials import KeyStore, find_keys_file, key_env, register_secret
from coeval.shipped_interfaces import KEYLESS_INTERFACES, SHIPPED_INTERFACES
from coeval.storage.run_folder import atomic_write_text

__all__ = [
    "KeySource",
    "UnknownProviderError",
    "default_keys_file",
    "key_sources",
    "known_providers",
    "loose_permissions",
    "mask",
    "set_key",
]

#: interfaces that never take a key
_KEYLESS = KEYLESS_INTERFACES
_HEADER = "# CoEval provider keys (written by `coeval keys set`). Keep this file private: mode 600.\n"


class UnknownProviderError(ValueError):
    """A provider name the key file cannot hold; ``guess`` is the closest known name."""

    def __init__(self, name: str, guess: str | None, known: list[str]) -> None:
        super().__init__(f"unknown provider '{name}'" + (f" (did you mean '{guess}'?)" if guess else ""))
        self.guess = guess
        self.known = known


@attrs.frozen
class KeySource:
    """Where one provider's key comes from, with the value masked."""

    provider: str
    source: str  # "key file" | "env"
    where: str  # the file path, or the environment variable's name
    masked: str

    def to_dict(self) -> dict[str, str]:
        return attrs.asdict(self)


def known_providers(extra: list[str] | None = None) -> list[str]:
    """Providers a key can be set for: the known interfaces and ``extra`` (interfaces plugins
    registered), less keyless ones."""
    return sorted((set(SHIPPED_INTERFACES) | set(extra or ())) - _KEYLESS)


def check_provider(name: str, known: list[str]) -> None:
    """Raise :class:`UnknownProviderError` unless ``name`` is in ``known``."""
    if name not in known:
        raise UnknownProviderError(name, did_you_mean(name, known), known)


def default_keys_file(explicit: str | None = None) -> Path:
    """The file ``keys set`` writes: the one in use, else ``~/.coeval/keys.yaml``."""
    return find_keys_file(explicit) or Path.home() / ".coeval" / "keys.yaml"


def loose_permissions(path: Path) -> bool:
    """True when group or others may read or write ``path`` (never on Windows)."""
    if os.name == "nt" or not path.is_file():
        return False
    return bool(stat.S_IMODE(path.stat().st_mode) & 0o077)


def mask(value: str) -> str:
    """Enough to tell two keys apart, never enough to use one: the last 4 characters of a
    long key, nothing of a short one."""
    return f"****{value[-4:]}" if len(value) >= 16 else "****"


def set_key(path: Path, provider: str, value: str, field: str = "api_key") -> None:
    """Store ``value`` as ``provider``'s ``field`` in the key file at ``path`` (created,
    with its folder, if missing), keeping every other entry; the file ends with mode 600."""
    register_secret(value)
    doc: dict[str, Any] = {}
    if path.is_file():
        KeyStore.load(path)  # a malformed file stops here, with its own message
        doc = load_yaml_guarded(path.read_text(encoding="utf-8"), str(path)) or {}
    entries: dict[str, Any] = doc.setdefault("providers", {}) if "providers" in doc or not doc else doc
    current = entries.get(provider)
    if field == "api_key" and not isinstance(current, dict):
        entries[provider] = value
    else:
        entry = current if isinstance(current, dict) else ({"api_key": current} if current else {})
        entry[field] = value
        entries[provider] = entry
    if not path.parent.exists():
        path.parent.mkdir(parents=True, mode=0o700)
    atomic_write_text(path, _HEADER + yaml.safe_dump(doc, sort_keys=True, allow_unicode=True))
    if os.name != "nt":
        path.chmod(0o600)


def key_sources(path: Path | None, providers: list[str]) -> list[KeySource]:
    """For every provider with a key, where the key comes from (the key file wins over the
    environment, as when a model runs)."""
    store = KeyStore.load(path) if path is not None else KeyStore()
    out: list[KeySource] = []
    for provider in sorted(set(providers) | set(store.entries)):
        entry = store.entries.get(provider)
        value = entry.get("api_key") if isinstance(entry, dict) else entry
        if isinstance(value, str) and value:
            out.append(KeySource(provider, "key file", str(store.path), mask(value)))
        elif isinstance(entry, dict) and entry:
            out.append(KeySource(provider, "key file", str(store.path), f"fields: {', '.join(sorted(entry))}"))
        else:
            for var in key_env(provider):
                env_value = os.environ.get(var)
                if env_value:
                    out.append(KeySource(provider, "env", var, mask(env_value)))
                    break
    return out
