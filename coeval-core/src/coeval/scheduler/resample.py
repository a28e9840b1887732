"""A retry after a rejected reply samples differently, so it can get a different answer.

A model asked the same thing with the same sampling settings tends to repeat itself (at
temperature 0 it must). So on the n-th retry after an unparseable or rejected reply:

* an interface that takes a seed (:attr:`Interface.takes_seed`) gets a new one, derived from
  the item key, the retry number and the configured seed, so a resumed run sends the same
  seeds again;
* an interface that takes no seed, or a greedy call (``temperature`` 0, where a seed changes
  nothing), gets ``temperature`` raised by :data:`TEMPERATURE_STEP` per retry, up to
  :data:`TEMPERATURE_CAP` (a configured temperature above the cap is left as it is).

A call with no ``temperature`` on an interface without a seed keeps the server's default,
which already samples. The correction note (:mod:`coeval.scheduler.correction`) comes on top.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import attrs

from coeval.interfaces.base import GenerateRequest

__all__ = ["TEMPERATURE_CAP", "TEMPERATURE_STEP", "bumped_temperature", "resampled", "retry_params", "retry_seed"]

#: Added to ``temperature`` per retry where a new seed cannot change the reply.
TEMPERATURE_STEP = 0.2
#: The bump never takes ``temperature`` above this.
TEMPERATURE_CAP = 1.0


def retry_seed(base: Any, item_key: str, retry: int) -> int:
    """The seed of ``item_key``'s ``retry``-th retry: stable across runs and machines, and
    different per item and per retry (31 bits, which every server accepts)."""
    digest = hashlib.sha256(f"{base}|{item_key}|{retry}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def bumped_temperature(temperature: float, retry: int) -> float:
    """``temperature`` raised by :data:`TEMPERATURE_STEP` per retry, capped."""
    if temperature >= TEMPERATURE_CAP:
        return temperature
    return round(min(temperature + TEMPERATURE_STEP * retry, TEMPERATURE_CAP), 6)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def retry_params(params: Mapping[str, Any], item_key: str, retry: int, *, takes_seed: bool) -> dict[str, Any]:
    """``params`` for the ``retry``-th retry (1 = the first) of ``item_key``."""
    changed = dict(params)
    if retry < 1:
        return changed
    if takes_seed:
        changed["seed"] = retry_seed(params.get("seed"), item_key, retry)
    temperature = _number(params.get("temperature"))
    if temperature is not None and (not takes_seed or temperature <= 0):
        changed["temperature"] = bumped_temperature(temperature, retry)
    return changed


def resampled(request: GenerateRequest, item_key: str, retry: int, *, takes_seed: bool) -> GenerateRequest:
    """``request`` with the sampling settings of its ``retry``-th retry."""
    return attrs.evolve(request, params=retry_params(request.params, item_key, retry, takes_seed=takes_seed))
