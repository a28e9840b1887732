"""Speed and peak memory of ``coeval analyze`` on a synthetic run of N judge records.

The run folder is written by :func:`coeval_testing.synthetic.write_synthetic_run` (five
students, four judges plus one answering at random, three teachers, two tasks; failures
and duplicate lines included; each judge record carries its prompt, raw reply and rationale,
about 2 KB as ``coeval run`` writes them) and cached between calls under the system temp folder.
``coeval analyze`` then runs in a child process that reports its own peak resident memory,
so the figure is the analysis alone, not the generator. ``seconds`` is a warm-cache figure
(the records were just counted, so the files sit in the page cache); ``cold_seconds`` is the
first run, after the folder's files were dropped from the page cache.

    python -m benchmarks.analysis                    # 1,000,000 records
    python -m benchmarks.analysis --records 100000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import evict_page_cache, run_coeval

TARGET_SECONDS = 15.0
TARGET_PEAK_MB = 2048.0
_CACHE_VERSION = 2  # 2: judge records carry transcripts (prompt, raw reply, rationale)

def build_run(n_records: int, root: Path | None = None) -> tuple[Path, float]:
    """A synthetic run folder of about ``n_records`` judge records (cached), and the
    seconds spent writing it (0 when cached)."""
    from coeval_testing.synthetic import SyntheticSpec, write_synthetic_run

    base = root or Path(tempfile.gettempdir()) / "coeval-bench-analysis"
    path = base / f"run-{n_records}-v{_CACHE_VERSION}"
    done = path / ".complete"
    if done.exists():
        return path, 0.0
    if path.exists():
        shutil.rmtree(path)
    started = time.perf_counter()
    spec = SyntheticSpec.for_records(n_records, failure_rate=0.01, duplicate_rate=0.005, seed=1, transcripts=True)
    write_synthetic_run(path, spec)
    done.write_text("ok\n", encoding="utf-8")
    return path, time.perf_counter() - started


def run(n_records: int = 1_000_000, *, n_boot: int = 1000, workdir: Path | None = None) -> dict[str, Any]:
    """Build (or reuse) the synthetic run and time ``coeval analyze`` on it.

    Returns ``{"name", "n_records", "seconds", "peak_mb", "target_seconds",
    "target_peak_mb", "ok", ...}``.
    """
    run_dir, setup_seconds = build_run(n_records, workdir)
    records = sum(1 for p in (run_dir / "phase5_evaluations").glob("*.jsonl") for _ in p.open("rb"))
    with tempfile.TemporaryDirectory(prefix="coeval-bench-out-") as tmp:
        out = Path(tmp) / "analysis"
        args = ["analyze", "--run", str(run_dir), "--out", str(out), "--bootstrap", str(n_boot), "--quiet"]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        cold = run_coeval(args, env=env) if evict_page_cache(run_dir) else None  # first read, from disk
        proc = run_coeval(args, env=env)  # warm: the files are in the page cache now
        seconds, peak_mb, cpu = proc.wall_seconds, proc.peak_mb, proc.cpu_seconds
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return {
        "name": "analysis",
        "n_records": records,
        "seconds": round(seconds, 2),
        "cache": "warm (files read just before; see cold_seconds)",
        "cold_seconds": round(cold.wall_seconds, 2) if cold is not None else None,
        "peak_mb": round(peak_mb, 1),
        "cpu_seconds": round(cpu, 2),
        "records_per_second": round(records / seconds),
        "target_seconds": TARGET_SECONDS,
        "target_peak_mb": TARGET_PEAK_MB,
        "ok": seconds <= TARGET_SECONDS and peak_mb <= TARGET_PEAK_MB,
        "setup_seconds": round(setup_seconds, 2),
        "n_boot": n_boot,
        "cpu_count": os.cpu_count(),
        "load_average": round(os.getloadavg()[0], 2),
        "n_duplicates": summary["n_duplicates"],
        "n_failed": summary["n_failed"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="judge records to analyse")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    result = run(args.records, n_boot=args.bootstrap)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        verdict = "OK" if result["ok"] else "OVER TARGET"
        print(
            f"coeval analyze on {result['n_records']:,} judge records: {result['seconds']:.1f} s "
            f"(target {TARGET_SECONDS:.0f} s; {result['cpu_seconds']:.1f} s CPU, load average "
            f"{result['load_average']}), peak {result['peak_mb']:.0f} MB (target {TARGET_PEAK_MB:.0f} MB) "
            f"-> {verdict}"
        )
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
