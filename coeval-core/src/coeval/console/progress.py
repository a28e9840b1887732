"""Progress of a run: one bar per phase on a terminal, a plain summary line per phase always.

The scheduler reports into a :class:`PhaseTracker` (plain counters, a few nanoseconds per
item); the bars are drawn by rich's refresh thread, which reads those counters ten times a
second. So a phase of a million zero-latency mock calls pays nothing for its progress bar.

    reporter = ProgressReporter()            # bars only when stderr is a terminal
    scheduler = Scheduler(interfaces, limits, progress=reporter)
    ...
    reporter.close()

Bars show done/total, rate, retries, failures, spend and an ETA from the recent rate
(:mod:`coeval.console.eta`), or, while the phase waits for a provider batch job, ``waiting
for batch`` with the time waited and the provider's own count (:mod:`coeval.console.batch_watch`,
which also prints one line per job submitted). Off a terminal (CI, pipes,
``enabled=False``) nothing is drawn, and each phase still ends with one summary line::

    evaluation: 10000/10000 done (9990 ok, 10 failed) in 31.2 s, 320.5/s, 45 retries, $0.1200

Items that never ran (Ctrl-C, budget, quota, a batch still pending) are not counted as
done; the line names them and why::

    evaluation: 1024/24000 done, 22976 cancelled (budget) (1024 ok, 0 failed) in 3.1 s, ...
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from typing import Any

from rich.console import Console, RenderableType
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TaskID, TextColumn
from rich.text import Text

from coeval.console.batch_watch import BatchWatch
from coeval.console.eta import RecentRate, format_eta, hms, planned_left
from coeval.console.text import plain

__all__ = ["NullProgress", "PhaseTracker", "ProgressReporter"]


class PhaseTracker:
    """Counters of one phase. Written by the event-loop thread, read by the display."""

    __slots__ = ("_finished", "_reporter", "done", "eta", "failed", "ok", "phase_id", "retries", "skipped",
                 "skips", "spend_usd", "started", "stopped", "total")

    def __init__(self, phase_id: str, total: int, reporter: ProgressReporter | None = None) -> None:
        self.phase_id = phase_id
        self.total = total
        self.done = self.ok = self.failed = self.skipped = self.retries = 0
        self.skips: Counter[str] = Counter()
        self.spend_usd = 0.0
        self.started = time.monotonic()
        self.stopped: float | None = None
        self._reporter = reporter
        self._finished = False
        self.eta = RecentRate()

    def item_done(self, status: str, reason: str | None = None) -> None:
        """Count one finished item; a skipped one ran no call, so it is not ``done``."""
        if status == "ok":
            self.done += 1
            self.ok += 1
        elif status == "failed":
            self.done += 1
            self.failed += 1
        else:
            self.skipped += 1
            self.skips[reason or "cancelled"] += 1

    def items_skipped(self, count: int, reason: str) -> None:
        """Count ``count`` items never started (a stopped phase's items not yet built)."""
        self.skipped += count
        self.skips[reason or "cancelled"] += count

    def retried(self) -> None:
        self.retries += 1

    def add_spend(self, usd: float) -> None:
        """Count the cost of one of this phase's calls (the summary line gives the phase's
        own cost; the run's total is the scheduler's)."""
        self.spend_usd += usd

    @property
    def elapsed(self) -> float:
        return (self.stopped if self.stopped is not None else time.monotonic()) - self.started

    @property
    def rate(self) -> float:
        elapsed = self.elapsed
        return self.done / elapsed if elapsed > 0 else 0.0

    def eta_text(self) -> str:
        """The bar's last column: the ETA at the recent rate, or what a batch wait is at."""
        if self.stopped is not None:
            return f"took {hms(self.elapsed)}"
        watch = self._reporter.batch_watch if self._reporter is not None else None
        waiting = watch.describe(self.phase_id) if watch is not None else None
        if waiting is not None:
            return waiting
        count = self.done + self.skipped
        left = self.eta.seconds_left(count, self.total)
        planned = self._reporter.planned_s.get(self.phase_id) if self._reporter is not None else None
        if left is None and planned:  # no recent rate yet: the plan's time model says
            left = planned_left(planned, count, self.total, self.elapsed)
        return format_eta(left)

    def summary_line(self) -> str:
        return (
            f"{self.phase_id}: {self.done}/{self.total} done{describe_skips(self.skips)} "
            f"({self.ok} ok, {self.failed} failed) in {self.elapsed:.1f} s, {self.rate:.1f}/s, "
            f"{self.retries} retries, ${self.spend_usd:.4f}"
        )

    def finish(self) -> None:
        """End the phase: freeze its clock and print the summary line (once)."""
        if self._finished:
            return
        self._finished = True
        self.stopped = time.monotonic()
        if self._reporter is not None:
            self._reporter._phase_finished(self)


class TrackerPass:
    """One scheduler run of a phase whose items come in several runs (a pipelined phase
    runs a pass each time its upstream phase has written more): counts go to the phase's
    one tracker, whose total is at least what was done before the pass plus the pass's
    own, and the phase, not the pass, finishes the tracker."""

    __slots__ = ("_base", "tracker")

    def __init__(self, tracker: PhaseTracker) -> None:
        self.tracker = tracker
        self._base = tracker.done + tracker.skipped  # done before this pass started

    @property
    def total(self) -> int:
        return self.tracker.total - self._base

    @total.setter
    def total(self, items: int) -> None:
        self.tracker.total = max(self.tracker.total, self._base + items)

    def item_done(self, status: str, reason: str | None = None) -> None:
        self.tracker.item_done(status, reason)

    def items_skipped(self, count: int, reason: str) -> None:
        self.tracker.items_skipped(count, reason)

    def retried(self) -> None:
        self.tracker.retried()

    def add_spend(self, usd: float) -> None:
        self.tracker.add_spend(usd)

    def finish(self) -> None:
        """A pass ends; the phase goes on."""


#: Why an item was not run, as the summary line says it.
_SKIP_WORDS = {"cancelled": "Ctrl-C", "batch_pending": "batch pending", "unwritten": "record not written"}


def describe_skips(skips: Counter[str]) -> str:
    """``", 22976 cancelled (budget)"``, or ``""`` when every item ran."""
    total = sum(skips.values())
    if not total:
        return ""
    causes = [(n, _SKIP_WORDS.get(reason, reason)) for reason, n in skips.most_common() if n]
    if len(causes) == 1:
        return f", {total} cancelled ({causes[0][1]})"
    return f", {total} cancelled ({', '.join(f'{word} {n}' for n, word in causes)})"


class _CountsColumn(ProgressColumn):
    """done/total and rate; retries, failures and spend once there are any (room for the ETA)."""

    def render(self, task: Task) -> RenderableType:
        f = task.fields
        parts = [f"{f.get('done', 0)}/{task.total or 0}", f"{f.get('rate', 0.0):.1f}/s"]
        if f.get("retries"):
            parts.append(f"retries {f['retries']}")
        if f.get("failed"):
            parts.append(f"failed {f['failed']}")
        if f.get("spend"):
            parts.append(f"${f['spend']:.4f}")
        return Text("  ".join(parts))


class _EtaColumn(ProgressColumn):
    def render(self, task: Task) -> RenderableType:
        return Text(str(task.fields.get("eta", "")))


class _LiveProgress(Progress):
    """A rich Progress that pulls the trackers' counters just before each redraw."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.trackers: list[tuple[PhaseTracker, TaskID]] = []  # before super(): it renders once
        super().__init__(*args, **kwargs)

    def get_renderables(self) -> Iterable[RenderableType]:
        for tracker, task_id in list(self.trackers):
            self.update(
                task_id,
                visible=bool(tracker.total) or tracker.stopped is not None,  # no empty 0/0 frame
                total=tracker.total or None,  # known once the phase's items are counted
                completed=tracker.done,
                done=tracker.done,
                rate=tracker.rate,
                retries=tracker.retries,
                failed=tracker.failed,
                spend=tracker.spend_usd,
                eta=tracker.eta_text(),
            )
        yield from super().get_renderables()


class ProgressReporter:
    """Progress bars for a run (rich), or only summary lines when not on a terminal.

    ``enabled=None`` draws bars only when the console is a terminal. ``summary=False`` also
    silences the summary lines (for embedding).
    """

    def __init__(self, *, enabled: bool | None = None, console: Console | None = None, summary: bool = True) -> None:
        self.console = console or Console(stderr=True)
        self.enabled = self.console.is_terminal if enabled is None else enabled
        self.summary = summary
        self.trackers: list[PhaseTracker] = []
        self._live: _LiveProgress | None = None
        #: batch jobs being waited for: one line per job, and the bars' "waiting for batch"
        self.batch_watch = BatchWatch(say=self.say)
        #: phase -> the seconds the plan's time model gave it (:meth:`expect`)
        self.planned_s: dict[str, float] = {}

    def expect(self, phase_seconds: dict[str, float]) -> None:
        """The plan's seconds per phase: the ETA until a phase's recent rate is known."""
        self.planned_s.update({p: float(s) for p, s in phase_seconds.items() if s and s > 0})

    def start_phase(self, phase_id: str, total: int) -> PhaseTracker:
        tracker = PhaseTracker(phase_id, total, self)
        self.trackers.append(tracker)
        if self.enabled:
            if self._live is None:
                self._live = _LiveProgress(
                    TextColumn("[bold]{task.description}"),
                    BarColumn(bar_width=24),
                    _CountsColumn(),
                    _EtaColumn(),
                    console=self.console,
                    refresh_per_second=8,
                )
                self._live.start()
            task_id = self._live.add_task(phase_id, total=total, visible=bool(total))
            self._live.trackers.append((tracker, task_id))
        return tracker

    def _phase_finished(self, tracker: PhaseTracker) -> None:
        # A phase whose count came after it started may turn out to owe nothing: it says
        # nothing, as a phase with nothing owed that is never started ("0/0 done" tells nothing).
        empty = tracker.total == 0 and tracker.done == 0 and tracker.skipped == 0
        if self._live is not None:
            for t, task_id in list(self._live.trackers):
                if t is not tracker:
                    continue
                if empty:
                    self._live.trackers.remove((t, task_id))
                    self._live.remove_task(task_id)
                else:
                    self._live.update(task_id, completed=tracker.done, total=max(tracker.total, tracker.done))
            self._live.refresh()
        if self.summary and not empty:
            self.console.print(tracker.summary_line(), markup=False, highlight=False, soft_wrap=True)

    def say(self, line: str) -> None:
        """One plain line above the bars (none when summaries are off: quiet, embedding),
        without control characters: lane URLs and server errors in it are untrusted."""
        if self.summary:
            self.console.print(plain(line), markup=False, highlight=False, soft_wrap=True)

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def __enter__(self) -> ProgressReporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class NullProgress(ProgressReporter):
    """Counts, draws and prints nothing (tests, embedding)."""

    def __init__(self) -> None:
        super().__init__(enabled=False, console=Console(quiet=True), summary=False)
