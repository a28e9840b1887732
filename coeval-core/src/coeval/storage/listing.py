"""Which run folders a storage folder holds, for commands given the parent by mistake."""

from __future__ import annotations

from pathlib import Path

__all__ = ["runs_inside", "storage_folder_hint"]


def runs_inside(folder: Path) -> list[Path]:
    """Sub-folders of ``folder`` that are run folders (they hold ``meta.json``), by name."""
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir() and (p / "meta.json").is_file())
    except OSError:
        return []


def storage_folder_hint(folder: Path, shown: int = 10) -> str | None:
    """``"... holds runs a, b: pass --run folder/a"``, or None when it holds no run."""
    runs = runs_inside(folder)
    if not runs:
        return None
    names = ", ".join(p.name for p in runs[:shown]) + (f" and {len(runs) - shown} more" if len(runs) > shown else "")
    return f"{folder} is a storage folder holding {len(runs)} run(s): {names}; pass --run {runs[0]}"
