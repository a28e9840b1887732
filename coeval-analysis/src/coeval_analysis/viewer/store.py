"""One run folder as DuckDB tables: the viewer's only way into the records.

The JSONL files of phases 3-5 are read by DuckDB itself (never record by record in
Python) into a database file in a cache folder, keyed by every file's size and
modification time: the first look at a run builds it, later ones open it at once, and a
run that grew is rebuilt. Pages then ask paginated SQL questions, so the server's memory
stays flat however many records the run has (DuckDB spills to the file past its limit).

A store opened with ``background=True`` (what ``coeval view`` does) builds in a thread and
answers meanwhile: ``judgments`` comes first (see :mod:`coeval_analysis.viewer.build`), so
the start page and filtered tables need not wait for every prompt and raw reply to be
copied. Questions that need a table not written yet wait for it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coeval.storage.safe_files import apply_file_mode

from coeval_analysis.output.leftovers import remove_dead_parts
from coeval_analysis.viewer.build import (
    JUDGMENTS_STEP,
    PHASES,
    build_steps,
    preliminary_ranking_sql,
    record_files,
)
from coeval_analysis.viewer.oversized import is_oversize_error, without_oversized

if TYPE_CHECKING:
    import duckdb  # ~100 ms to import: coeval --help, which lists `view`, must not pay it

__all__ = ["MEMORY_LIMIT", "RunStore", "StoreError", "cache_folder", "cache_path"]

log = logging.getLogger("coeval.view")

_CACHE_VERSION = "5"  # 5: evals keep execution (code tests), responses their sample
#: DuckDB's own memory ceiling; past it, it works from the database file.
MEMORY_LIMIT = "512MB"
#: the table of records left out of the database (too big to read), one message each
_WARNINGS = "viewer_warnings"


class StoreError(RuntimeError):
    """The run's database could not be built (the message says why)."""


