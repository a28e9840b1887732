"""What a phase is, what it sees, and what it reports.

A phase turns the run folder's current state into work items (one model call each), hands
them to the scheduler, and writes one record per finished item. Two questions every phase
answers in the same way, so ``coeval run``, ``--continue`` and ``coeval status`` agree:

* :meth:`Phase.survey`: under the current config, which items are expected, and which of
  them have an ``ok`` record, a ``failed`` one, or none. A phase is *complete* only when
  every expected item is ``ok``.
* :meth:`Phase.run`: make the calls the mode asks for.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from coeval.config.model import Config, ModelConfig, TaskConfig
from coeval.contract.plans import PlannedCalls
from coeval.contract.types import Phase as RegisteredPhase
from coeval.phases._items import untaken
from coeval.record_schema import ID
from coeval.storage.run_folder import JsonlWriter, RunFolder
from coeval.storage.superseded import drop_superseded

if TYPE_CHECKING:
    from coeval.contract.registries import Registries
    from coeval.scheduler import SchedulerStats, WorkItem, WorkOutcome

__all__ = [
    "Counts",
    "Phase",
    "PhaseContext",
    "PhaseError",
    "PhaseRefusedError",
    "PhaseResult",
    "PlannedCalls",
    "PlanningPhase",
    "RunView",
    "Survey",
    "WriterPool",
]


class PhaseError(RuntimeError):
    """The phase cannot run at all (missing inputs, a misconfigured evaluator)."""


class PhaseRefusedError(PhaseError):
    """Mode ``New`` found records it would have to overwrite or append to."""


@attrs.define
class Counts:
    expected: int = 0
    ok: int = 0
    failed: int = 0

    @property
    def missing(self) -> int:
        return max(0, self.expected - self.ok - self.failed)

    def to_dict(self) -> dict[str, int]:
        return {"expected": self.expected, "ok": self.ok, "failed": self.failed, "missing": self.missing}


@attrs.define
class Survey:
    """Expected vs present items of one phase, grouped by model (or task for phases 1-2)."""

    phase: str
    groups: dict[str, Counts] = attrs.field(factory=dict)
    #: failed items by error kind (rate_limit, unparseable, fatal, ...)
    failures: Counter[str] = attrs.field(factory=Counter)
    notes: list[str] = attrs.field(factory=list)

    def group(self, key: str) -> Counts:
        return self.groups.setdefault(key, Counts())

    @property
    def total(self) -> Counts:
        t = Counts()
        for c in self.groups.values():
            t.expected += c.expected
            t.ok += c.ok
            t.failed += c.failed
        return t

    @property
    def complete(self) -> bool:
        return all(c.ok >= c.expected for c in self.groups.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "complete": self.complete,
            "total": self.total.to_dict(),
            "groups": {k: v.to_dict() for k, v in sorted(self.groups.items())},
            "failures": dict(self.failures),
            "notes": list(self.notes),
        }


@attrs.define
class PhaseResult:
    phase: str
    mode: str
    status: str = "completed"  # completed | partial | failed | skipped | interrupted
    written: int = 0  # ok records written by this run
    failed: int = 0  # failed records written by this run
    skipped: int = 0  # items not run (quota, budget, cancelled)
    skip_causes: Counter[str] = attrs.field(factory=Counter)
    calls: int = 0
    #: items whose call was made (and counted) but whose record could not be written
    unwritten: int = 0
    #: why the first of them could not be written (``"No space left on device: path"``)
    unwritten_error: str = ""
    survey: Survey | None = None
    message: str = ""

    def to_log(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "phase": self.phase,
            "mode": self.mode,
            "status": self.status,
            "written": self.written,
            "failed": self.failed,
            "skipped": self.skipped,
        }
        if self.skip_causes:
            out["skip_causes"] = dict(self.skip_causes)
        if self.survey is not None:
            out["expected"] = self.survey.total.expected
            out["present_ok"] = self.survey.total.ok
        if self.message:
            out["message"] = self.message
        return out


class RunView:
    """Read-only access to a run: its config, its folder, the plugins."""

    def __init__(self, config: Config, run: RunFolder, registries: Registries) -> None:
        self.config = config
        self.run = run
        #: handed in by whoever builds the view (no global lookup: tests and forks pass their own)
        self.registries = registries

    # ---- models -------------------------------------------------------------------------
    def is_virtual(self, model: ModelConfig) -> bool:
        """Models that make no calls: their interface registered as a virtual teacher (their
        datapoints come from ``coeval ingest``)."""
        facts = self.registries.interface_facts(model.interface)
        return facts is not None and facts.virtual_teacher

    def callable_models(self, role: str) -> list[ModelConfig]:
        return [m for m in self.config.models_with_role(role) if not self.is_virtual(m)]

    # ---- artifacts ----------------------------------------------------------------------
    def read_json(self, path: Path) -> Any:
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except json.JSONDecodeError as exc:
            raise PhaseError(f"{path}: not valid JSON ({exc}); run `coeval repair` or delete it") from None

    def target_attributes(self, task: TaskConfig) -> dict[str, list[str]] | None:
        data = self.read_json(self.run.target_attrs_path(task.name))
        if data is None and task.static_target_attributes is not None:
            return {k: list(v) for k, v in task.static_target_attributes.items()}
        return data if isinstance(data, dict) else None

    def nuanced_attributes(self, task: TaskConfig) -> dict[str, list[str]] | None:
        data = self.read_json(self.run.nuanced_attrs_path(task.name))
        if data is None and isinstance(task.nuanced_attributes, Mapping):
            return {k: list(v) for k, v in task.nuanced_attributes.items()}
        return data if isinstance(data, dict) else None

    def rubric(self, task: TaskConfig) -> dict[str, Any] | None:
        data = self.read_json(self.run.rubric_path(task.name))
        if data is None and task.static_rubric is not None:
            return dict(task.static_rubric)
        return data if isinstance(data, dict) else None


class WriterPool:
    """One append-only writer per JSONL file, opened on first use.

    A record written with ``replaces=True`` stands in for an ok record of its id already in
    the file (a stale one, redone): on :meth:`close` the replaced lines are dropped, so the
    file keeps one record per id. Only a run that is the folder's sole writer drops lines (a
    shard shares files with other processes: ``exclusive=False``)."""

    def __init__(self, *, exclusive: bool = True, once: bool = False) -> None:
        self._writers: dict[Path, JsonlWriter] = {}
        self._replaced: dict[Path, set[str]] = {}
        self._exclusive = exclusive
        #: ids written through this pool, when each may be written once (the overlapping
        #: passes of a pipelined phase: see coeval.run.pipelining)
        self._written: set[str] | None = set() if once else None

    def write(self, path: Path, record: Mapping[str, Any], *, replaces: bool = False) -> bool:
        """Append ``record`` to ``path``; False when a pool of ``once`` had written its id."""
        if self._written is not None:
            rid = str(record.get(ID))
            if rid in self._written:
                return False
            self._written.add(rid)
        writer = self._writers.get(path)
        if writer is None:
            writer = self._writers[path] = JsonlWriter(path)
        writer.write(record)
        if replaces and self._exclusive:
            self._replaced.setdefault(path, set()).add(str(record.get(ID)))
        return True

    def close(self) -> None:
        for w in self._writers.values():
            w.close()
        self._writers.clear()
        replaced, self._replaced = self._replaced, {}
        for path, ids in replaced.items():
            drop_superseded(path, ids)


class PhaseContext(RunView):
    """What a running phase gets: the view, its mode, the scheduler and the bookkeeping."""

    def __init__(
        self,
        config: Config,
        run: RunFolder,
        *,
        mode: str,
        submit: Callable[[str, Iterable[WorkItem]], Any],
        log: Any,
        only_models: frozenset[str] = frozenset(),
        record_outcome: Callable[[WorkOutcome], None] | None = None,
        registries: Registries,
        source_run: RunFolder | None = None,
    ) -> None:
        super().__init__(config, run, registries)
        self.mode = mode
        self._submit = submit
        self.log = log
        self.only_models = only_models
        self._record_outcome = record_outcome
        self.writers = WriterPool(exclusive=not only_models)
        self.source_run = source_run
        self.result: PhaseResult | None = None
        #: the outcome :meth:`outcome` booked last (``on_done`` runs synchronously, one at a
        #: time), so a write that fails after booking is not booked twice
        self._last_booked: WorkOutcome | None = None
        #: set when the phase's first item is done: a count run beside the phase starts then
        self.first_done = threading.Event()
        #: whether the phase's item total is wanted (progress and ETA): a pipelined pass's is
        #: not (the phase's bar counts from the plan), so its count runs only if asked for
        self.wants_totals = True

    @property
    def sharded(self) -> bool:
        return bool(self.only_models)

    def in_scope(self, model_name: str) -> bool:
        """``--only-models``: does this process run this model's items?"""
        return not self.only_models or model_name in self.only_models

    async def submit(self, phase_id: str, items: list[WorkItem]) -> SchedulerStats | None:
        if not items:
            return None
        stats: SchedulerStats | None = await self._submit(phase_id, _Booked(items, self))
        if stats is not None and stats.unstarted and self.result is not None:  # a stopped streamed phase
            self.result.skipped += stats.unstarted
            self.result.skip_causes["cancelled"] += stats.unstarted
        return stats

    def unwritten(self, outcome: WorkOutcome, error: BaseException) -> None:
        """Book an item whose record could not be written: its calls were paid, so the
        ledger counts them (quotas and budgets hold), and the phase says it lost the record."""
        if outcome is self._last_booked:
            return
        res = self.result
        if res is not None:
            res.calls += outcome.attempts
            res.unwritten += 1
            if not res.unwritten_error:
                why = getattr(error, "strerror", None) or str(error) or type(error).__name__
                where = getattr(error, "filename", None)
                res.unwritten_error = f"{why}: {where}" if where else why
        if self._record_outcome is not None:
            self._record_outcome(outcome)

    def outcome(self, outcome: WorkOutcome) -> None:
        """Book one finished item (calls, spend, counts) after its record is written."""
        self._last_booked = outcome
        if not self.first_done.is_set():
            self.first_done.set()
        res = self.result
        if res is not None:
            res.calls += outcome.attempts
            if outcome.status == "ok":
                res.written += 1
            elif outcome.status == "failed":
                res.failed += 1
            else:
                res.skipped += 1
                res.skip_causes[outcome.error_kind or "skipped"] += 1
        if self._record_outcome is not None:
            self._record_outcome(outcome)


