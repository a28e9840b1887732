"""Local models served on a real Ray cluster (CPU, 127.0.0.1): a run through two replicas,
a replica killed mid-phase, and one `coeval serve` deployment shared by two runs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.conftest import LocalCluster, cluster_config, coeval

#: a cluster start, a deployment and a five-phase run on a busy 2-core machine: minutes each
pytestmark = [pytest.mark.timeout(900), pytest.mark.slow]

PHASES = ("attribute_mapping", "rubric_mapping", "data_generation", "response_collection", "evaluation")


def status(cluster: LocalCluster, run: Path) -> dict[str, Any]:
    done = coeval(cluster, "status", "--run", str(run), "--json", cwd=run.parent)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def assert_every_phase_complete(report: dict[str, Any]) -> None:
    phases = {p["phase"]: p for p in report["phases"]}
    assert tuple(phases) == PHASES
    for name, phase in phases.items():
        total = phase["total"]
        assert phase["state"] == "complete" and total["failed"] == 0 and total["missing"] == 0, (name, total)
        assert total["ok"] == total["expected"] > 0, (name, total)


def coeval_apps() -> dict[str, Any]:
    from ray import serve

    return {n: a for n, a in serve.status().applications.items() if n.startswith("coeval-")}


def live_replicas(app: str) -> list[str]:
    """Names of the replica actors Ray runs for ``app``."""
    import ray

    return sorted(a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                  if a["namespace"] == "serve" and "REPLICA" in a["name"] and f"{app}#" in a["name"])


def test_a_model_on_two_replicas_completes_every_phase_and_both_replicas_answer(
    ray_cluster: LocalCluster, tmp_path: Path
) -> None:
    config = cluster_config(tmp_path, "two-replicas", variant=1)
    done = coeval(ray_cluster, "run", "--config", str(config), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "SIGTERM handler" not in done.stdout + done.stderr  # Ray's thread notice, mid-output
    report = status(ray_cluster, tmp_path / "runs" / "two-replicas")
    assert_every_phase_complete(report)
    lane_urls = {lane["url"] for phase in report["lanes"].values() for lane in phase["lanes"]}
    (url,) = lane_urls
    assert url.startswith(f"http://127.0.0.1:{ray_cluster.serve_port}/coeval-smollm2-greedy-") and url.endswith("/v1")
    served = ray_cluster.replica_logs(url.split("/")[-2])
    assert len(served) == 2, served  # Ray started two replicas
    assert all(calls > 0 for calls in served.values()), served  # and each answered calls
    assert sum(served.values()) >= sum(p["total"]["ok"] for p in report["phases"][2:])
    assert coeval_apps() == {}, "the run removes the application it deployed"


def test_a_replica_killed_mid_phase_loses_no_record_and_the_run_completes(
    ray_cluster: LocalCluster, tmp_path: Path
) -> None:
    import ray

    config = cluster_config(tmp_path, "replica-lost", datapoints=4, variant=2, from_file=True)
    run = tmp_path / "runs" / "replica-lost"
    proc = subprocess.Popen([sys.executable, "-m", "coeval.cli.main", "run", "--config", str(config)], cwd=tmp_path,
                            env=ray_cluster.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        answers = run / "phase4_responses"
        deadline = time.monotonic() + 300
        while not any(f.stat().st_size for f in answers.glob("*.jsonl")) if answers.is_dir() else True:
            assert proc.poll() is None, proc.communicate()[0][-3000:]
            assert time.monotonic() < deadline, "phase 4 did not start"
            time.sleep(0.2)
        (app,) = coeval_apps()
        replicas = live_replicas(app)
        assert len(replicas) == 2, replicas
        ray.kill(ray.get_actor(replicas[0], namespace="serve"))  # Ray's controller starts a new one
        out, _ = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out[-3000:]
    report = status(ray_cluster, run)
    assert_every_phase_complete(report)
    phase4 = report["lanes"]["response_collection"]["lanes"][0]
    answered = next(p for p in report["phases"] if p["phase"] == "response_collection")["total"]["ok"]
    # every answer made, none twice; the calls the lost replica held (if any were in flight
    # at the kill: phase 4 may have finished its calls by then) were retried
    assert phase4["calls"] >= answered
    lines = [json.loads(line) for f in (run / "phase4_responses").glob("*.jsonl") for line in f.read_text().splitlines()]
    ids = [r.get("response_id") or r.get("id") for r in lines]
    assert len(ids) == len(set(ids)) == answered, "no duplicate and no lost record"


def test_coeval_serve_deploys_once_and_two_runs_reuse_it(ray_cluster: LocalCluster, tmp_path: Path) -> None:
    first = cluster_config(tmp_path, "shared-a", datapoints=1, variant=3)
    served = coeval(ray_cluster, "serve", "--config", str(first), cwd=tmp_path)
    assert served.returncode == 0, served.stderr[-3000:]
    name, url, state = served.stdout.strip().splitlines()[0].split("\t")
    assert name == "smollm2-greedy" and state.startswith("deployed (coeval-smollm2-greedy-")
    assert url.startswith(f"http://127.0.0.1:{ray_cluster.serve_port}/coeval-smollm2-greedy-") and url.endswith("/v1")
    (app,) = coeval_apps()
    replicas_before = live_replicas(app)
    assert len(replicas_before) == 2

    again = coeval(ray_cluster, "serve", str(first), cwd=tmp_path)
    assert again.stdout.strip().split("\t")[2].startswith("already serving"), again.stdout
    second = cluster_config(tmp_path, "shared-b", datapoints=1, variant=3)  # another experiment, the same model settings
    for config, run in ((first, "shared-a"), (second, "shared-b")):
        done = coeval(ray_cluster, "run", "--config", str(config), cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        assert_every_phase_complete(status(ray_cluster, tmp_path / "runs" / run))
        assert set(coeval_apps()) == {app}, "the run used the live application and left it up"
    deployment = coeval_apps()[app].deployments["model"]
    assert deployment.replica_states == {"RUNNING": 2}
    assert live_replicas(app) == replicas_before, "no replica was started again"

    stopped = coeval(ray_cluster, "serve", "--stop", cwd=tmp_path)
    assert stopped.returncode == 0 and stopped.stdout.strip() == f"removed 1 application: {app}", stopped
    assert coeval_apps() == {}
