"""The bar's ETA: measured over a recent window that ends now, so it grows while nothing
finishes (retries, a batch wait) instead of freezing; a batch wait is named as such."""

from __future__ import annotations

import io
import re

from coeval.console.eta import RecentRate, format_eta
from coeval.console.progress import ProgressReporter
from coeval.scheduler.batching.base import BatchJobStatus
from coeval.scheduler.batching.watch import BatchWatch, WaitingJob
from rich.console import Console


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_a_steady_rate_gives_the_time_left_at_that_rate() -> None:
    clock = Clock()
    eta = RecentRate(window_s=30.0, clock=clock)
    for second in range(11):  # 2 items a second for 10 s
        eta.observe(2 * second)
        clock.t += 1.0
    clock.t -= 1.0
    assert eta.rate() == 2.0
    assert eta.seconds_left(20, 100) == 40.0
    assert format_eta(eta.seconds_left(20, 100)) == "ETA 0:00:40"


def test_while_nothing_finishes_the_eta_grows_then_is_unknown_never_frozen() -> None:
    clock = Clock()
    eta = RecentRate(window_s=30.0, clock=clock)
    for second in range(11):
        eta.observe(2 * second)
        clock.t += 1.0
    clock.t -= 1.0
    first = eta.seconds_left(20, 100)
    clock.t += 10.0  # every call is waiting on a retry: nothing finishes for 10 s
    later = eta.seconds_left(20, 100)
    assert first == 40.0 and later is not None and later > first
    assert later == 80 / (20 / 20)  # 20 items over the last 20 s
    clock.t += 31.0  # a whole window with nothing finished: no estimate, not a stale one
    assert eta.seconds_left(20, 100) is None
    assert format_eta(None) == "ETA -:--:--"


def test_the_rate_follows_the_recent_window_not_the_whole_phase() -> None:
    clock = Clock()
    eta = RecentRate(window_s=10.0, clock=clock)
    count = 0
    for _ in range(60):  # 10 a second for a minute...
        eta.observe(count)
        count += 10
        clock.t += 1.0
    for _ in range(20):  # ...then retries slow it to 1 a second
        eta.observe(count)
        count += 1
        clock.t += 1.0
    eta.observe(count)
    assert eta.rate() == 1.0
    assert eta.seconds_left(count, count + 50) == 50.0


def test_no_estimate_before_a_second_has_passed_and_zero_when_done() -> None:
    clock = Clock()
    eta = RecentRate(clock=clock)
    eta.observe(0)
    clock.t += 0.2
    assert eta.seconds_left(5, 10) is None
    assert eta.seconds_left(10, 10) == 0.0


def test_a_batch_wait_shows_waiting_for_batch_with_time_and_the_providers_count() -> None:
    clock = Clock()
    said: list[str] = []
    watch = BatchWatch(say=said.append, clock=clock)
    watch.following("evaluation", WaitingJob("batch_7", "openai", "gpt-4o-mini", 400, submitted_at=clock.t))
    assert watch.describe("evaluation") == "waiting for batch 0:00:00"
    clock.t += 83.0
    watch.polled("evaluation", "batch_7", BatchJobStatus("batch_7", "running", total=400, succeeded=118, failed=2), 30.0)
    assert watch.describe("evaluation") == "waiting for batch 0:01:23, openai 120/400 done"
    watch.polled("evaluation", "batch_7", BatchJobStatus("batch_7", "running", total=400, succeeded=300), 45.0)
    assert len(said) == 1  # one line per job
    assert said[0].startswith("evaluation: batch job batch_7 submitted to openai (gpt-4o-mini): 400 requests; "
                              "next poll at ")
    assert said[0].endswith(" (in 30 s)")
    watch.ended("evaluation", "batch_7")
    assert watch.describe("evaluation") is None


def test_the_bar_says_waiting_for_batch_in_place_of_an_eta() -> None:
    out = io.StringIO()
    reporter = ProgressReporter(enabled=True, console=Console(file=out, force_terminal=True, width=140))
    tracker = reporter.start_phase("response_collection", 2)
    reporter.batch_watch.following("response_collection", WaitingJob("batch_1", "openai", "m", 2, submitted_at=0.0))
    assert tracker.eta_text().startswith("waiting for batch ")
    assert reporter._live is not None
    reporter._live.refresh()
    reporter.batch_watch.ended("response_collection", "batch_1")
    assert tracker.eta_text() == "ETA -:--:--"
    tracker.finish()
    reporter.close()
    assert "waiting for batch" in out.getvalue()
    assert tracker.eta_text().startswith("took 0:00:0")


def test_a_job_found_pending_and_a_job_done_at_its_first_poll_each_get_one_line() -> None:
    clock = Clock()
    said: list[str] = []
    watch = BatchWatch(say=said.append, clock=clock)
    watch.following("evaluation", WaitingJob("batch_8", "anthropic", "claude", 12, submitted_at=clock.t - 3600,
                                             resumed=True))
    watch.polled("evaluation", "batch_8", BatchJobStatus("batch_8", "running", total=12, succeeded=5), 60.0)
    assert watch.describe("evaluation") == "waiting for batch 1:00:00, anthropic 5/12 done"
    watch.following("evaluation", WaitingJob("batch_9", "openai", "gpt", 3, submitted_at=clock.t))
    watch.polled("evaluation", "batch_9", BatchJobStatus("batch_9", "completed", total=3, succeeded=3), None)
    assert watch.describe("evaluation") == "waiting for 2 batch jobs 1:00:00, anthropic/openai 8/15 done"
    assert re.fullmatch(r"evaluation: collecting batch job batch_8 \(anthropic, claude\): 12 requests, submitted at "
                        r"\d\d:\d\d:\d\d by an earlier run; next poll at \d\d:\d\d:\d\d \(in 60 s\)", said[0]), said[0]
    assert said[1] == "evaluation: batch job batch_9 submitted to openai (gpt): 3 requests; finished; collecting the results"
