"""A real Ray cluster on 127.0.0.1, started once for the module by the test process.

The cluster has 2 CPUs whatever the machine (replicas ask for half a CPU each), and Serve's
HTTP proxy listens on a free port; ``coeval`` subprocesses join it through RAY_ADDRESS.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart.yaml"


@attrs.frozen
class LocalCluster:
    address: str
    serve_port: int
    logs: Path  # Ray's session logs: serve/replica_<app>_model_<id>.log per replica

    def env(self) -> dict[str, str]:
        return {**os.environ, "RAY_ADDRESS": self.address, "COEVAL_SERVE_PORT": str(self.serve_port),
                "RAY_USAGE_STATS_ENABLED": "0"}

    def replica_logs(self, app_prefix: str) -> dict[str, int]:
        """Replica log file -> chat-completion calls it answered (Ray's access log lines)."""
        return {path.name: sum(1 for line in path.read_text(errors="replace").splitlines()
                               if "POST" in line and " 200 " in line)
                for path in sorted((self.logs / "serve").glob(f"replica_{app_prefix}*.log"))}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[LocalCluster]:
    import ray

    temp = Path(tempfile.mkdtemp(prefix="coeval-ray-"))  # short: Ray's socket paths must fit 107 bytes
    for attempt in range(3):  # Ray gives its raylet 30 s to start, which a busy machine can miss
        try:
            ray.init(num_cpus=2, num_gpus=0, include_dashboard=False, _temp_dir=str(temp),
                     _node_ip_address="127.0.0.1", namespace="coeval-tests", log_to_driver=False,
                     configure_logging=False)
            break
        except Exception:
            ray.shutdown()
            if attempt == 2:
                raise
    try:
        address = ray.get_runtime_context().gcs_address
        yield LocalCluster(address=address, serve_port=_free_port(), logs=temp / "session_latest" / "logs")
    finally:
        from ray import serve

        stop_serve: Any = serve.shutdown  # untyped in Ray
        stop_serve()
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


#: quiz items for a run whose datapoints come from a file (phase 3 makes no call)
QUESTIONS = (("What is the capital of France?", "Paris."), ("How many legs does a spider have?", "Eight."),
             ("What gas do plants take in from the air?", "Carbon dioxide."),
             ("Which planet is closest to the Sun?", "Mercury."))


def cluster_config(folder: Path, experiment: str, *, replicas: int = 2, keep_serving: bool = False,
                   datapoints: int = 2, variant: int = 0, from_file: bool = False) -> Path:
    """The quick start's greedy model alone, short replies, served on ``replicas`` replicas.

    ``variant`` goes into the seed (which greedy decoding ignores): a different variant is
    a different application, so the tests of one module do not share replicas.
    ``from_file``: the first ``datapoints`` of :data:`QUESTIONS` from a CSV file instead of
    the teacher's, for a test of serving that the 135M teacher's item rejections (whose
    retries depend on which items were accepted first) must not fail."""
    raw: dict[str, Any] = yaml.safe_load(QUICKSTART.read_text(encoding="utf-8"))
    model = raw["models"][0]
    model["parameters"].update({"seed": 1000 + variant, "threads": 1, "max_tokens": 160, "cluster": {
        "replicas": replicas, "num_cpus": 0.5, "keep_serving": keep_serving}})
    model["role_parameters"] = {"student": {"max_tokens": 24}, "judge": {"max_tokens": 40}}
    raw["models"] = [model]
    task = raw["tasks"][0]
    raw["tasks"] = [task]  # the quick start's data-file task is not about serving
    raw["experiment"] = {"id": experiment, "storage_folder": str(folder / "runs"), "generation_retries": 5}
    if from_file:  # the quick start's item generation gives way to the file
        rows = "".join(f"{q},{a}\n" for q, a in QUESTIONS[:datapoints])
        (folder / f"{experiment}.csv").write_text("question,answer\n" + rows, encoding="utf-8")
        task["data"] = {"file": f"{experiment}.csv", "prompt": "question", "reference": "answer"}
        for key in ("target_attributes", "nuanced_attributes", "sampling", "prompt_library"):
            task.pop(key, None)
    else:
        task["sampling"]["total"] = datapoints
        # the topics and retries the 135M model handles: these tests are about serving, not the model
        task["target_attributes"] = {"topic": ["geography", "science"], "difficulty": ["easy"]}
        task["sampling"]["target"] = [1, 1]
    path = folder / f"{experiment}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


def coeval(cluster: LocalCluster, *args: str, cwd: Path, timeout: float = 400) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coeval.cli.main", *args], cwd=cwd, env=cluster.env(),
                          capture_output=True, text=True, timeout=timeout)
