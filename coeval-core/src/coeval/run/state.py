"""One run's state: the config and options, the registered phases in run order, the run
folder, the interfaces and the results so far. The runner (:class:`coeval.run.runner.ExperimentRun`)
holds it; its start-up (:mod:`coeval.run.startup`) and its phase loop
(:class:`coeval.run.phase_loop.PhaseLoop`) read and set it."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from coeval.config.model import Config
from coeval.config.phase_order import ordered_phases
from coeval.interfaces.base import Interface
from coeval.phases.base import Phase, PhaseResult
from coeval.phases.run_selection import run_mode
from coeval.run.meta import RunMeta
from coeval.run.options import RunOptions
from coeval.run.signals import Interrupts
from coeval.scheduler import Scheduler
from coeval.storage.run_folder import RunFolder

if TYPE_CHECKING:
    from coeval.plugins.manager import Registries

__all__ = ["RunState"]


class RunState:
    """What one run holds while it runs."""

    def __init__(
        self,
        config: Config,
        options: RunOptions,
        *,
        registries: Registries,
        progress: Any,
        interrupts: Interrupts | None,
    ) -> None:
        self.config = config
        #: the config as given (``self.config`` may add ingested tasks): what config.yaml keeps
        self.user_config = config
        self.options = options
        self.registries = registries
        #: the registered phases in run order (phase ids and modes come from them)
        self.phases = ordered_phases(registries)
        self.phase_ids = [p.name for p in self.phases]
        self.progress = progress
        self.interrupts = interrupts
        exp = config.experiment
        self.run = RunFolder.for_experiment(exp.storage_folder, exp.id)
        self.only = frozenset(options.only_models)
        #: Names this process's entry in ``meta["runs"]``: shards append theirs concurrently,
        #: so "the last entry" may be another process's.
        self.run_id = uuid.uuid4().hex[:12]
        self.meta = RunMeta(self.run, self.run_id, self.only)
        self.results: dict[str, PhaseResult] = {}
        self.scheduler: Scheduler | None = None
        self.stop_requested = False
        self.interfaces: dict[str, Interface] = {}
        #: Surveys made before the lock was taken, reused by the phase loop: on a finished
        #: run of a million records a survey is the whole cost of --continue, so make it once.
        self.surveys: dict[str, Any] = {}

    def mode(self, phase: Phase) -> str:
        """The mode ``phase`` runs in: the config's, or what ``--continue`` makes of it."""
        return run_mode(self.config, phase, continue_run=self.options.continue_run)
