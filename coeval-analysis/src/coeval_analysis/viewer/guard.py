"""Who may talk to ``coeval view``: its own pages, nobody else.

A run holds prompts, answers and judges' replies, which may be private, and the viewer
serves them over plain HTTP. Three rules keep other pages out:

* **no CORS**: responses carry no ``Access-Control-Allow-Origin``, so a page on another
  origin (any site the user has open, a downloaded ``file://`` page, a sandboxed frame:
  origin ``null``) cannot read them, and ``/api/ping`` refuses such a request outright
  (403), so no page can probe which runs are served. The HTML report reaches its run by
  navigation instead (``/open?run=PATH``), whose answer no other page can read;
* **Host check**: a request whose ``Host`` is not the bound address or localhost is refused
  with 421 (DNS rebinding: an attacker's name that resolves to 127.0.0.1 keeps its own
  name in ``Host``);
* **token**: bound to anything but loopback, every request needs the token printed at start,
  given once as ``?token=`` (answered by a redirect that sets a cookie) and then by the cookie.

State-changing routes (POST) must also call :meth:`ViewGuard.same_origin`.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
import socket
from http import HTTPStatus
from typing import Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit

import attrs

__all__ = ["IDLE_TIMEOUT_ENV", "SECURITY_HEADERS", "Headers", "Refusal", "ViewGuard", "idle_timeout_s", "is_loopback"]

#: seconds a connection may stay silent before the server closes it (a half-open
#: connection would otherwise hold its thread forever); ``$COEVAL_VIEW_IDLE_TIMEOUT`` overrides
IDLE_TIMEOUT_S = 30.0
IDLE_TIMEOUT_ENV = "COEVAL_VIEW_IDLE_TIMEOUT"
_WILDCARDS = {"", "0.0.0.0", "::"}
_LOCAL_NAMES = {"localhost", "127.0.0.1", "::1"}


class Headers(Protocol):
    """A request's headers (``http.server``'s message, or a dict in tests)."""

    def get(self, name: str, /) -> str | None: ...


def idle_timeout_s() -> float:
    raw = os.environ.get(IDLE_TIMEOUT_ENV, "")
    try:
        value = float(raw)
    except ValueError:
        return IDLE_TIMEOUT_S
    return value if value > 0 else IDLE_TIMEOUT_S


def is_loopback(host: str) -> bool:
    """Whether serving on ``host`` reaches this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_name(header: str) -> str:
    """``Host`` without its port: ``[::1]:8765`` -> ``::1``, ``Example:80`` -> ``example``."""
    value = header.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


@attrs.frozen
class Refusal:
    """An answer given instead of the page: status, a short text, extra headers."""

    status: int
    text: str
    headers: tuple[tuple[str, str], ...] = ()


@attrs.define
class ViewGuard:
    """The checks of one server: bound ``host`` and ``port``, and its token (None on loopback)."""

    host: str
    port: int
    token: str | None = None
    names: frozenset[str] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        bound = self.host.strip("[]").lower()
        names = set(_LOCAL_NAMES) | {bound}
        if bound in _WILDCARDS:  # reached by this machine's names or any of its addresses
            names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
        self.names = frozenset(names - {""})

    @classmethod
    def for_address(cls, host: str, port: int) -> ViewGuard:
        """A guard for a server on ``host:port``; a token when the address is not loopback."""
        return cls(host, port, None if is_loopback(host) else secrets.token_urlsafe(24))

    @property
    def cookie_name(self) -> str:
        return f"coeval_view_{self.port}"  # cookies ignore ports: one per viewer

    def host_allowed(self, header: str | None) -> bool:
        if not header:
            return False
        name = _host_name(header)
        if name in self.names:
            return True
        # a wildcard bind answers on every address of this machine; an IP literal in Host
        # cannot be a rebound name
        return self.host.strip("[]") in _WILDCARDS and _is_ip(name)

    def admit(self, path: str, headers: Headers) -> Refusal | None:
        """None when the request may be answered; else what to answer instead."""
        if not self.host_allowed(headers.get("Host")):
            return Refusal(HTTPStatus.MISDIRECTED_REQUEST,
                           "This viewer answers only requests addressed to its own address or localhost.")
        if self.token is None:
            return None
        if self._cookie_ok(headers.get("Cookie") or ""):
            return None
        parts = urlsplit(path)
        query = parse_qsl(parts.query, keep_blank_values=True)
        given = [v for k, v in query if k == "token"]
        if given and hmac.compare_digest(given[-1].encode(), self.token.encode()):
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            location = parts.path + (f"?{rest}" if rest else "")
            cookie = f"{self.cookie_name}={self.token}; Path=/; HttpOnly; SameSite=Strict"
            return Refusal(HTTPStatus.SEE_OTHER, "Signed in.", (("Location", location), ("Set-Cookie", cookie)))
        return Refusal(HTTPStatus.FORBIDDEN,
                       "This viewer needs the token coeval view printed when it started: open the URL it printed.")

    def _cookie_ok(self, header: str) -> bool:
        assert self.token is not None
        for part in header.split(";"):
            name, _, value = part.strip().partition("=")
            if name == self.cookie_name and hmac.compare_digest(value.encode(), self.token.encode()):
                return True
        return False

    def own_origins(self) -> set[str]:
        return {f"http://{name if ':' not in name else f'[{name}]'}:{self.port}" for name in self.names}

    def same_origin(self, headers: Headers) -> bool:
        """For routes that change state: the request comes from one of the viewer's own
        pages (its ``Origin``, or for browsers that send none, its ``Referer``)."""
        if not self.host_allowed(headers.get("Host")):
            return False
        origin = headers.get("Origin")
        if origin is None:
            referer = headers.get("Referer")
            if referer is None:
                return False
            parts = urlsplit(referer)
            origin = f"{parts.scheme}://{parts.netloc}"
        host = headers.get("Host") or ""
        return origin.lower() == f"http://{host.lower()}" or origin.lower() in self.own_origins()

    @staticmethod
    def cross_origin(headers: Headers) -> bool:
        """Whether a browser sent the request from a page of another origin (``Origin: null``,
        a local file or a sandboxed frame of any site, included)."""
        return headers.get("Origin") is not None and (headers.get("Sec-Fetch-Site") or "cross-site") != "same-origin"


#: sent with every page: no framing by other sites, no guessing of content types, and no
#: URL (which may carry the token) in the Referer of links leaving the viewer
SECURITY_HEADERS = (
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Content-Security-Policy", "frame-ancestors 'none'"),
    ("Referrer-Policy", "no-referrer"),
)
