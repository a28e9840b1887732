"""The config of a run grown by what ``coeval ingest`` added to it; the runner, ``status``
and ``repair`` all read a run through it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from coeval.config.credentials import redact
from coeval.config.loader import structure_config
from coeval.config.model import Config, ModelConfig, TaskConfig
from coeval.console.logs import get_logger
from coeval.shipped_interfaces import BENCHMARK_INTERFACE


def merge_ingested(config: Config, meta: Mapping[str, Any], log: Any = None) -> Config:
    """The config plus the tasks and benchmark teachers ``coeval ingest`` added to the run
    (``meta["ingest_log"]``) that it does not name. Ingested tasks get ``sampling.total: 0``:
    their datapoints come from the benchmark, the config's teachers write none."""
    if log is None:
        log = get_logger()
    models = {m.name: m for m in config.models}
    tasks = {t.name: t for t in config.tasks}
    added_models: list[ModelConfig] = []
    added_tasks: list[TaskConfig] = []
    for entry in meta.get("ingest_log") or []:
        if not isinstance(entry, Mapping):
            continue
        raw_teacher, raw_task = entry.get("teacher"), entry.get("task")
        try:
            if isinstance(raw_teacher, Mapping) and raw_teacher.get("name") not in models:
                raw = {"roles": ["teacher"], "interface": BENCHMARK_INTERFACE, **dict(raw_teacher)}
                mini = structure_config({"models": [raw], "tasks": [], "experiment": {"id": config.experiment.id}})
                models[mini.models[0].name] = mini.models[0]
                added_models.append(mini.models[0])
            if isinstance(raw_task, Mapping) and raw_task.get("name") not in tasks:
                mini = structure_config({"models": [], "tasks": [dict(raw_task)], "experiment": {"id": config.experiment.id}})
                # its datapoints come from the benchmark: the config's teachers write none
                ingested = attrs.evolve(mini.tasks[0], sampling=attrs.evolve(mini.tasks[0].sampling, total=0))
                tasks[ingested.name] = ingested
                added_tasks.append(ingested)
        except Exception as exc:
            log.warning("ingest_log entry ignored", error=redact(str(exc)))
    if not added_models and not added_tasks:
        return config
    log.info("ingested benchmarks added to the run", models=[m.name for m in added_models],
             tasks=[t.name for t in added_tasks])
    return attrs.evolve(config, models=(*config.models, *added_models), tasks=(*config.tasks, *added_tasks))
