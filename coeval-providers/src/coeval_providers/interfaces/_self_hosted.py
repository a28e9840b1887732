"""Whether an OpenAI-compatible endpoint is a self-hosted server, which queues when full
instead of answering 429, so the scheduler must limit its concurrency by latency.

``parameters.self_hosted: true|false`` decides when set. Otherwise ``vllm`` and ``ollama``
are self-hosted by definition, and any other OpenAI-compatible interface (``openai``,
``groq``, ...) is when every ``base_url`` it calls names a machine of the local network:
``localhost``, a loopback, private or link-local IP address, a name without a dot
(``gpu1``), or a name under ``.local``, ``.lan``, ``.internal`` or ``.home.arpa``. A public
name (``api.openai.com``, ``vllm.example.com``) keeps the 429-driven limiter unless
``self_hosted: true`` says otherwise.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

__all__ = ["is_local_url", "is_self_hosted"]

_LOCAL_SUFFIXES = (".localhost", ".local", ".lan", ".internal", ".home.arpa")


def is_local_url(url: str) -> bool:
    """Whether ``url``'s host is on this machine or the local network."""
    try:
        host = (urlsplit(url if "://" in url else f"http://{url}").hostname or "").lower()
    except ValueError:
        return False
    if not host:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host == "localhost" or "." not in host or host.endswith(_LOCAL_SUFFIXES)
    return address.is_loopback or address.is_private or address.is_link_local


def is_self_hosted(setting: object, by_default: bool, urls: Iterable[str]) -> bool:
    """``setting`` is ``parameters.self_hosted`` (None when unset); ``by_default`` whether the
    interface only ever talks to self-hosted servers; ``urls`` the base URLs it calls."""
    if isinstance(setting, bool):
        return setting
    if by_default:
        return True
    listed = list(urls)
    return bool(listed) and all(is_local_url(u) for u in listed)
