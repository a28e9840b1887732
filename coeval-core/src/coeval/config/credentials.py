"""Credentials: where keys come from, and how they stay out of everything we write.

Key file search order: ``--keys PATH`` -> ``$COEVAL_KEYS_FILE`` -> ``./keys.yaml`` ->
``~/.coeval/keys.yaml``. Per model: ``access_key`` in the config > the key file's entry for
the provider > the provider's usual environment variables, which the plugin registering the
interface declares (``key_env`` and ``key_fields`` of :class:`coeval.InterfaceFacts`).

:class:`Credentials` never shows a secret in ``repr``/``str``; :func:`redact` scrubs known
secrets from any text before it reaches a log, a record or an exception message.
"""

from __future__ import annotations

import difflib
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

import attrs
import yaml

from coeval.config._yaml import load_yaml_guarded
from coeval.config.credential_record import SECRET_FIELDS, Credentials
from coeval.shipped_interfaces import SHIPPED_INTERFACES

__all__ = [
    "KEYS_ENV",
    "Credentials",
    "KeyFileError",
    "KeyStore",
    "find_keys_file",
    "key_env",
    "redact",
    "register_secret",
    "use_interface_facts",
]


class KeyFacts(Protocol):
    """What the key store reads of an interface's registered facts (the ``key_env`` and
    ``key_fields`` of :class:`coeval.InterfaceFacts`)."""

    @property
    def key_env(self) -> tuple[str, ...]: ...

    @property
    def key_fields(self) -> Mapping[str, tuple[str, ...]]: ...


#: interface name -> what the installed plugin registering it declared (the plugin manager,
#: above the config, hands it in when imported); None until then
_interface_facts: Callable[[str], KeyFacts | None] | None = None


def use_interface_facts(source: Callable[[str], KeyFacts | None]) -> None:
    """Called by the plugin manager: ``source(name)`` is what the installed plugin registering
    interface ``name`` declared, or None."""
    global _interface_facts
    _interface_facts = source


def _facts(provider: str) -> KeyFacts | None:
    """None when no plugin registers ``provider`` or no plugin manager was loaded."""
    return _interface_facts(provider) if _interface_facts is not None else None


def key_env(provider: str) -> tuple[str, ...]:
    """The environment variables ``provider``'s key is read from, in order of preference, as
    the installed plugin registering it declared (none when no plugin does)."""
    facts = _facts(provider)
    return facts.key_env if facts is not None else ()


def _key_fields(provider: str) -> Mapping[str, tuple[str, ...]]:
    facts = _facts(provider)
    return facts.key_fields if facts is not None else {}

KEYS_ENV = "COEVAL_KEYS_FILE"

_secrets: set[str] = set()
_secrets_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    """Remember a secret so :func:`redact` removes it from any text."""
    if value and len(value) >= 6:
        with _secrets_lock:
            _secrets.add(value)


#: a secret at least this long is also masked in part: its first characters (a message that
#: cuts the key short) and each run of letters and digits of it (a provider that echoes
#: the key up to a ``/``)
_PARTIAL_MIN = 10
_PIECE = re.compile(r"[0-9A-Za-z_\-]{" + str(_PARTIAL_MIN) + ",}")


def redact(text: str) -> str:
    """Replace every known secret in ``text``, or a part of one, with a marker."""
    if not _secrets or not text:
        return text
    with _secrets_lock:
        secrets = sorted(_secrets, key=len, reverse=True)
    for s in secrets:
        if s in text:
            text = text.replace(s, "***")
    for s in secrets:
        if len(s) >= _PARTIAL_MIN:
            text = _redact_prefix(text, s)
            for piece in _PIECE.findall(s):
                if piece in text:
                    text = text.replace(piece, "***")
    return text


def _redact_prefix(text: str, secret: str) -> str:
    """Mask every run of ``text`` that is a prefix of ``secret`` at least _PARTIAL_MIN long."""
    head = secret[:_PARTIAL_MIN]
    start = text.find(head)
    while start >= 0:
        end = start + len(head)
        while end < len(text) and end - start < len(secret) and text[end] == secret[end - start]:
            end += 1
        text = text[:start] + "***" + text[end:]
        start = text.find(head, start + 3)
    return text