class _Booked:
    """The items of one submit, each ``on_done`` guarded: when writing the record fails
    the call is booked all the same (see :meth:`PhaseContext.unwritten`), then the error
    goes on to the scheduler, which stops the phase."""

    def __init__(self, items: Iterable[WorkItem], ctx: PhaseContext) -> None:
        self._items = items
        self._ctx = ctx

    @property
    def total_later(self) -> Any:
        """The items' total while it is still being counted (see ``LazyItems``), else None."""
        return getattr(self._items, "total_later", None)

    def __len__(self) -> int:
        return len(self._items)  # type: ignore[arg-type]

    def __bool__(self) -> bool:
        return bool(self._items)

    def __iter__(self) -> Iterator[WorkItem]:
        return self._guarded(self._items)

    def untaken(self, taken: set[str]) -> Iterator[WorkItem]:
        """The items no pipelined pass took yet (:func:`coeval.phases._items.untaken`)."""
        return self._guarded(untaken(self._items, taken))

    def _guarded(self, items: Iterable[WorkItem]) -> Iterator[WorkItem]:
        for item in items:
            yield attrs.evolve(item, on_done=self._guard(item.on_done))

    def _guard(self, on_done: Callable[[WorkOutcome], None]) -> Callable[[WorkOutcome], None]:
        ctx = self._ctx

        def guarded(outcome: WorkOutcome) -> None:
            try:
                on_done(outcome)
            except Exception as exc:
                ctx.unwritten(outcome, exc)
                raise

        return guarded


