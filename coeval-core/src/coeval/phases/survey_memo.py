"""One survey per phase and state of the run folder, within a process.

``coeval run --continue`` asks for the same phase's survey from the spend estimate, from
the choice of the phases to run and from the probe; on a finished run of a million records
each survey reads every record (seconds). A survey is reused while the config, the plugins
and every file of the standard phases' folders (name, inode, size, modification time) are
as they were; a phase that writes a record changes its folder, so the next ask surveys again.
"""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Iterator
from typing import Any

from coeval.phases.base import Phase, RunView, Survey
from coeval.storage.run_folder import PHASE_DIRS

__all__ = ["forget_surveys", "survey_of"]

_KEEP = 16  #: surveys kept (five phases, a few configs: a run, an estimate, a fork)
_lock = threading.Lock()
_memo: list[tuple[tuple[Any, ...], Any, Survey]] = []  # (key, config, survey)


def _files(folder: str) -> Iterator[tuple[str, int, int, int]]:
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_file(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    yield entry.name, st.st_ino, st.st_size, st.st_mtime_ns
    except FileNotFoundError:
        return


def _state(view: RunView) -> tuple[Any, ...]:
    """What the standard phases' folders hold now, as file names and stats."""
    root = str(view.run.root)
    return tuple((sub, tuple(sorted(_files(os.path.join(root, sub))))) for sub in sorted(set(PHASE_DIRS.values())))


def survey_of(phase: Phase, view: RunView) -> Survey:
    """``phase.survey(view)``, reused while nothing it reads has changed (a copy: callers may
    add notes). A phase outside the standard folders is surveyed each time."""
    if phase.name not in PHASE_DIRS:
        return phase.survey(view)
    key = (phase.name, str(view.run.root), id(view.registries), _state(view))
    with _lock:
        for k, config, survey in _memo:
            if k == key and config == view.config:
                return copy.deepcopy(survey)
    survey = phase.survey(view)
    with _lock:
        _memo.append((key, view.config, survey))
        del _memo[:-_KEEP]
    return copy.deepcopy(survey)


def forget_surveys() -> None:
    """Drop every kept survey (what a new process starts with)."""
    with _lock:
        _memo.clear()
