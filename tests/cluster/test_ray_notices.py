"""Joining Ray from a run's worker thread prints nothing into the run's output (no cluster:
Ray's own ``init`` runs up to its argument check, after its thread notice)."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest
from coeval_hf import ray_serving

ray = pytest.importorskip("ray")

SIGTERM_NOTICE = "SIGTERM handler is not set because current thread is not the main thread"


def join_from_a_worker_thread(monkeypatch: pytest.MonkeyPatch) -> BaseException | None:
    """``connect`` as ``coeval run`` calls it (``asyncio.to_thread``), with Ray's real ``init``
    made to stop at its check of unknown arguments, before it starts or joins anything."""
    real_init = ray.init

    def init_that_stops_early(**kwargs: Any) -> Any:
        return real_init(**kwargs, _coeval_stop_here=True)

    monkeypatch.setattr(ray, "init", init_that_stops_early)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    raised: list[BaseException] = []

    def join() -> None:
        try:
            ray_serving.connect("auto")
        except BaseException as exc:
            raised.append(exc)

    worker = threading.Thread(target=join)
    worker.start()
    worker.join(60)
    return raised[0] if raised else None


def test_ray_s_thread_notice_stays_out_of_the_run_s_output(monkeypatch: pytest.MonkeyPatch,
                                                            capfd: pytest.CaptureFixture[str]) -> None:
    raised = join_from_a_worker_thread(monkeypatch)
    # Ray's real init ran past its notice and stopped where the test made it stop
    assert isinstance(raised, ray_serving.ServeError) and "_coeval_stop_here" in str(raised)
    out, err = capfd.readouterr()
    assert SIGTERM_NOTICE not in out + err


def test_ray_s_other_warnings_still_reach_the_user(monkeypatch: pytest.MonkeyPatch) -> None:
    worker = logging.getLogger("ray._private.worker")
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    monkeypatch.setattr(worker, "handlers", [handler])
    ray_serving.quiet_ray_notices()
    ray_serving.quiet_ray_notices()  # a second run in the same process adds no second filter
    worker.warning("Failed to connect to GCS")
    worker.warning(SIGTERM_NOTICE + ".")
    assert seen == ["Failed to connect to GCS"]
    assert sum(1 for f in worker.filters if type(f).__name__ == "_NoThreadNotice") == 1