@runtime_checkable
class Phase(RegisteredPhase, Protocol):
    """A pipeline phase (the contract's :class:`coeval.contract.types.Phase` with the run's
    types). Besides these members a phase may have (the five built-in ones do):

    * ``title`` and ``short``: how tables and pages name it (e.g. ``"5 evaluation"`` and
      ``"5 evaluations"``); the id when missing;
    * ``plan(view) -> PlannedCalls``: the calls it expects to make, from the config alone
      (no record read, no call). A phase without it is counted as 0 calls, with a note;
    * ``roles``: the roles (``"judge"``, ...) whose models it calls through ``ctx.submit``,
      so the run opens their interfaces even when only this phase is left to run;
    * ``asks_every_model``: True when ``--only-models`` does not narrow the models it calls;
    * ``continue_mode``: the mode ``--continue`` runs it in (default ``Extend`` when it
      accepts it, else its configured mode).
    """

    #: Phase id, the key of ``experiment.phases`` (e.g. ``"evaluation"``).
    name: str
    #: Phases that must run before this one (third-party phases run after these).
    after: tuple[str, ...]
    #: Modes this phase accepts.
    modes: tuple[str, ...]

    def survey(self, view: RunView) -> Survey:
        """Expected vs present items under the current config (no calls, no writes)."""
        ...

    async def run(self, ctx: PhaseContext) -> None:
        """Make the calls ``ctx.mode`` asks for; write one record per finished item and
        report it through ``ctx.outcome``."""
        ...


@runtime_checkable
class StaticArtifactPhase(Protocol):
    """A phase whose artifacts a config may also give statically (the task's attribute maps
    and rubric): the run warns when the config's differ from the ones it keeps."""

    name: str

    def artifacts(self, view: RunView, task: TaskConfig) -> list[tuple[str, Path]]:
        """(kind, path) of each artifact the phase writes for ``task``."""
        ...

    def static_value(self, view: RunView, task: TaskConfig, kind: str) -> Mapping[str, Any] | None:
        """What the config gives for the artifact ``kind`` of ``task``, if anything."""
        ...


@runtime_checkable
class PlanningPhase(Phase, Protocol):
    """A phase that names itself for people and counts its calls before the run."""

    title: str
    short: str

    def plan(self, view: RunView) -> PlannedCalls:
        """The calls this phase expects under the current config (no record read, no call)."""
        ...
