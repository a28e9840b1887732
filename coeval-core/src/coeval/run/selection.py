"""``--tasks`` and ``--models``: run a subset of an experiment into the same run folder.

The subset is the config with only the named tasks and models, so its phases make only
their items; a later run without the filters (``--continue``) fills in the rest, since
each phase checks its records against the config it is given.
"""

from __future__ import annotations

import attrs

from coeval.config._schema_check import did_you_mean
from coeval.config.errors import ConfigError, ValidationIssue
from coeval.config.model import Config

__all__ = ["select", "unknown_names"]

_ROLES = ("teacher", "student", "judge")


def unknown_names(
    option: str, names: tuple[str, ...], known: list[str], field: str, config: Config
) -> list[ValidationIssue]:
    """V-36, the one check of a command-line option naming tasks or models: each name of
    ``names`` that is not one of ``known`` (the config's ``field``), with the closest guess."""
    issues = []
    for name in names:
        if name in known:
            continue
        guess = did_you_mean(name, known)
        issues.append(
            ValidationIssue(
                "V-36",
                option,
                f"'{name}' is not a {field.split('[')[0][:-1]} of this config"
                + (f" (did you mean '{guess}'?)" if guess else ""),
                f"use names from {field}: {', '.join(known)}",
                source=config.source,
            )
        )
    return issues


def select(config: Config, *, tasks: tuple[str, ...] = (), models: tuple[str, ...] = ()) -> Config:
    """``config`` with only ``tasks`` and ``models`` (empty: all). Unknown names, or a model
    choice that leaves a role empty, raise :class:`ConfigError` (exit 2)."""
    issues = unknown_names("--tasks", tasks, [t.name for t in config.tasks], "tasks[].name", config)
    issues += unknown_names("--models", models, [m.name for m in config.models], "models[].name", config)
    if issues:
        raise ConfigError(issues, source=config.source)
    chosen_tasks = tuple(t for t in config.tasks if not tasks or t.name in tasks)
    chosen_models = tuple(m for m in config.models if not models or m.name in models)
    for role in _ROLES:
        if not any(role in m.roles for m in chosen_models):
            candidates = ", ".join(m.name for m in config.models if role in m.roles)
            issues.append(
                ValidationIssue(
                    "V-36",
                    "--models",
                    f"the models chosen include no {role}",
                    f"add one of: {candidates}",
                    source=config.source,
                )
            )
    if issues:
        raise ConfigError(issues, source=config.source)
    return attrs.evolve(config, tasks=chosen_tasks, models=chosen_models)
