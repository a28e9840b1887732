"""Pieces shared by the benchmarks: the medium shape, child processes, the machine.

Every figure is measured in a fresh child interpreter (``python -m benchmarks._child``), so
peak memory and CPU time belong to the work measured, not to the harness or to an earlier
benchmark. The child reports its own ``getrusage`` figures.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
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


@dataclass(frozen=True)
class FakeServerProcess:
    """The fake provider server running in a process of its own."""

    url: str  #: its root URL (the openai routes are under ``/v1``)
    pid: int


@contextlib.contextmanager
def fake_server_process(latency_ms: float, latency_sigma: float = 0.0) -> Iterator[FakeServerProcess]:
    """Start ``python -m coeval_testing.fake_server`` answering after ``latency_ms`` (the
    median of a lognormal of shape ``latency_sigma`` when it is above 0), in a separate
    process so that its CPU is not the measured run's; stopped on exit."""
    server = subprocess.Popen(
        [sys.executable, "-m", "coeval_testing.fake_server", "--port", "0", "--latency-ms", str(latency_ms),
         "--latency-sigma", str(latency_sigma), "--no-log-bodies"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        if not url.startswith("http"):
            raise RuntimeError(f"the fake server did not start: {server.stderr.read() if server.stderr else ''}")
        yield FakeServerProcess(url, server.pid)
    finally:
        server.terminate()
        server.wait(10)


def openai_keys(folder: Path) -> Path:
    """A key file whose ``openai`` key the fake server accepts (every model shares it)."""
    return write_yaml(folder / "keys.yaml", {"providers": {"openai": "sk-bench-shared-key"}})


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


_COEVAL_CHILD = """
import resource, sys, time
from coeval.cli.main import main
started = time.perf_counter()
try:
    main(sys.argv[2:])
except SystemExit as exc:
    code = exc.code or 0
else:
    code = 0
seconds = time.perf_counter() - started
usage = resource.getrusage(resource.RUSAGE_SELF)
with open(sys.argv[1], "w") as fh:
    fh.write(f"{usage.ru_maxrss} {usage.ru_utime + usage.ru_stime} {seconds}")
sys.exit(code)
"""


@dataclass(frozen=True)
class CoevalProcess:
    """One ``coeval`` command measured in a child process of its own."""

    wall_seconds: float  # the whole process, start-up included
    inner_seconds: float  # the command itself, after imports
    cpu_seconds: float  # user + system time of the whole process
    peak_mb: float  # peak resident memory


def run_coeval(args: list[str], *, env: dict[str, str] | None = None) -> CoevalProcess:
    """Run ``coeval ARGS`` in a fresh interpreter that reports its own peak memory and CPU,
    so the figures are the command's alone, not the benchmark's set-up."""
    with tempfile.TemporaryDirectory(prefix="coeval-bench-child-") as tmp:
        stats = Path(tmp) / "stats"
        cmd = [sys.executable, "-c", _COEVAL_CHILD, str(stats), *args]
        started = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            raise RuntimeError(f"coeval {' '.join(args[:2])} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
        maxrss_kib, cpu, inner = stats.read_text().split()
    return CoevalProcess(
        wall_seconds=wall,
        inner_seconds=float(inner),
        cpu_seconds=float(cpu),
        peak_mb=int(maxrss_kib) / 1024.0,  # ru_maxrss is in KiB on Linux
    )


def evict_page_cache(folder: Path) -> bool:
    """Ask the kernel to drop ``folder``'s files from the page cache, so the next read of
    them comes from disk: a cold-cache (first run after boot) figure. Uses
    ``posix_fadvise(DONTNEED)``, which needs no root; False where the platform lacks it."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None:
        return False
    for path in folder.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
                advise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    return True


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
