"""``answer_lengths``: a phase that summarises how long each student's answers are.

It runs after ``response_collection`` and writes ``answer_lengths.json`` in the run folder:
per student, the number of usable answers and their mean length in characters and words,
and the mean ratio to the reference answer's length. It makes no model call, so its
:meth:`AnswerLengthsPhase.plan` says zero calls; it is recomputed whenever it runs, so
every mode gives the same file (``Keep`` keeps one that exists).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from coeval import (
    PhaseContext,
    PlannedCalls,
    RunFolder,
    RunView,
    Survey,
    load_phase_records,
    usable_response,
)

__all__ = ["SUMMARY_FILE", "AnswerLengthsPhase", "answer_lengths"]

SUMMARY_FILE = "answer_lengths.json"


def answer_lengths(run: RunFolder) -> dict[str, dict[str, float]]:
    """Per student: answers, mean characters, mean words, mean length ratio to the reference."""
    datapoints = load_phase_records(run, "data_generation")
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for resp in load_phase_records(run, "response_collection").values():
        if not usable_response(resp):
            continue
        text = str(resp.get("response") or "")
        reference = str(datapoints.get(str(resp.get("datapoint_id")), {}).get("reference_response") or "")
        row = sums[str(resp.get("student_model_id"))]
        row[0] += 1
        row[1] += len(text)
        row[2] += len(text.split())
        row[3] += len(text) / len(reference) if reference else 0.0
    return {
        student: {"answers": int(n), "mean_chars": round(chars / n, 2), "mean_words": round(words / n, 2),
                  "mean_ratio_to_reference": round(ratio / n, 4)}
        for student, (n, chars, words, ratio) in sorted(sums.items())
    }


class AnswerLengthsPhase:
    """A :class:`coeval.Phase`, registered through ``register_phases``."""

    name = "answer_lengths"
    after: tuple[str, ...] = ("response_collection",)
    modes: tuple[str, ...] = ("New", "Keep", "Extend", "Model")

    @staticmethod
    def path(view: RunView) -> Path:
        return view.run.root / SUMMARY_FILE

    def plan(self, view: RunView) -> PlannedCalls:
        """No model calls: the summary is computed from the responses on disk."""
        return PlannedCalls(phase=self.name, calls_by_model={}, calls_by_task={}, basis="full")

    def survey(self, view: RunView) -> Survey:
        survey = Survey(self.name)
        counts = survey.group("summary")
        counts.expected = 1
        counts.ok = int(self.path(view).is_file())
        return survey

    async def run(self, ctx: PhaseContext) -> None:
        path = self.path(ctx)
        if ctx.mode == "Keep" and path.is_file():
            ctx.log.info("phase kept: summary exists", phase=self.name)
            return
        summary = answer_lengths(ctx.run)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(path)
        ctx.log.info("answer lengths written", phase=self.name, students=len(summary), path=str(path))
        if ctx.result is not None:
            ctx.result.written += 1
