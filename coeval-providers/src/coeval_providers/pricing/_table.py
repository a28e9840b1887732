"""Loading, merging and querying the price / routing table."""

from __future__ import annotations

import functools
import importlib.resources
import logging
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
import yaml
from coeval.cli.errors import UserError
from coeval.config._yaml import load_yaml_guarded

__all__ = ["PRICING_ENV", "AutoChoice", "Price", "PricingFileError", "PricingTable", "pricing_table", "reset_pricing_table"]

log = logging.getLogger("coeval.providers.pricing")

PRICING_ENV = "COEVAL_PRICING_FILE"
#: Bedrock cross-region inference profiles prefix model ids with a geography.
_REGION_PREFIX = re.compile(r"^(us|eu|apac|global|us-gov|jp|au|ca)\.")


class PricingFileError(UserError, ValueError):
    """A pricing file that cannot be used; the message names the file and the field. A user
    error: commands stop with exit code 2 and this message, not a traceback."""


@attrs.frozen
class Price:
    """USD per 1M tokens; ``batch_discount`` multiplies both in batch mode."""

    input: float
    output: float
    batch_discount: float = 1.0

    def cost(self, input_tokens: int, output_tokens: int, *, batch: bool = False) -> float:
        usd = (input_tokens * self.input + output_tokens * self.output) / 1_000_000
        return usd * self.batch_discount if batch else usd

    @property
    def blended(self) -> float:
        """One number to compare providers by: a 3:1 input:output token mix."""
        return (3 * self.input + self.output) / 4

    def as_dict(self) -> dict[str, float]:
        return {"input": self.input, "output": self.output, "batch_discount": self.batch_discount}


@attrs.frozen
class AutoChoice:
    interface: str
    model_id: str  # the id the chosen provider knows the model by
    price: Price | None
    considered: tuple[str, ...]  # interfaces that serve the model, in route order


@attrs.frozen
class _Route:
    names: frozenset[str]
    serve: tuple[tuple[str, str], ...]  # (interface, provider model id), in preference order


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise PricingFileError(f"{where}: expected a number >= 0, got {value!r}")
    return float(value)


class PricingTable:
    def __init__(self, providers: Mapping[str, Mapping[str, Any]], routes: list[_Route], sources: tuple[str, ...]) -> None:
        self._providers = {k: dict(v) for k, v in providers.items()}
        self._routes = routes
        self.sources = sources

    # ---- loading -----------------------------------------------------------------------------
    @classmethod
    def load(cls, user_file: str | os.PathLike[str] | None = None) -> PricingTable:
        packaged = importlib.resources.files("coeval_providers.pricing").joinpath("pricing.yaml").read_text("utf-8")
        providers, routes = _parse(load_yaml_guarded(packaged, "pricing.yaml"), "coeval_providers/pricing/pricing.yaml")
        sources = ["package"]
        if user_file:
            path = Path(user_file).expanduser()
            if not path.is_file():
                raise PricingFileError(f"{path}: pricing file not found (named by ${PRICING_ENV})")
            try:
                raw = load_yaml_guarded(path.read_text("utf-8"), str(path)) or {}
            except UnicodeDecodeError:
                raise PricingFileError(f"{path}: not UTF-8 text (named by ${PRICING_ENV})") from None
            except OSError as exc:
                raise PricingFileError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})") from None
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                where = f" line {mark.line + 1}" if mark is not None else ""
                raise PricingFileError(f"{path}:{where} not valid YAML") from None
            user_providers, user_routes = _parse(raw, str(path))
            for name, entry in user_providers.items():
                merged = providers.setdefault(name, {"batch_discount": 1.0, "models": {}, "default": None})
                if "batch_discount" in entry:
                    merged["batch_discount"] = entry["batch_discount"]
                merged["models"] = {**merged.get("models", {}), **entry.get("models", {})}
                if entry.get("default") is not None:
                    merged["default"] = entry["default"]
            routes = user_routes + routes
            sources.append(str(path))
        return cls(providers, routes, tuple(sources))

    # ---- prices ------------------------------------------------------------------------------
    def interfaces(self) -> list[str]:
        return sorted(self._providers)

    def models(self, interface: str) -> dict[str, Price]:
        entry = self._providers.get(interface)
        if not entry:
            return {}
        return {m: self._price(entry, p) for m, p in entry.get("models", {}).items()}

    @staticmethod
    def _price(entry: Mapping[str, Any], raw: Mapping[str, Any]) -> Price:
        return Price(raw["input"], raw["output"], raw.get("batch_discount", entry.get("batch_discount", 1.0)))

    def price(self, interface: str, model_id: str) -> Price | None:
        """The price of ``model_id`` at ``interface``: exact id, then the longest listed id the
        given one starts with (dated snapshots: ``gpt-4o-mini-2024-07-18``), then the provider's
        ``default``; None when unknown."""
        entry = self._providers.get(interface)
        if not entry or not model_id:
            return None
        models: Mapping[str, Any] = entry.get("models", {})
        candidates = [model_id, _REGION_PREFIX.sub("", model_id), model_id.removeprefix("models/")]
        lowered = {k.lower(): k for k in models}
        for cand in candidates:
            key = lowered.get(cand.lower())
            if key is not None:
                return self._price(entry, models[key])
        for cand in candidates:
            c = cand.lower()
            best = max((k for k in lowered if c.startswith(k) and c[len(k) : len(k) + 1] in ("-", "@", ":", "")), key=len, default=None)
            if best is not None:
                return self._price(entry, models[lowered[best]])
        default = entry.get("default")
        return self._price(entry, default) if default else None

    def batch_discount(self, interface: str) -> float:
        entry = self._providers.get(interface)
        return float(entry.get("batch_discount", 1.0)) if entry else 1.0

    # ---- auto routing ------------------------------------------------------------------------
    def _route_for(self, model_id: str) -> _Route | None:
        wanted = model_id.strip().lower()
        return next((r for r in self._routes if wanted in r.names), None)

    def serving(self, model_id: str) -> list[tuple[str, str]]:
        """(interface, provider model id) pairs that serve ``model_id``, in preference order."""
        route = self._route_for(model_id)
        if route is not None:
            return list(route.serve)
        return [(iface, model_id) for iface in self._providers if model_id.lower() in {m.lower() for m in self._providers[iface].get("models", {})}]

    def resolve_auto(self, model_id: str, has_credentials: Callable[[str], bool]) -> AutoChoice | None:
        """The cheapest provider with credentials that serves ``model_id`` (ties: route order)."""
        serving = self.serving(model_id)
        available = [(iface, mid) for iface, mid in serving if has_credentials(iface)]
        if not available:
            return None
        priced = [(iface, mid, self.price(iface, mid)) for iface, mid in available]
        order = {iface: i for i, (iface, _) in enumerate(serving)}
        iface, mid, price = min(priced, key=lambda t: (t[2].blended if t[2] else float("inf"), order[t[0]]))
        return AutoChoice(iface, mid, price, tuple(i for i, _ in serving))

    def provider_model_id(self, interface: str, model_id: str) -> str:
        """The id ``interface`` knows ``model_id`` by (for configs written with ``interface: auto``)."""
        route = self._route_for(model_id)
        if route is not None:
            for iface, mid in route.serve:
                if iface == interface:
                    return mid
        return model_id


