"""``coeval run --continue`` on a finished run of 1,000,000 evaluation records.

The run folder is the medium shape (5 models, 4 tasks) with 2,000 datapoints per teacher:
40,000 datapoints, 200,000 responses and 1,000,000 evaluations. It is made from a real
run of the same shape on the ``mock`` interface with 2 datapoints per teacher, whose records
are replicated with their sequence numbers (and so every id) shifted -- the records are
exactly what the pipeline writes, only more of them -- and cached under the temp folder.

The measured command finds nothing missing, so it must make no call; the figures are its
wall time and peak memory (the whole ``coeval`` process, started fresh). ``seconds`` is a
warm-cache figure: the run folder was just read, so its files sit in the page cache.
``cold_seconds`` is the same command first, after the folder's files were dropped from the
page cache (``posix_fadvise``): what a first ``--continue`` after a reboot costs.

    python -m benchmarks.resume                       # 1,000,000 records
    python -m benchmarks.resume --datapoints 200      # 100,000 records
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._common import CACHE, evict_page_cache, medium_shape, run_coeval, write_yaml

TARGET_SECONDS = 10.0
TARGET_PEAK_MB = 1024.0
_SEED_TOTAL = 2
_CACHE_VERSION = 1
_SEQ = re.compile(r"__(\d{5})(?=__|\")")

def _config(root: Path, total: int) -> Path:
    return write_yaml(root / "exp.yaml", medium_shape("mock", {}, storage=root / "runs", experiment_id="resume",
                                                      total=total))


def build_run(datapoints: int) -> tuple[Path, Path, float]:
    """(config, run folder, seconds spent building; 0 when cached)."""
    if datapoints % _SEED_TOTAL:
        raise ValueError(f"datapoints must be a multiple of {_SEED_TOTAL}")
    root = CACHE / f"resume-{datapoints}-v{_CACHE_VERSION}"
    run = root / "runs" / "resume"
    if (root / ".complete").exists():
        return root / "exp.yaml", run, 0.0
    if root.exists():
        shutil.rmtree(root)
    started = time.perf_counter()
    root.mkdir(parents=True)
    _seed_run(root)
    copies = datapoints // _SEED_TOTAL
    for phase in ("phase3_datapoints", "phase4_responses", "phase5_evaluations"):
        for path in sorted((run / phase).glob("*.jsonl")):
            _replicate(path, copies)
    _config(root, datapoints)
    (root / ".complete").write_text("ok\n", encoding="utf-8")
    return root / "exp.yaml", run, time.perf_counter() - started


def _seed_run(root: Path) -> None:
    """A real run of the medium shape with 2 datapoints per teacher, on the mock."""
    from coeval.console.progress import NullProgress
    from coeval.plugins.config_loading import load_config
    from coeval.run.options import RunOptions
    from coeval.run.runner import arun_experiment

    config = load_config(_config(root, _SEED_TOTAL))
    result = asyncio.run(arun_experiment(config, RunOptions(progress=False), progress=NullProgress()))
    if result.exit_code != 0:
        raise RuntimeError(f"seed run failed: {result.message}")


def _replicate(path: Path, copies: int) -> None:
    """Append ``copies - 1`` shifted copies of every record (seq -> seq + k * seed total)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    with path.open("w", encoding="utf-8") as out:
        for k in range(copies):
            shift = k * _SEED_TOTAL
            if shift == 0:
                out.write("\n".join(lines) + "\n")
                continue
            out.write("\n".join(_SEQ.sub(lambda m, s=shift: f"__{int(m.group(1)) + s:05d}", ln) for ln in lines) + "\n")


def run(datapoints: int = 2000) -> dict[str, Any]:
    """Figure (c): time and peak memory of ``coeval run --continue`` with nothing missing."""
    result = _measure(datapoints)
    if not result["records_untouched"] and result["setup_seconds"] == 0.0:
        # a cached run from an older record format: --continue had work to do; rebuild once
        shutil.rmtree(CACHE / f"resume-{datapoints}-v{_CACHE_VERSION}")
        result = _measure(datapoints)
    return result


def _measure(datapoints: int) -> dict[str, Any]:
    config, run_dir, setup = build_run(datapoints)
    evaluations = sum(1 for p in (run_dir / "phase5_evaluations").glob("*.jsonl") for _ in p.open("rb"))
    before = {p: p.stat().st_size for p in run_dir.rglob("*.jsonl")}
    cold = run_coeval(["run", "--config", str(config), "--continue"]) if evict_page_cache(run_dir) else None
    proc = run_coeval(["run", "--config", str(config), "--continue"])
    after = {p: p.stat().st_size for p in run_dir.rglob("*.jsonl")}
    meta = json.loads((run_dir / "meta.json").read_text(encoding="utf-8"))
    last = (meta.get("runs") or [{}])[-1]
    wall, peak = proc.wall_seconds, proc.peak_mb
    return {
        "name": "resume_scan",
        "evaluation_records": evaluations,
        "seconds": round(wall, 2),
        "cache": "warm (files read just before; see cold_seconds)",
        "cold_seconds": round(cold.wall_seconds, 2) if cold is not None else None,
        "seconds_in_process": round(proc.inner_seconds, 2),
        "peak_mb": round(peak, 1),
        "records_untouched": before == after,
        "exit_code": last.get("exit_code"),
        "target_seconds": TARGET_SECONDS,
        "target_peak_mb": TARGET_PEAK_MB,
        "setup_seconds": round(setup, 1),
        "ok": wall <= TARGET_SECONDS and peak <= TARGET_PEAK_MB and before == after,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datapoints", type=int, default=2000, help="datapoints per (task, teacher)")
    args = parser.parse_args(argv)
    result = run(args.datapoints)
    print(json.dumps(result, indent=2))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
