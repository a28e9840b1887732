"""Async execution of work items: concurrency per connection, retries, quota, budget, progress."""

from coeval.scheduler.core import Scheduler, SchedulerLimits, SchedulerStats
from coeval.scheduler.work import OutputParseError, WorkItem, WorkOutcome

__all__ = ["OutputParseError", "Scheduler", "SchedulerLimits", "SchedulerStats", "WorkItem", "WorkOutcome"]
