"""The item-quality gate: run the enabled checks on a parsed teacher reply.

A rejected reply raises :class:`QualityRejection`, an :class:`OutputParseError`, so the
scheduler retries it within ``generation_retries`` with the reason as a correction, and
fails the item with ``error_kind: quality`` when the retries are used up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from coeval.config.model import TaskConfig
from coeval.quality.ledger import add_rejection
from coeval.quality.model import DATAPOINT, Candidate, CheckContext
from coeval.quality.placeholders import template_placeholders
from coeval.quality.text import jaccard, shingles
from coeval.scheduler.work import OutputParseError
from coeval.storage.run_folder import RunFolder

__all__ = ["CheckSpec", "ItemGate", "QualityRejection", "UnknownCheckError", "resolve_checks"]

QUALITY_KIND = "quality"


class QualityRejection(OutputParseError):
    """A reply that parses but is junk; ``str()`` is ``"RULE: reason"``."""

    error_kind = QUALITY_KIND

    def __init__(self, rule: str, reason: str) -> None:
        super().__init__(f"{rule}: {reason}")
        self.rule = rule


class UnknownCheckError(ValueError):
    """``experiment.item_checks`` names a check no plugin registered."""


CheckSpec = tuple[str, Callable[..., Any], tuple[str, ...], dict[str, Any]]


def resolve_checks(registry: Iterable[Any], settings: Mapping[str, Any]) -> list[CheckSpec]:
    """Enabled checks as (rule, check, kinds, options): registry defaults, then the config's
    ``true``/``false`` or ``{enabled, ...options}`` per rule id."""
    entries = {e.name: e for e in registry}
    unknown = sorted(set(settings) - set(entries))
    if unknown:
        raise UnknownCheckError(
            f"experiment.item_checks: unknown check {', '.join(map(repr, unknown))}; "
            f"known checks: {', '.join(sorted(entries))}"
        )
    out: list[CheckSpec] = []
    for name, entry in entries.items():
        options = dict(entry.options.get("options") or {})
        enabled = bool(options.pop("enabled", True))
        setting = settings.get(name, enabled)
        if isinstance(setting, Mapping):
            if not setting.get("enabled", True):
                continue
            options.update({k: v for k, v in setting.items() if k != "enabled"})
        elif not setting:
            continue
        out.append((name, entry.value, tuple(entry.options.get("kinds") or (DATAPOINT,)), options))
    return out


class _ShingleIndex:
    """Accepted prompts per (task, teacher), as shingle sets."""

    def __init__(self) -> None:
        self._items: dict[tuple[str, str], list[frozenset[str]]] = {}

    def add(self, task: str, teacher: str, text: str) -> None:
        self._items.setdefault((task, teacher), []).append(shingles(text))

    def most_similar(self, task: str, teacher: str, text: str) -> float:
        mine = shingles(text)
        return max((jaccard(mine, other) for other in self._items.get((task, teacher), ())), default=0.0)


class ItemGate:
    """One per phase run: the enabled checks, the near-duplicate index, the rejection ledger."""

    def __init__(self, checks: list[CheckSpec], run: RunFolder | None,
                 exempt: Mapping[str, Iterable[str]] | None = None) -> None:
        self.checks = checks
        self.run = run
        #: teacher -> rules its interface opts out of (``exempt_item_checks`` interface option)
        self.exempt = {k: frozenset(v) for k, v in (exempt or {}).items()}
        self.index = _ShingleIndex()
        self._placeholders: dict[int, frozenset[str]] = {}

    def remember(self, task: str, teacher: str, prompts: Iterable[str]) -> None:
        """Items already accepted (earlier runs): later items must not duplicate them."""
        for prompt in prompts:
            self.index.add(task, teacher, prompt)

    def _context(self, task: TaskConfig, options: Mapping[str, Any]) -> CheckContext:
        key = id(task.prompt_library)
        if key not in self._placeholders:
            self._placeholders[key] = template_placeholders(task.prompt_library)
        return CheckContext(options=options, placeholders=self._placeholders[key], index=self.index)

    def check(self, candidate: Candidate) -> None:
        """Raise :class:`QualityRejection` on the first failing check; on acceptance of a
        datapoint, remember it for the near-duplicate check."""
        skip = self.exempt.get(candidate.teacher, frozenset())
        for rule, check, kinds, options in self.checks:
            if candidate.kind not in kinds or rule in skip:
                continue
            reason = check(candidate, self._context(candidate.task, options))
            if reason:
                if self.run is not None:
                    add_rejection(self.run, candidate.teacher, rule)
                raise QualityRejection(rule, reason)
        if candidate.kind == DATAPOINT:
            self.index.add(candidate.task.name, candidate.teacher, str(candidate.value.get("prompt", "")))

    def datapoint(self, task: TaskConfig, teacher: str, value: dict[str, str]) -> dict[str, str]:
        self.check(Candidate(DATAPOINT, task, teacher, value))
        return value

    def wrap_map(self, parse: Callable[[Any], Any], task: TaskConfig, kind: str, teacher: str,
                 seeds: Iterable[Mapping[str, Any]]) -> Callable[[Any], Any]:
        """A phase 1-2 parser that also runs the map checks on the parsed proposal."""
        kept = tuple(seeds)

        def parse_and_check(result: Any) -> Any:
            value = parse(result)
            self.check(Candidate(kind, task, teacher, value, kept))
            return value

        return parse_and_check
