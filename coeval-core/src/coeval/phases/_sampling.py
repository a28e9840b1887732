"""Phase 3's attribute draws: which target and nuanced values each datapoint is written for.

Every draw comes from a random generator seeded by ``(experiment.seed, task, teacher, slot)``,
so the same config and seed give the same draws on every machine (whatever the order of the
keys in the YAML), and a slot draws the same attributes whether it is generated first,
retried, or filled in later by ``--continue``.

* ``sampling.target: [min, max]``: pick n in [min, max] target attributes, one value each.
* ``sampling.target: all`` (and ``target_attributes: complete``): walk a seeded shuffle of
  the cross-product of all target values, one combination per slot, so ``total`` slots cover
  ``min(total, |product|)`` distinct combinations; ``complete`` raises the slot count to the
  size of the product so that every combination appears.
* ``sampling.nuance: [min, max]``: pick n nuanced attributes, one value each.

Label attributes (``label_attributes``) are always drawn, so every datapoint carries the
gold label that exact-match scoring compares against.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Mapping, Sequence

import attrs

from coeval.config.model import SamplingConfig

__all__ = ["MAX_CROSS_PRODUCT", "AttributeDraw", "AttributeSampler", "CrossProductTooLarge"]

#: Above this many combinations, ``complete`` refuses (it would mean as many datapoints).
MAX_CROSS_PRODUCT = 100_000
#: Above this, ``target: all`` draws combinations at random instead of shuffling them all.
_MATERIALISE_LIMIT = 1_000_000


class CrossProductTooLarge(ValueError):
    pass


@attrs.frozen
class AttributeDraw:
    target: dict[str, str]
    nuanced: dict[str, str]


def _clean(attrs_map: Mapping[str, Sequence[str]] | None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, values in (attrs_map or {}).items():
        vals = [str(v) for v in values if str(v).strip()]
        if vals:
            out[str(name)] = vals
    return out


class AttributeSampler:
    """Deterministic attribute draws for one (task, teacher)."""

    def __init__(
        self,
        *,
        target_attributes: Mapping[str, Sequence[str]] | None,
        nuanced_attributes: Mapping[str, Sequence[str]] | None,
        sampling: SamplingConfig,
        seed: int,
        task: str,
        teacher: str,
        complete: bool = False,
        always_include: Sequence[str] = (),
    ) -> None:
        self.target = _clean(target_attributes)
        self.nuanced = _clean(nuanced_attributes)
        self.sampling = sampling
        self.seed = seed
        self.task = task
        self.teacher = teacher
        self.cross_product = complete or sampling.target == "all"
        self.complete = complete
        self.always_include = [a for a in always_include if a in self.target]
        self._product: list[tuple[str, ...]] | None = None
        self.product_size = math.prod(len(v) for v in self.target.values()) if self.target else 0
        if complete and self.product_size > MAX_CROSS_PRODUCT:
            raise CrossProductTooLarge(
                f"task {task!r}: target_attributes: complete asks for every combination of target values, "
                f"but there are {self.product_size:,} (limit {MAX_CROSS_PRODUCT:,}); use sampling.target [min, max]"
            )

    def slots(self) -> int:
        """How many datapoints this (task, teacher) should have."""
        total = self.sampling.total
        if self.complete:
            return max(total, self.product_size)
        return total

    def _rng(self, *parts: object) -> random.Random:
        # str seeds hash with SHA-512: stable across processes and PYTHONHASHSEED.
        return random.Random("|".join(str(p) for p in (self.seed, self.task, self.teacher, *parts)))

    def draw(self, seq: int) -> AttributeDraw:
        if seq < 1:
            raise ValueError("slots are numbered from 1")
        rng = self._rng(seq)
        target = self._draw_target(seq, rng)
        nuanced = self._draw_some(self.nuanced, self.sampling.nuance, rng, ())
        return AttributeDraw(target=target, nuanced=nuanced)

    def _draw_target(self, seq: int, rng: random.Random) -> dict[str, str]:
        if not self.target:
            return {}
        if self.cross_product:
            return self._combination(seq)
        return self._draw_some(self.target, self.sampling.target, rng, self.always_include)  # type: ignore[arg-type]

    def _combination(self, seq: int) -> dict[str, str]:
        names = sorted(self.target)
        if self.product_size > _MATERIALISE_LIMIT:
            rng = self._rng("combination", seq)
            drawn = {n: rng.choice(self.target[n]) for n in names}
            return {n: drawn[n] for n in self.target}
        if self._product is None:
            product = list(itertools.product(*(self.target[n] for n in names)))
            self._rng("product").shuffle(product)
            self._product = product
        combo = dict(zip(names, self._product[(seq - 1) % len(self._product)], strict=True))
        return {n: combo[n] for n in self.target}

    @staticmethod
    def _draw_some(
        pool: Mapping[str, list[str]],
        bounds: tuple[int, int] | Sequence[int],
        rng: random.Random,
        always: Sequence[str],
    ) -> dict[str, str]:
        if not pool:
            return {}
        lo, hi = int(bounds[0]), int(bounds[-1])
        hi = min(max(hi, lo), len(pool))
        lo = min(max(lo, 0), hi)
        n = rng.randint(lo, hi)
        n = max(n, len(always))
        # draw over sorted names, so the order of keys in the config does not matter
        others = sorted(name for name in pool if name not in always)
        chosen = set(always) | set(rng.sample(others, max(0, n - len(always))))
        drawn = {name: rng.choice(pool[name]) for name in sorted(chosen)}
        # records list the attributes in the attribute map's order
        return {name: drawn[name] for name in pool if name in chosen}
