"""Disk cost of the transcript fields (``request``, ``raw``, ``finish_reason``,
``latency_ms``, ``cost_usd``, ``rationale``, ``attempt_errors``) per record, on the medium
shape run through the ``mock`` interface, beside what a ``prompt_ref`` (template id and
a 16-hex hash of the rendered prompt) would cost instead of the full prompt.

    python -m benchmarks.record_size
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from benchmarks._common import medium_shape, write_yaml

NEW_FIELDS = ("request", "raw", "finish_reason", "latency_ms", "cost_usd", "rationale", "attempt_errors")
_PROMPT_REF = {"template": "evaluate_single", "sha256": "0123456789abcdef"}


def _size(rec: dict[str, Any]) -> int:
    return len(json.dumps(rec, ensure_ascii=False).encode("utf-8")) + 1  # the newline


def measure(run: Path) -> dict[str, Any]:
    phases: dict[str, Any] = {}
    for phase in ("phase3_datapoints", "phase4_responses", "phase5_evaluations"):
        n = total = new = request = 0
        for path in sorted((run / phase).glob("*.jsonl")):
            for line in path.open(encoding="utf-8"):
                rec = json.loads(line)
                n += 1
                total += _size(rec)
                bare = {k: v for k, v in rec.items() if k not in NEW_FIELDS}
                new += _size(rec) - _size(bare)
                request += _size(rec) - _size({**rec, "request": _PROMPT_REF})
        phases[phase] = {
            "records": n,
            "bytes_per_record": round(total / n),
            "new_fields_bytes_per_record": round(new / n),
            "full_prompt_over_prompt_ref_bytes_per_record": round(request / n),
        }
    return phases


def run() -> dict[str, Any]:
    from coeval.cli.main import cli

    with tempfile.TemporaryDirectory(prefix="coeval-bench-size-") as tmp:
        config = write_yaml(Path(tmp) / "medium.yaml",
                            medium_shape("mock", {}, storage=Path(tmp) / "runs", experiment_id="size"))
        result = CliRunner().invoke(cli, ["run", "--config", str(config)])
        if result.exit_code != 0:
            raise RuntimeError(result.output)
        return {"name": "record_size", "phases": measure(Path(tmp) / "runs" / "size")}


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
    sys.exit(0)
