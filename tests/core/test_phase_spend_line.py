"""Each phase's summary line gives the phase's own cost, not the run's running total
(earlier phases and the spend of an interrupted run before ``--continue`` left out)."""

from __future__ import annotations

import asyncio
import io

from coeval.console.progress import ProgressReporter
from coeval.scheduler import Scheduler, SchedulerLimits
from rich.console import Console

from .scheduler_helpers import Recorder, ScriptedInterface, make_items


def test_each_phase_line_shows_its_own_cost() -> None:
    out = io.StringIO()
    reporter = ProgressReporter(console=Console(file=out, force_terminal=False, width=200))
    iface = ScriptedInterface(cost=0.25)
    scheduler = Scheduler({"m": iface}, SchedulerLimits(spend_before_usd=10.0), progress=reporter)

    async def both() -> None:
        await scheduler.run("response_collection", make_items(iface, 4, Recorder()))
        await scheduler.run("evaluation", make_items(iface, 2, Recorder()))

    asyncio.run(both())
    reporter.close()
    lines = out.getvalue().strip().splitlines()
    assert lines[0].startswith("response_collection: 4/4 done") and lines[0].endswith("$1.0000")
    assert lines[1].startswith("evaluation: 2/2 done") and lines[1].endswith("$0.5000")
    assert scheduler.spend_usd == 11.5  # the budget still counts the whole run
