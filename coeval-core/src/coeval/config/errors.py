"""What a bad config looks like to the user: every problem at once, each one locatable.

A :class:`ValidationIssue` names the rule (``V-05``), the YAML path (``models[1].roles[0]``),
the line in the file, what is wrong and a one-line fix. :class:`ConfigError` carries all the
issues of one load, so a user fixes their file in one pass instead of one error per run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

import attrs

__all__ = ["ConfigError", "Severity", "ValidationIssue", "format_path"]

Severity = Literal["error", "warning"]
PathPart = str | int


def format_path(path: Sequence[PathPart]) -> str:
    """``("models", 1, "roles", 0)`` -> ``models[1].roles[0]``; odd keys are quoted."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part and all(c.isalnum() or c in "-_" for c in part):
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out or "(top level)"


@attrs.frozen
class ValidationIssue:
    """One problem found in a config."""

    rule: str  # "V-05"
    path: str  # "models[1].roles[0]"
    message: str
    fix: str = ""
    line: int | None = None  # 1-based line in the YAML file, when loaded from one
    source: str | None = None  # file the config came from
    severity: Severity = "error"

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def location(self) -> str:
        where = self.source or "<config>"
        return f"{where}:{self.line}" if self.line is not None else where

    def format(self) -> str:
        """Two lines: where, rule, path and message; then the fix."""
        head = f"{self.location()}: {self.rule} {self.path}: {self.message}"
        if self.severity == "warning":
            head = f"{self.location()}: warning {self.rule} {self.path}: {self.message}"
        return f"{head}\n    fix: {self.fix}" if self.fix else head

    def to_dict(self) -> dict[str, object]:
        return attrs.asdict(self)


def _sort_key(issue: ValidationIssue) -> tuple[int, int, str, str]:
    return (
        0 if issue.is_error else 1,
        issue.line if issue.line is not None else 1 << 30,
        issue.rule,
        issue.path,
    )


class ConfigError(ValueError):
    """A config that cannot be used. ``issues`` lists every problem found (errors first)."""

    def __init__(self, issues: Iterable[ValidationIssue], source: str | None = None) -> None:
        self.issues: list[ValidationIssue] = sorted(issues, key=_sort_key)
        self.source = source
        super().__init__(self._summary())

    @property
    def errors(self) -> list[ValidationIssue]:
        return [i for i in self.issues if i.is_error]

    @property
    def rules(self) -> list[str]:
        return [i.rule for i in self.errors]

    def _summary(self) -> str:
        n = len(self.errors)
        where = f"{self.source}: " if self.source else ""
        head = f"{where}invalid config ({n} problem{'s' if n != 1 else ''})"
        return head + "".join("\n  " + i.format().replace("\n", "\n  ") for i in self.issues)

    def __str__(self) -> str:
        return self._summary()
