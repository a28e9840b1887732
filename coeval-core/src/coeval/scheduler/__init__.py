"""Async execution of work items: concurrency per connection, retries, quota, budget, progress."""

from coeval.scheduler.adaptive import AdaptiveLimit, LimitCounters
from coeval.scheduler.batch import BatchExecutor
from coeval.scheduler.clock import Clock, ManualClock, SystemClock
from coeval.scheduler.core import Scheduler
from coeval.scheduler.limits import SchedulerLimits
from coeval.scheduler.retry import RetryPolicy
from coeval.scheduler.stats import LaneStats, SchedulerStats
from coeval.scheduler.work import WorkItem, WorkOutcome

__all__ = [
    "AdaptiveLimit",
    "BatchExecutor",
    "Clock",
    "LaneStats",
    "LimitCounters",
    "ManualClock",
    "RetryPolicy",
    "Scheduler",
    "SchedulerLimits",
    "SchedulerStats",
    "SystemClock",
    "WorkItem",
    "WorkOutcome",
]
