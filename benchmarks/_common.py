"""Pieces shared by the benchmarks: the medium shape, child processes, the machine.

Every figure is measured in a fresh child interpreter (``python -m benchmarks._child``), so
peak memory and CPU time belong to the work measured, not to the harness or to an earlier
benchmark. The child reports its own ``getrusage`` figures.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
MEDIUM_SHAPE = REPO / "docs" / "examples" / "medium-benchmark.yaml"
CACHE = Path(tempfile.gettempdir()) / "coeval-bench"


def medium_shape(
    interface: str, parameters: dict[str, Any], *, storage: Path, experiment_id: str, total: int | None = None
) -> dict[str, Any]:
    """The documentation's medium shape (5 models in every role, 4 tasks, 20 datapoints per
    teacher: 12,400 calls) with every model moved to ``interface`` and ``parameters``.

    Attributes and rubrics stay static, as in the documentation, so phases 1-2 make no
    calls; the quota of the example is dropped so every planned call is made.
    """
    raw = yaml.safe_load(MEDIUM_SHAPE.read_text(encoding="utf-8"))
    for key in [k for k in raw if k.startswith("x-")]:
        del raw[key]
    for model in raw["models"]:
        model["interface"] = interface
        model["parameters"] = {"model": model["name"], **parameters}
        model["role_parameters"] = {
            role: {k.replace("max_new_tokens", "max_tokens"): v for k, v in params.items() if k != "device"}
            for role, params in (model.get("role_parameters") or {}).items()
        }
    if total is not None:
        for task in raw["tasks"]:
            task["sampling"]["total"] = total
    raw["experiment"] = {"id": experiment_id, "storage_folder": str(storage), "probe_mode": "disable"}
    return raw


def write_yaml(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def run_child(function: str, args: dict[str, Any], *, timeout: float = 900) -> dict[str, Any]:
    """Run ``benchmarks.<module>:<function>(**args)`` in a fresh interpreter; its result."""
    with tempfile.TemporaryDirectory(prefix="coeval-bench-") as tmp:
        out = Path(tmp) / "result.json"
        cmd = [sys.executable, "-m", "benchmarks._child", function, json.dumps(args), str(out)]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout, env=env, check=False)
        if proc.returncode != 0 or not out.exists():
            tail = (proc.stderr or proc.stdout).strip()[-3000:]
            raise RuntimeError(f"{function} failed (exit {proc.returncode}):\n{tail}")
        result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
        return result


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gb = None
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        memory_gb = round(pages * size / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "memory_gb": memory_gb,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_at_start": load,
    }
