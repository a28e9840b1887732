"""Credentials that hide in ordinary settings: request headers, URLs with a password, and
secret-named fields at any depth of a setting (``extra_body: {api_key: ...}``).

Keys have their own fields (``access_key``, key files, the environment) and are masked by
:func:`coeval.config.credentials.redact`. But a model's ``parameters.headers`` may carry an
``Authorization`` or ``X-Api-Key``, a ``base_url`` may be ``https://user:pass@host``, and
``extra_body`` (sent to the server as it is) may hold ``api_key``, ``session_token`` or a
nested ``password``: a field whose name has a word that names a credential
(:func:`is_secret_field`) is one, at any depth, and so is everything under it.
Wherever settings are stored (the run's ``config.yaml``, ``meta.json`` ``settings``) or
printed (drift messages), such values are replaced by :func:`mask`: ``***`` and a short
hash, so that drift detection still sees a change without ever showing a value.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from coeval.config.credentials import redact, register_secret

__all__ = ["is_credential_name", "is_secret_field", "mask", "register_setting_secrets", "scrub_settings", "scrub_url"]

#: header (or setting) names whose values are credentials
_CREDENTIAL_NAME = re.compile(r"authori[sz]ation|key|token|secret|cookie|password|passwd|credential", re.IGNORECASE)
#: ``scheme://userinfo@``: the userinfo is everything up to the first @ before the host
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/?#@\s]+)@")
_MASK = re.compile(r"^\*\*\*#[0-9a-f]{12}$")
#: words of a field name that make it a credential (``api_key``, ``sessionToken``, ``x-api-key``);
#: whole words only, so ``max_tokens`` or ``keywords`` are settings, not secrets
_SECRET_WORDS = frozenset({"key", "apikey", "token", "secret", "password", "passwd", "passphrase", "credential",
                           "credentials", "cookie", "authorization", "authorisation", "bearer"})
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def is_credential_name(name: str) -> bool:
    """``Authorization``, ``X-Api-Key``, ``X-Auth-Token``, ``Cookie``... look like credentials."""
    return bool(_CREDENTIAL_NAME.search(name))


def is_secret_field(name: str) -> bool:
    """Whether a setting named ``name`` holds a credential: one of its words (split at
    ``_``, ``-``, ``.`` and camelCase) is ``key``, ``token``, ``secret``, ``password``..."""
    return any(word.lower() in _SECRET_WORDS for word in _WORD.findall(name))


def _mask_all(value: Any) -> Any:
    """Every scalar under a secret field, masked (None and booleans say nothing)."""
    if isinstance(value, Mapping):
        return {k: _mask_all(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_mask_all(v) for v in value]
    if value is None or isinstance(value, bool):
        return value
    return mask(str(value))


def mask(value: str) -> str:
    """``***#`` and 12 hex digits of the value's SHA-256: equal values, equal masks."""
    if _MASK.match(value):  # already masked (a snapshot read back)
        return value
    return "***#" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def scrub_url(text: str) -> str:
    """Every ``scheme://user:password@`` in ``text`` with its userinfo masked."""
    return _USERINFO.sub(lambda m: m.group("scheme") + mask(m.group("userinfo")) + "@", text)


def scrub_settings(value: Any) -> Any:
    """A copy of ``value`` (settings: mappings, lists, scalars) safe to store or print:
    credential-named entries of any ``headers`` mapping masked, secret fields at any depth
    masked (:func:`is_secret_field`), URL userinfo masked, and every known secret redacted."""
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            if str(k).lower() == "headers" and isinstance(v, Mapping):
                out[k] = {hk: mask(str(hv)) if is_credential_name(str(hk)) and hv is not None else scrub_settings(hv)
                          for hk, hv in v.items()}
            elif is_secret_field(str(k)):
                out[k] = _mask_all(v)
            else:
                out[k] = scrub_settings(v)
        return out
    if isinstance(value, list | tuple):
        return [scrub_settings(v) for v in value]
    if isinstance(value, str):
        return redact(scrub_url(value))
    return value


def register_setting_secrets(value: Any) -> None:
    """Register the credentials inside settings with :func:`coeval.config.credentials.register_secret`,
    so that an error message, a log line or a record echoing one is redacted too."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            if str(k).lower() == "headers" and isinstance(v, Mapping):
                for hk, hv in v.items():
                    if is_credential_name(str(hk)) and isinstance(hv, str):
                        _register(hv)
            elif is_secret_field(str(k)):
                _register_all(v)
            register_setting_secrets(v)
    elif isinstance(value, list | tuple):
        for v in value:
            register_setting_secrets(v)
    elif isinstance(value, str):
        for m in _USERINFO.finditer(value):
            _user, _, password = m.group("userinfo").partition(":")
            if password:
                register_secret(password)
            register_secret(m.group("userinfo"))


def _register(text: str) -> None:
    if _MASK.match(text):  # a mask read back from a run's config.yaml is no secret: it must stay readable
        return
    register_secret(text)
    # "Bearer xyz", "session=xyz; other=abc": the parts are secrets too
    for part in re.split(r"[\s;,=]+", text):
        if len(part) >= 8:
            register_secret(part)


def _register_all(value: Any) -> None:
    if isinstance(value, Mapping):
        for v in value.values():
            _register_all(v)
    elif isinstance(value, list | tuple):
        for v in value:
            _register_all(v)
    elif isinstance(value, str | int) and not isinstance(value, bool):
        _register(str(value))