def _parse(raw: Any, source: str) -> tuple[dict[str, dict[str, Any]], list[_Route]]:
    if not isinstance(raw, Mapping):
        raise PricingFileError(f"{source}: expected a mapping with 'providers' and/or 'auto_routing'")
    unknown = set(raw) - {"version", "updated", "providers", "auto_routing"}
    if unknown:
        raise PricingFileError(f"{source}: unknown top-level key(s) {sorted(unknown)}; expected providers, auto_routing")
    providers: dict[str, dict[str, Any]] = {}
    if not isinstance(raw.get("providers") or {}, Mapping):
        raise PricingFileError(f"{source}: providers: expected a mapping of provider -> {{models, batch_discount}}")
    if not isinstance(raw.get("auto_routing") or [], list):
        raise PricingFileError(f"{source}: auto_routing: expected a list of {{names, serve}} entries")
    for name, entry in (raw.get("providers") or {}).items():
        where = f"{source}: providers.{name}"
        if not isinstance(entry, Mapping):
            raise PricingFileError(f"{where}: expected a mapping with 'models' and 'batch_discount'")
        parsed: dict[str, Any] = {"models": {}}
        if "batch_discount" in entry:
            d = _number(entry["batch_discount"], f"{where}.batch_discount")
            if d > 1:
                raise PricingFileError(f"{where}.batch_discount: a multiplier in [0, 1] (0.5 = half price), got {d}")
            parsed["batch_discount"] = d
        if not isinstance(entry.get("models") or {}, Mapping):
            raise PricingFileError(f"{where}.models: expected a mapping of model id -> {{input, output}}")
        for model, price in (entry.get("models") or {}).items():
            parsed["models"][str(model)] = _parse_price(price, f"{where}.models.{model}")
        if entry.get("default") is not None:
            parsed["default"] = _parse_price(entry["default"], f"{where}.default")
        providers[str(name)] = parsed
    routes: list[_Route] = []
    for i, route in enumerate(raw.get("auto_routing") or []):
        where = f"{source}: auto_routing[{i}]"
        if not isinstance(route, Mapping) or not isinstance(route.get("names"), list) or not isinstance(route.get("serve"), Mapping):
            raise PricingFileError(f"{where}: expected {{names: [model names], serve: {{interface: provider model id}}}}")
        routes.append(_Route(frozenset(str(n).lower() for n in route["names"]),
                             tuple((str(k), str(v)) for k, v in route["serve"].items())))
    return providers, routes


def _parse_price(raw: Any, where: str) -> dict[str, float]:
    if not isinstance(raw, Mapping) or "input" not in raw or "output" not in raw:
        raise PricingFileError(f"{where}: expected {{input: USD per 1M tokens, output: USD per 1M tokens}}")
    out = {"input": _number(raw["input"], f"{where}.input"), "output": _number(raw["output"], f"{where}.output")}
    if "batch_discount" in raw:
        out["batch_discount"] = _number(raw["batch_discount"], f"{where}.batch_discount")
    return out


@functools.cache
def _cached(user_file: str | None) -> PricingTable:
    return PricingTable.load(user_file)


def pricing_table() -> PricingTable:
    """The packaged table merged with ``$COEVAL_PRICING_FILE`` when set (cached per file)."""
    return _cached(os.environ.get(PRICING_ENV) or None)


def reset_pricing_table() -> None:
    _cached.cache_clear()
