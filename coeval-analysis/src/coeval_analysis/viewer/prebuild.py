"""Building a run's viewer database ahead of ``coeval view``: at the end of ``coeval run``
and of ``coeval analyze``, so that a first look at a big run opens at once.

Only runs big enough for the build to be felt are done ahead (:data:`MIN_BYTES` of
evaluation records, about 150,000 of them); a small run is read in well under a second
when the viewer starts. A failure here (no writable cache folder, say) never fails the
command: the viewer builds the database itself later.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import duckdb

from coeval_analysis.viewer.build import PHASES, record_files
from coeval_analysis.viewer.store import RunStore, StoreError, cache_path

__all__ = ["MIN_BYTES", "prebuild", "write_viewer_cache"]

log = logging.getLogger("coeval.view")

#: evaluation records (bytes of phase-5 JSONL) from which the database is built ahead
MIN_BYTES = 64 * 2**20


def prebuild(run: Path, *, min_bytes: int | None = None, cache: Path | None = None) -> Path | None:
    """Build the database of ``run`` unless it is small (under ``min_bytes``, default
    :data:`MIN_BYTES`) or already built; returns its path when it exists afterwards."""
    try:
        size = sum(p.stat().st_size for p in record_files(run, PHASES["evals"]))
        if size < (MIN_BYTES if min_bytes is None else min_bytes):
            return None
        db = cache_path(run, cache)
        if not db.exists():
            log.info("building the viewer's database of %s (%d MB of evaluation records)", run, size // 2**20)
            RunStore(run, cache=cache).close()
        return db
    except (OSError, StoreError, duckdb.Error) as exc:
        log.warning("the viewer's database of %s was not built ahead (coeval view builds it): %s", run, exc)
        return None


def write_viewer_cache(analysis: Any, out_dir: Path) -> list[Path]:
    """The ``viewer`` report of ``coeval analyze``: the run's viewer database, built ahead
    (in the cache folder, not ``out_dir``: it is the run's, whatever the report's folder)."""
    prebuild(Path(analysis.data.path))
    return []
