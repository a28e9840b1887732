"""Credentials that hide in ordinary settings: request headers and URLs with a password.

Keys have their own fields (``access_key``, key files, the environment) and are masked by
:func:`coeval.config.credentials.redact`. But a model's ``parameters.headers`` may carry an
``Authorization`` or ``X-Api-Key``, and a ``base_url`` may be ``https://user:pass@host``.
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

__all__ = ["is_credential_name", "mask", "register_setting_secrets", "scrub_settings", "scrub_url"]

#: header (or setting) names whose values are credentials
_CREDENTIAL_NAME = re.compile(r"authori[sz]ation|key|token|secret|cookie|password|passwd|credential", re.IGNORECASE)
#: ``scheme://userinfo@``: the userinfo is everything up to the first @ before the host
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/?#@\s]+)@")
_MASK = re.compile(r"^\*\*\*#[0-9a-f]{12}$")


def is_credential_name(name: str) -> bool:
    """``Authorization``, ``X-Api-Key``, ``X-Auth-Token``, ``Cookie``... look like credentials."""
    return bool(_CREDENTIAL_NAME.search(name))


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
    credential-named entries of any ``headers`` mapping masked, URL userinfo masked, and
    every known secret redacted."""
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            if str(k).lower() == "headers" and isinstance(v, Mapping):
                out[k] = {hk: mask(str(hv)) if is_credential_name(str(hk)) and hv is not None else scrub_settings(hv)
                          for hk, hv in v.items()}
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
                        register_secret(hv)
                        # "Bearer xyz", "session=xyz; other=abc": the parts are secrets too
                        for part in re.split(r"[\s;,=]+", hv):
                            if len(part) >= 8:
                                register_secret(part)
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
