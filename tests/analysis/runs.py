"""Hand-made run folders for loader tests: each test writes exactly the records it needs."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml


def write_jsonl(path: Path, records: Iterable[Mapping[str, Any] | str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def datapoint(task: str, teacher: str, seq: int, **attrs: str) -> dict[str, Any]:
    return {
        "id": f"{task}__{teacher}__{seq:05d}",
        "task_id": task,
        "teacher_model_id": teacher,
        "sampled_target_attributes": attrs,
        "prompt": f"prompt {seq}",
        "reference_response": "ref",
    }


def response(dp: Mapping[str, Any], student: str, text: str = "an answer", **extra: Any) -> dict[str, Any]:
    return {
        "id": f"{dp['id']}__{student}",
        "datapoint_id": dp["id"],
        "task_id": dp["task_id"],
        "teacher_model_id": dp["teacher_model_id"],
        "student_model_id": student,
        "response": text,
        **extra,
    }


def evaluation(
    resp: Mapping[str, Any], judge: str, scores: Mapping[str, Any], *, old: bool = False, **extra: Any
) -> dict[str, Any]:
    rec = {
        "id": f"{resp['id']}__{judge}",
        "response_id": resp["id"],
        "datapoint_id": resp["datapoint_id"],
        "task_id": resp["task_id"],
        "teacher_model_id": resp["teacher_model_id"],
        "judge_model_id": judge,
        "scores": dict(scores),
    }
    if not old:
        rec.update({"student_model_id": resp["student_model_id"], "evaluator": "llm_judge", "status": "ok"})
    rec.update(extra)
    return rec


def write_run(
    root: Path,
    *,
    rubric: Mapping[str, Any],
    datapoints: list[dict[str, Any]],
    responses: list[dict[str, Any]],
    evaluations: list[dict[str, Any] | str],
    task: str = "t",
    target_attrs: Mapping[str, list[str]] | None = None,
    label_attributes: list[str] | None = None,
) -> Path:
    (root / "phase2_rubric").mkdir(parents=True, exist_ok=True)
    (root / "phase2_rubric" / f"{task}.rubric.json").write_text(json.dumps(rubric), encoding="utf-8")
    if target_attrs is not None:
        (root / "phase1_attributes").mkdir(parents=True, exist_ok=True)
        (root / "phase1_attributes" / f"{task}.target_attrs.json").write_text(json.dumps(target_attrs))
    (root / "meta.json").write_text(json.dumps({"experiment_id": root.name, "status": "completed"}))
    task_cfg: dict[str, Any] = {"name": task, "description": "d"}
    if label_attributes:
        task_cfg["label_attributes"] = label_attributes
    (root / "config.yaml").write_text(yaml.safe_dump({"experiment": {"id": root.name}, "tasks": [task_cfg]}))
    write_jsonl(root / "phase3_datapoints" / f"{task}.x.datapoints.jsonl", datapoints)
    write_jsonl(root / "phase4_responses" / f"{task}.x.all.responses.jsonl", responses)
    write_jsonl(root / "phase5_evaluations" / f"{task}.x.all.evaluations.jsonl", evaluations)
    return root
