"""Helpers for the item-quality tests: a task, a gate with every built-in check, and the
false-rejection measurement on ingested benchmark items."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coeval.config.model import TaskConfig
from coeval.plugins.manager import registries
from coeval.quality import ItemGate, QualityRejection
from coeval.quality.gate import resolve_checks

BENCHMARK_FIXTURES = Path(__file__).resolve().parents[1] / "benchmarks" / "fixtures"


def make_task(description: str = "Answer a question about the capital city of a country.",
              output_description: str = "One sentence naming the capital.", **over: Any) -> TaskConfig:
    return TaskConfig(name=over.pop("name", "qa"), description=description, output_description=output_description, **over)


def gate(settings: dict[str, Any] | None = None) -> ItemGate:
    return ItemGate(resolve_checks(registries().item_checks, settings or {}), None)


def rejection(g: ItemGate, task: TaskConfig, prompt: str, response: str, teacher: str = "t") -> str | None:
    """The rule that rejects this datapoint, or None when it is accepted."""
    try:
        g.datapoint(task, teacher, {"prompt": prompt, "response": response})
    except QualityRejection as exc:
        return exc.rule
    return None


def benchmark_false_rejections(name: str) -> tuple[int, dict[str, int]]:
    """(items checked, {rule: rejected}) for the ingested fixture items of benchmark ``name``."""
    from coeval_benchmarks.ingest import load_items

    adapter = registries().benchmarks.get(name)
    items, _ = load_items(adapter, "test", BENCHMARK_FIXTURES)
    task = make_task(adapter.description, adapter.output_description, name=name)
    g = gate()
    rejected: dict[str, int] = {}
    for item in items:
        rule = rejection(g, task, item.prompt, item.reference, teacher=adapter.teacher_name)
        if rule:
            rejected[rule] = rejected.get(rule, 0) + 1
    return len(items), rejected
