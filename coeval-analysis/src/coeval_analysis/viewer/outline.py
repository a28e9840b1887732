"""What a run is about, read without its records: the models in each role and the tasks
(its ``config.yaml``), and the leaderboard ``coeval analyze`` left in ``analysis/summary.json``
when it is newer than every record. Shown while the run's database is being built."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from coeval.config._yaml import load_yaml_guarded

from coeval_analysis.leaderboard.view import LeaderboardTable, leaderboard_of_summary
from coeval_analysis.loading.run_files import read_text
from coeval_analysis.viewer.build import PHASES, record_files

__all__ = ["LeaderboardRows", "analysis_leaderboard", "analysis_ranking", "analysis_summary", "run_outline"]

_ROLES = {"student": "students", "teacher": "teachers", "judge": "judges"}


def _names(items: Any) -> list[tuple[str, list[str]]]:
    out = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            roles = item.get("roles")
            out.append((item["name"], [str(r) for r in roles] if isinstance(roles, list) else []))
    return out


def run_outline(run: Path) -> dict[str, list[str]]:
    """``{"students": [...], "teachers": [...], "judges": [...], "tasks": [...]}`` as the
    run's config names them; empty lists when the run keeps no readable config."""
    outline: dict[str, list[str]] = {key: [] for key in (*_ROLES.values(), "tasks")}
    try:
        config = load_yaml_guarded(read_text(run / "config.yaml"), str(run / "config.yaml"))
    except (OSError, ValueError, yaml.YAMLError):  # ValueError: not UTF-8, or refused by the run-file guard
        return outline
    if not isinstance(config, dict):
        return outline
    for name, roles in _names(config.get("models")):
        for role in roles:
            if role in _ROLES:
                outline[_ROLES[role]].append(name)
    outline["tasks"] = [name for name, _ in _names(config.get("tasks"))]
    return outline


def analysis_summary(run: Path) -> dict[str, Any] | None:
    """``<run>/analysis/summary.json`` when it is newer than every record, else None."""
    path = run / "analysis" / "summary.json"
    try:
        written = path.stat().st_mtime_ns
        if any(f.stat().st_mtime_ns > written for phase in PHASES.values() for f in record_files(run, phase)):
            return None
        summary = json.loads(read_text(path, run))
    except (OSError, ValueError):
        return None
    return summary if isinstance(summary, dict) else None


def analysis_leaderboard(run: Path) -> LeaderboardTable | None:
    """The leaderboard of the run's current analysis, as the console prints it; None when
    there is no current analysis, or it predates the leaderboard."""
    summary = analysis_summary(run)
    return leaderboard_of_summary(summary) if summary is not None else None


class LeaderboardRows(list[dict[str, str]]):
    """The leaderboard's rows, each ``{column heading: cell}``, carrying the whole
    :class:`LeaderboardTable` (tiers, how the headline is combined) as ``table``."""

    def __init__(self, table: LeaderboardTable) -> None:
        super().__init__(dict(zip(table.header, row, strict=True)) for row in table.rows)
        self.table = table


def analysis_ranking(run: Path) -> list[dict[str, str]]:
    """The leaderboard's rows (a :class:`LeaderboardRows`) in the order of
    ``<run>/analysis/summary.json``; empty when there is none, or records changed since."""
    table = analysis_leaderboard(run)
    return LeaderboardRows(table) if table is not None else []