def cache_folder() -> Path:
    """``$COEVAL_VIEW_CACHE``, else ``$XDG_CACHE_HOME/coeval/view`` (``~/.cache/...``)."""
    env = os.environ.get("COEVAL_VIEW_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "coeval" / "view"


def _run_key(run: Path) -> str:
    return hashlib.sha256(f"{_CACHE_VERSION}|{run.resolve()}".encode()).hexdigest()[:16]


def _fingerprint(run: Path) -> str:
    """``<run key>-<content key>``: the run's folder, and each record file's size and time."""
    digest = hashlib.sha256()
    for phase in PHASES.values():
        for f in record_files(run, phase):
            st = f.stat()
            digest.update(f"|{f.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return f"{_run_key(run)}-{digest.hexdigest()[:16]}"


def cache_path(run: Path, cache: Path | None = None) -> Path:
    """Where the database of ``run`` in its present state lives (it may not exist yet)."""
    return (cache or cache_folder()) / f"{_fingerprint(run)}.duckdb"


class RunStore:
    """A read-only DuckDB view of one run folder (thread-safe: a cursor per call)."""

    def __init__(self, run: Path, *, cache: Path | None = None, background: bool = False) -> None:
        self.run = run
        self.name = run.name
        folder = cache or cache_folder()
        folder.mkdir(parents=True, exist_ok=True)
        self._db = cache_path(run, folder)
        self._cond = threading.Condition()
        self._active = 0  # cursors in use
        self._swapping = False
        self._con: duckdb.DuckDBPyConnection | None = None
        self._builder: duckdb.DuckDBPyConnection | None = None
        self._judgments = threading.Event()
        self._ready = threading.Event()
        self._failure: str | None = None
        self._done = 0.0
        self._current = 0.0
        self._total = 1.0
        self._shown = 0.0
        self._tables: set[str] = set()  # written so far, while building
        self._preliminary: list[dict[str, Any]] = []
        self._ranked = threading.Event()
        self._step = ""
        self._thread: threading.Thread | None = None
        self._closing = False
        self._warnings: list[str] = []  #: records left out of the database, with why
        if self._db.exists():
            self._con = self._open(self._db)
            self._warnings = self._stored_warnings(self._con)
            self._ranked.set()
            self._judgments.set()
            self._ready.set()
        elif background:
            self._thread = threading.Thread(target=self._build, args=(True,), name=f"coeval-view-index-{self.name}",
                                            daemon=True)
            self._thread.start()
        else:
            self._build()
            if self._failure:
                raise StoreError(self._failure)

    @staticmethod
    def _stored_warnings(con: duckdb.DuckDBPyConnection) -> list[str]:
        import duckdb

        try:
            return [str(row[0]) for row in con.execute(f"SELECT message FROM {_WARNINGS}").fetchall()]
        except duckdb.CatalogException:  # a database built before warnings were kept
            return []

    @staticmethod
    def _open(db: Path) -> duckdb.DuckDBPyConnection:
        import duckdb

        return duckdb.connect(str(db), read_only=True, config={"memory_limit": MEMORY_LIMIT})

    # -- building -----------------------------------------------------------------------

    def _build(self, rank_first: bool = False) -> None:
        """Fill ``<db>.<pid>.part`` step by step (after the preliminary ranking, when pages
        are answered meanwhile), then put it in place and reopen it read-only. A failure is
        kept and answered to every question."""
        import duckdb

        part = self._part_path()
        remove_dead_parts(self._db)  # those of builders that were killed
        try:
            part.unlink(missing_ok=True)
            con = duckdb.connect(str(part), config={"memory_limit": MEMORY_LIMIT, "preserve_insertion_order": "false"})
            apply_file_mode(part)  # the cache holds the run's text: owner only, as the run folder
            con.execute("SET enable_progress_bar = true; SET enable_progress_bar_print = false; "
                        "SET progress_bar_time = 0")
            with self._cond:
                self._con = self._builder = con
            if rank_first:
                self._rank_first(con)
            self._run_steps(con)
            con.execute("CHECKPOINT")
            self._swap(con, part)
        except Exception as exc:  # the server stays up and says what went wrong
            if not self._closing:
                log.error("building the viewer's database of %s failed: %s", self.run, exc)
            self._failure = f"reading the records of {self.run} failed: {exc}"
            with self._cond:
                if self._builder is not None:
                    self._builder.close()
                self._builder = self._con = None
            part.unlink(missing_ok=True)
        finally:
            for copy in part.parent.glob(f"{part.name}-*"):  # the record files without their oversized lines
                copy.unlink(missing_ok=True)
            self._ranked.set()
            self._judgments.set()
            self._ready.set()

    def _part_path(self) -> Path:
        """The database this process is building (``<db>.<pid>.part``), put in place when done."""
        return self._db.with_suffix(f".{os.getpid()}.part")

    def _rank_first(self, con: duckdb.DuckDBPyConnection) -> None:
        """The preliminary ranking (:func:`preliminary_ranking_sql`), before the build proper."""
        import duckdb

        self._step = "ranking the students"
        try:
            cur = con.execute(preliminary_ranking_sql(self.run))
            names = [d[0] for d in cur.description or ()]
            self._preliminary = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
        except duckdb.InvalidInputException as exc:  # an oversized record: the build proper leaves it out
            if not is_oversize_error(exc):
                raise
        finally:
            self._ranked.set()

    def preliminary_ranking(self, timeout: float) -> list[dict[str, Any]]:
        """``[{"student", "mean", "n"}]`` while building (empty if not ranked within
        ``timeout``, or when the database was already there)."""
        self._ranked.wait(timeout)
        return list(self._preliminary)

    def _run_steps(self, con: duckdb.DuckDBPyConnection) -> None:
        import duckdb

        files = {key: record_files(self.run, phase) for key, phase in PHASES.items()}
        steps = build_steps(self.run, files)
        self._total = sum(s.weight for s in steps) or 1.0
        trimmed = False
        i = 0
        while i < len(steps):
            step = steps[i]
            self._step, self._current = step.name, step.weight
            try:
                con.execute(step.sql)
            except duckdb.InvalidInputException as exc:
                if trimmed or not is_oversize_error(exc):
                    raise
                trimmed = True  # read the files again without their oversized lines, from this step on
                files = self._without_oversized(files, self._part_path())
                steps = build_steps(self.run, files)
                continue
            i += 1
            if step.table:
                self._tables.add(step.table)
            self._done += step.weight
            self._current = 0.0
            if step.name == JUDGMENTS_STEP:
                self._judgments.set()
        con.execute(f"CREATE TABLE {_WARNINGS} (message VARCHAR)")
        if self._warnings:
            con.executemany(f"INSERT INTO {_WARNINGS} VALUES (?)", [(w,) for w in self._warnings])

    def _without_oversized(self, files: dict[str, list[Path]], part: Path) -> dict[str, list[Path]]:
        """The record files with each line too big for DuckDB left out (copies beside the
        database being built), each one a warning (:mod:`.oversized`)."""
        out: dict[str, list[Path]] = {}
        for key, paths in files.items():
            out[key], warnings = without_oversized(paths, part)
            for warning in warnings:
                log.warning("%s", warning)
            self._warnings += warnings
        return out

    def _swap(self, con: duckdb.DuckDBPyConnection, part: Path) -> None:
        """Close the builder once no cursor is in use, rename its file, reopen read-only."""
        with self._cond:
            self._swapping = True
            while self._active:
                self._cond.wait()
            try:
                self._builder = None
                con.close()
                part.replace(self._db)
                self._con = self._open(self._db)
            finally:
                self._swapping = False
                self._cond.notify_all()
        for old in self._db.parent.glob(f"{_run_key(self.run)}-*.duckdb"):  # earlier states of this run
            if old != self._db:
                old.unlink(missing_ok=True)

    # -- state ----------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """Every table is written (or the build failed: questions then raise)."""
        return self._ready.is_set()

    def has_table(self, name: str) -> bool:
        """Whether table ``name`` is written (any table, once the database is ready)."""
        if self._ready.is_set():
            return self._failure is None
        return name in self._tables

    def wait(self, *, judgments_only: bool = False, timeout: float | None = None) -> bool:
        """Wait until what a question needs is written; False when ``timeout`` passed first."""
        return (self._judgments if judgments_only else self._ready).wait(timeout)

    def progress(self) -> float:
        """How much of the build is done, 0 to 1 (1 once ready)."""
        if self._ready.is_set():
            return 1.0
        part = 0.0
        builder = self._builder
        if builder is not None and self._current:
            import duckdb  # loaded already: it made the builder

            try:
                part = max(0.0, builder.query_progress()) / 100.0
            except duckdb.Error:
                part = 0.0
        now = min(0.99, (self._done + part * self._current) / self._total)
        self._shown = max(self._shown, now)  # a statement's own progress can restart between its pipelines
        return self._shown

    def status(self) -> dict[str, Any]:
        return {"run": self.name, "ready": self.ready and self._failure is None,
                "judgments_ready": self._judgments.is_set() and self._failure is None,
                "progress": round(self.progress(), 3), "step": "" if self.ready else self._step,
                "error": self._failure, "warnings": list(self._warnings)}

    # -- questions ------------------------------------------------------------------------

    @contextmanager
    def _cursor(self, judgments_only: bool) -> Iterator[duckdb.DuckDBPyConnection]:
        self.wait(judgments_only=judgments_only)
        with self._cond:
            while self._swapping:
                self._cond.wait()
            if self._con is None:
                raise StoreError(self._failure or f"the database of {self.run} is closed")
            cur = self._con.cursor()
            self._active += 1
        try:
            yield cur
        finally:
            cur.close()
            with self._cond:
                self._active -= 1
                self._cond.notify_all()

    def query(self, sql: str, params: Sequence[Any] = (), *, judgments_only: bool = False) -> list[tuple[Any, ...]]:
        """Rows of ``sql``; waits for the tables it needs (only ``judgments``, if so marked)."""
        with self._cursor(judgments_only) as cur:
            return cur.execute(sql, list(params)).fetchall()

    def query_dicts(self, sql: str, params: Sequence[Any] = (), *,
                    judgments_only: bool = False) -> list[dict[str, Any]]:
        with self._cursor(judgments_only) as cur:
            cur.execute(sql, list(params))
            names = [d[0] for d in cur.description or ()]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def close(self) -> None:
        """Stop a build under way and close the database."""
        self._closing = True
        builder = self._builder
        if builder is not None:
            builder.interrupt()
        if self._thread is not None:
            self._thread.join(timeout=30)
        with self._cond:
            if self._con is not None:
                self._con.close()
                self._con = None
