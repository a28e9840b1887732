"""SIGTERM is honoured while a run is still reading its folder before the first phase (the
surveys of ``--continue``, the recount of a killed process's calls): that work runs off the
event loop, so the signal ends the run at once rather than when the reading is done."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

import pytest
from coeval.phases.evaluation import EvaluationPhase
from coeval.phases.survey_memo import forget_surveys
from coeval.run.runner import EXIT_INTERRUPTED

from .pipeline_support import folder, make_config, meta, mock_model, run, task


def test_sigterm_during_the_pre_run_survey_ends_the_run(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    config = make_config(tmp_path, [mock_model("m", latency_ms=0)], [task(total=4)])
    assert run(config).exit_code == 0
    entered, release, surveyed = threading.Event(), threading.Event(), threading.Event()
    survey = EvaluationPhase.survey

    def blocked(self: EvaluationPhase, view: Any) -> Any:
        entered.set()
        release.wait(20)  # the survey of a folder of millions of records, never finishing here
        surveyed.set()
        return survey(self, view)

    monkeypatch.setattr(EvaluationPhase, "survey", blocked)
    forget_surveys()  # the first run's own survey is kept while the folder is unchanged

    def terminate() -> None:
        if entered.wait(20):
            os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=terminate, daemon=True).start()
    try:
        result = run(config, continue_run=True)
        ended_while_surveying = not surveyed.is_set()
    finally:
        release.set()
    assert result.exit_code == EXIT_INTERRUPTED
    assert ended_while_surveying  # the run did not wait for the survey to finish
    assert meta(folder(config))["status"] != "in_progress"