class KeyFileError(ValueError):
    """The key file cannot be found or read, or has the wrong shape.

    ``hint`` is the fix the CLI prints under the message (a missing file needs another path,
    not another shape)."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


def find_keys_file(explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> Path | None:
    """The key file to use, following the documented search order; None if there is none."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get(KEYS_ENV)
    if env:
        return Path(env).expanduser()
    for candidate in ((cwd or Path.cwd()) / "keys.yaml", Path.home() / ".coeval" / "keys.yaml"):
        if candidate.is_file():
            return candidate
    return None


@attrs.define
class KeyStore:
    """Provider entries from the key file, resolved against the environment on demand."""

    entries: dict[str, Any] = attrs.field(factory=dict, repr=False)
    path: Path | None = None

    @classmethod
    def load(cls, explicit: str | os.PathLike[str] | None = None) -> KeyStore:
        path = find_keys_file(explicit)
        if path is None:
            return cls()
        if not path.is_file():
            raise KeyFileError(
                f"key file {path}: not found",
                hint="check the path given with --keys or $COEVAL_KEYS_FILE; "
                "`coeval keys set PROVIDER --keys PATH` creates the file",
            )
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise KeyFileError(f"key file {path}: not UTF-8 text") from None
        except OSError as exc:
            raise KeyFileError(f"key file {path}: cannot be read ({exc.strerror or type(exc).__name__})") from None
        try:
            raw = load_yaml_guarded(text, str(path)) or {}
        except (yaml.YAMLError, RecursionError) as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else getattr(exc, "line", None)
            where = f" line {line}" if line else ""
            raise KeyFileError(f"key file {path}:{where} not valid YAML") from None
        if not isinstance(raw, dict):
            raise KeyFileError(f"key file {path}: expected a mapping with a 'providers' section")
        entries = raw.get("providers", raw)
        if not isinstance(entries, dict):
            raise KeyFileError(f"key file {path}: 'providers' must be a mapping of provider -> key")
        for name, value in entries.items():
            if not isinstance(value, str | dict) or value is None:
                raise KeyFileError(f"key file {path}: providers.{name} must be a string or a mapping")
            _register_entry_secrets(value)
        _reject_misspelled_providers(path, entries)
        return cls(entries=dict(entries), path=path)

    def for_provider(self, provider: str, access_key: str | None = None) -> Credentials:
        fields: dict[str, Any] = {}
        api_key: str | None = None
        source: str | None = None
        entry = self.entries.get(provider)
        if isinstance(entry, str):
            api_key, source = entry, "keys_file"
        elif isinstance(entry, dict):
            fields = {k: v for k, v in entry.items() if k != "api_key"}
            if entry.get("api_key"):
                api_key, source = str(entry["api_key"]), "keys_file"
            elif fields:
                source = "keys_file"
        for field, env_names in _key_fields(provider).items():
            if fields.get(field) is None:
                value = _first_env(env_names)
                if value is not None:
                    fields[field] = value
                    source = source or "env"
        if access_key:
            api_key, source = access_key, "access_key"
        elif api_key is None:
            value = _first_env(key_env(provider))
            if value is not None:
                api_key, source = value, source or "env"
        register_secret(api_key)
        for k in SECRET_FIELDS:
            if isinstance(fields.get(k), str):
                register_secret(fields[k])
        return Credentials(provider=provider, api_key=api_key, fields=fields, source=source)

    def has_provider(self, provider: str) -> bool:
        return self.for_provider(provider).present


def _reject_misspelled_providers(path: Path, entries: Mapping[str, Any]) -> None:
    """A provider name one typo away from a known one (``opneai``) would leave that provider
    without its key and fail later, far from the cause; stop now and name the fix. Names
    close to nothing known are kept: a plugin may provide them."""
    known = sorted(SHIPPED_INTERFACES)
    for name in entries:
        if str(name) in known:
            continue
        close = difflib.get_close_matches(str(name), known, n=1, cutoff=0.75)
        if close:
            raise KeyFileError(f"key file {path}: providers.{name} is not a known provider; did you mean '{close[0]}'?")


def _first_env(names: Iterable[str]) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def _register_entry_secrets(value: Any) -> None:
    if isinstance(value, str):
        register_secret(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            if k in SECRET_FIELDS and isinstance(v, str):
                register_secret(v)
