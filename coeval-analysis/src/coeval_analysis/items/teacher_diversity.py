"""How alike a teacher's accepted prompts are: a teacher that writes the same item again and
again (each just under the near-duplicate check) gives a ranking fewer real items than it seems.

``prompt_similarity`` is the mean word-shingle Jaccard (3-word shingles, as the item gate's
near-duplicate check uses) over all pairs of a teacher's ok prompts of the same task, taking
at most ``MAX_PROMPTS`` prompts per task (the first ones, in file order). ``low_diversity``
is true above ``LOW_DIVERSITY``.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from typing import Any

from coeval.quality.text import jaccard, shingles

from coeval_analysis.loading.jsonl import TEXT, read_records
from coeval_analysis.loading.run_data import RunData
from coeval_analysis.loading.run_files import PHASE3, jsonl_files

__all__ = ["LOW_DIVERSITY", "MAX_PROMPTS", "prompt_similarity", "teacher_prompts", "with_diversity"]

#: Mean pairwise prompt similarity above which a teacher's items are flagged as too alike.
LOW_DIVERSITY = 0.5
#: Prompts per (teacher, task) compared (pairs grow with the square of the count).
MAX_PROMPTS = 200

_COLUMNS = {"teacher_model_id": TEXT, "task_id": TEXT, "status": TEXT, "prompt": TEXT}


def teacher_prompts(data: RunData) -> dict[str, dict[str, list[str]]]:
    """teacher -> task -> its ok prompts (phase 3), in file order."""
    table, _ = read_records(jsonl_files(data.path, PHASE3) if data.path.is_dir() else [], _COLUMNS)
    out: dict[str, dict[str, list[str]]] = {}
    for rec in table.to_pylist():
        teacher, task, prompt = rec.get("teacher_model_id"), rec.get("task_id"), rec.get("prompt")
        if not teacher or not isinstance(prompt, str) or (rec.get("status") or "ok") != "ok":
            continue
        out.setdefault(str(teacher), {}).setdefault(str(task), []).append(prompt)
    return out


def prompt_similarity(by_task: Mapping[str, list[str]]) -> float | None:
    """Mean pairwise Jaccard of the prompts within each task (None when no task has two)."""
    total, pairs = 0.0, 0
    for prompts in by_task.values():
        sets = [shingles(p) for p in prompts[:MAX_PROMPTS]]
        for a, b in combinations(sets, 2):
            total += jaccard(a, b)
            pairs += 1
    return total / pairs if pairs else None


def with_diversity(teachers: Mapping[str, Mapping[str, Any]], data: RunData) -> dict[str, dict[str, Any]]:
    """Copies of the teachers' entries with ``prompt_similarity`` and ``low_diversity``."""
    prompts = teacher_prompts(data)
    out: dict[str, dict[str, Any]] = {}
    for name, entry in teachers.items():
        sim = prompt_similarity(prompts.get(str(name), {}))
        out[name] = {**entry, "prompt_similarity": sim, "low_diversity": sim is not None and sim > LOW_DIVERSITY}
    return out
