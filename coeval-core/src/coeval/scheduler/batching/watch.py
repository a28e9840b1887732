"""What a run's provider batch jobs are doing, told to the person at the console: defined in
:mod:`coeval.console.batch_watch` (the console shows it, the executor reports to it) and
kept importable from here."""

from coeval.console.batch_watch import BatchWatch, WaitingJob, clock_time, epoch_of

__all__ = ["BatchWatch", "WaitingJob", "clock_time", "epoch_of"]
