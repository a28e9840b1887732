"""The ``benchmark`` interface: a teacher whose datapoints come from ``coeval ingest``.

A benchmark teacher never generates anything. Its datapoints are the items of a published
dataset, written into the run by ``coeval ingest``; the pipeline skips virtual teachers in
phases 1-3 and replays those datapoints to the students in phase 4. A config names one like
any model::

    - name: mmlu-benchmark
      interface: benchmark
      roles: [teacher]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from coeval.interfaces.base import FatalModelError, GenerateRequest, GenerateResult, Interface
from coeval.storage import RunFolder, iter_jsonl

__all__ = ["BenchmarkInterface"]


class BenchmarkInterface(Interface):
    name = "benchmark"
    default_concurrency = 1
    max_concurrency = 1

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        raise FatalModelError(
            f"model {self.model.name!r} uses interface 'benchmark': it replays datapoints written by "
            f"`coeval ingest` and cannot generate text (asked for the {request.role} role). "
            "Give it only the teacher role, and ingest its benchmark into the run."
        )

    async def probe(self) -> None:
        """Nothing to reach: the datapoints are on disk."""
        return None

    def connection_key(self) -> str:
        return f"benchmark:{self.model.name}"

    def replay(self, run: RunFolder, task: str) -> Iterator[dict[str, Any]]:
        """The ingested datapoints of this teacher for ``task``, as phase 4 reads them."""
        for record in iter_jsonl(run.datapoints_path(task, self.model.name)):
            if record.get("teacher_model_id") == self.model.name and record.get("status", "ok") == "ok":
                yield record
