"""A ``--only-models`` shard claims its models: a second shard for the same model on the
same folder refuses at once (exit code 2) instead of making every call a second time."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from coeval.run.runner import RunResult

from tests.core.pipeline_support import duplicate_ids, folder, make_config, mock_model, run, task


def test_a_second_identical_shard_refuses_and_nothing_is_paid_twice(tmp_path: Path) -> None:
    # calls slow enough that the first shard is still at work, whatever the machine, when the
    # second starts (with 20 ms it could finish first, and the second then had nothing to do)
    models = [mock_model("a", latency_ms=300), mock_model("b", latency_ms=20)]
    config = make_config(tmp_path, models, [task(total=6)])
    results: list[RunResult] = []

    def shard(resume: bool) -> None:
        results.append(run(config, only_models=("a",), continue_run=resume))

    first = threading.Thread(target=shard, args=(False,))
    first.start()
    time.sleep(0.3)  # the first shard is working
    second = threading.Thread(target=shard, args=(True,))  # the same shard started again
    second.start()
    first.join()
    second.join()
    codes = sorted(r.exit_code for r in results)
    assert codes[1] == 2 and codes[0] != 2
    refused = next(r for r in results if r.exit_code == 2)
    assert "model a is already being run by another --only-models process" in refused.message
    for phase in ("data_generation", "response_collection", "evaluation"):
        assert duplicate_ids(folder(config), phase) == []


def test_shards_of_different_models_still_work_side_by_side(tmp_path: Path) -> None:
    models = [mock_model("a", latency_ms=20), mock_model("b", latency_ms=20)]
    config = make_config(tmp_path, models, [task(total=4)])
    results: list[RunResult] = []
    threads = [threading.Thread(target=lambda n=n: results.append(run(config, only_models=(n,)))) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.exit_code for r in results] == [0, 0]
    assert run(config, continue_run=True).exit_code == 0
