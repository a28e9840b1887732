"""``echo``'s batch runner: the echo interface through a batch API, for trying batch mode offline.

A real provider keeps a batch job on its servers; this one keeps it in a JSON file of its
own folder (``COEVAL_EXAMPLE_BATCH_DIR``, or ``coeval-example-batches`` in the system's
temporary folder), so a run interrupted while it waits can collect the job with
``--continue`` from another process, as with a real provider. A job is done as soon as it
is submitted. It is enabled like any provider's batch API, from a config::

    experiment:
      batch:
        echo: {response_collection: true}
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from coeval import (
    BatchJobStatus,
    BatchRunner,
    GenerateRequest,
    GenerateResult,
    ModelError,
    TransientModelError,
)

from coeval_example.interface import echo

__all__ = ["BATCH_DIR_ENV", "EchoBatchRunner"]

#: where the jobs are kept (default: a folder in the system's temporary folder)
BATCH_DIR_ENV = "COEVAL_EXAMPLE_BATCH_DIR"


def _jobs_folder() -> Path:
    folder = Path(os.environ.get(BATCH_DIR_ENV) or Path(tempfile.gettempdir()) / "coeval-example-batches")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class EchoBatchRunner(BatchRunner):
    """Answers every request of a job with its prompt, as :class:`EchoInterface` does."""

    interface_name = "echo"
    max_requests_per_job = 50
    poll_interval_s = 0.01

    async def submit(self, requests: Sequence[tuple[str, GenerateRequest]]) -> str:
        job_id = f"echo-batch-{uuid.uuid4().hex}"
        prompts = {custom_id: request.prompt for custom_id, request in requests}
        (_jobs_folder() / f"{job_id}.json").write_text(json.dumps(prompts), encoding="utf-8")
        return job_id

    def _prompts(self, job_id: str) -> dict[str, str] | None:
        try:
            prompts: dict[str, str] = json.loads((_jobs_folder() / f"{job_id}.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        return prompts

    async def poll(self, job_id: str) -> BatchJobStatus:
        prompts = self._prompts(job_id)
        if prompts is None:
            return BatchJobStatus(job_id, "expired", message=f"no echo batch job {job_id}")
        return BatchJobStatus(job_id, "completed", total=len(prompts), succeeded=len(prompts))

    async def collect(self, job_id: str) -> Mapping[str, GenerateResult | ModelError]:
        prompts = self._prompts(job_id)
        if prompts is None:
            raise TransientModelError(f"no echo batch job {job_id}")
        return {custom_id: echo(prompt) for custom_id, prompt in prompts.items()}
