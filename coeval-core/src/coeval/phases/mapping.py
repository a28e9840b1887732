"""Phases 1 and 2: attribute maps and rubrics, static or proposed by teachers.

A static map in the config is written as the artifact (no call). ``auto`` (and, for target
attributes, ``complete``) asks every teacher once; the proposals are merged and
de-duplicated across teachers, seeds first and always kept. ``rubric: extend`` merges the
teachers' new factors onto the rubric inherited through ``resume_from``.

Each teacher's reply is kept beside the artifact as a proposal file as soon as it arrives,
and the artifact is written only once *every* teacher has answered. So a teacher that
failed or hit its quota leaves the phase incomplete, ``--continue`` asks only that teacher
again, and nobody is asked twice.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from coeval.config.model import ModelConfig, TaskConfig
from coeval.interfaces.base import GenerateRequest
from coeval.phase_ids import ATTRIBUTE_MAPPING, RUBRIC_MAPPING, SHORT_TITLES, TITLES
from coeval.phases.base import PhaseContext, PhaseRefusedError, RunView, Survey
from coeval.phases.item_gate import gate_for
from coeval.phases.plans import PlannedCalls, plan_attribute_mapping, plan_rubric_mapping
from coeval.prompts import render_prompt
from coeval.prompts.schemas import ATTRIBUTES_SCHEMA, RUBRIC_SCHEMA, parse_attribute_map, parse_rubric
from coeval.record_schema import ERROR_KIND, GENERATED_AT, STATUS, TEACHER_MODEL_ID
from coeval.scheduler.work import WorkItem, WorkOutcome
from coeval.storage.records import call_fields, utc_now
from coeval.storage.run_folder import atomic_write_json

__all__ = ["AttributeMappingPhase", "RubricMappingPhase", "merge_attribute_maps", "merge_rubrics"]


def _norm(name: str) -> str:
    return re.sub(r"[^0-9a-z]+", "_", str(name).casefold()).strip("_")


def merge_attribute_maps(maps: list[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Union of values per attribute, in order of first appearance. Attribute names and
    values that differ only in case, spaces or punctuation are the same."""
    out: dict[str, list[str]] = {}
    names: dict[str, str] = {}
    seen: dict[str, set[str]] = {}
    for m in maps:
        for name, values in (m or {}).items():
            key = _norm(name)
            if not key:
                continue
            canonical = names.setdefault(key, str(name))
            out.setdefault(canonical, [])
            seen.setdefault(canonical, set())
            for v in [values] if isinstance(values, str) else list(values or []):
                v = str(v).strip()
                if v and _norm(v) not in seen[canonical]:
                    seen[canonical].add(_norm(v))
                    out[canonical].append(v)
    return out


def merge_rubrics(rubrics: list[Mapping[str, Any]]) -> dict[str, Any]:
    """First description of each factor wins; later duplicates (by normalized name) drop."""
    out: dict[str, Any] = {}
    seen: set[str] = set()
    for r in rubrics:
        for name, desc in (r or {}).items():
            key = _norm(name)
            if key and key not in seen:
                seen.add(key)
                out[str(name)] = desc
    return out


def _snake(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """Teacher-proposed names as snake_case (they become JSON keys and factor names)."""
    out: dict[str, Any] = {}
    for name, value in mapping.items():
        key = _norm(name) or str(name)
        if key not in out:
            out[key] = value
    return out


def _proposal_path(artifact: Path, teacher: str) -> Path:
    # "{task}.target_attrs.json" -> "{task}.target_attrs.{teacher}.proposal.json"
    stem = artifact.name[: -len(".json")]
    return artifact.with_name(f"{stem}.{teacher}.proposal.json")


class _TeacherMappingPhase:
    """Shared machinery: artifacts per task, teacher proposals, merge, write."""

    name = ""
    after: tuple[str, ...] = ()
    modes: tuple[str, ...] = ("New", "Keep", "Extend")
    #: the models it calls: every teacher, whatever ``--only-models`` narrows
    roles = ("teacher",)
    asks_every_model = True
    #: ``--continue`` keeps the artifacts it wrote (a map is never extended in place)
    continue_mode = "Keep"

    # -- to specialise -------------------------------------------------------------------
    def artifacts(self, view: RunView, task: TaskConfig) -> list[tuple[str, Path]]:
        raise NotImplementedError

    def static_value(self, view: RunView, task: TaskConfig, kind: str) -> Mapping[str, Any] | None:
        raise NotImplementedError

    def seeds(self, view: RunView, task: TaskConfig, kind: str) -> list[Mapping[str, Any]]:
        raise NotImplementedError

    def request(self, view: RunView, task: TaskConfig, kind: str, teacher: ModelConfig) -> tuple[GenerateRequest, Callable[[Any], Any]]:
        raise NotImplementedError

    def merge(self, parts: list[Mapping[str, Any]]) -> dict[str, Any]:
        raise NotImplementedError

    # -- common --------------------------------------------------------------------------
    def _proposal(self, view: RunView, path: Path) -> dict[str, Any] | None:
        data = view.read_json(path)
        return data if isinstance(data, dict) else None

    def survey(self, view: RunView) -> Survey:
        s = Survey(self.name)
        for task in view.config.tasks:
            counts = s.group(task.name)
            for _kind, path in self.artifacts(view, task):
                counts.expected += 1
                if path.is_file():
                    counts.ok += 1
                    continue
                for teacher in view.callable_models("teacher"):
                    prop = self._proposal(view, _proposal_path(path, teacher.name))
                    if prop is not None and prop.get(STATUS) == "failed":
                        counts.failed += 1
                        s.failures[str(prop.get(ERROR_KIND) or "error")] += 1
                        break
        return s

    async def run(self, ctx: PhaseContext) -> None:
        pending: list[tuple[TaskConfig, str, Path]] = []
        items: list[WorkItem] = []
        gate = gate_for(ctx)
        for task in ctx.config.tasks:
            for kind, path in self.artifacts(ctx, task):
                if path.is_file():
                    if ctx.mode == "New" and not ctx.sharded:
                        raise PhaseRefusedError(
                            f"{self.name} is New but {path} already exists; use Keep to reuse it, "
                            "or a new experiment id to start over"
                        )
                    continue
                static = self.static_value(ctx, task, kind)
                if static is not None:
                    atomic_write_json(path, dict(static))
                    ctx.log.info("artifact written", phase=self.name, task=task.name, kind=kind, source="config")
                    continue
                self.seeds(ctx, task, kind)  # fails early (before any call) when a seed is missing
                pending.append((task, kind, path))
                for teacher in ctx.callable_models("teacher"):
                    prop_path = _proposal_path(path, teacher.name)
                    prop = self._proposal(ctx, prop_path)
                    if prop is not None and prop.get(STATUS) == "ok":
                        continue
                    request, parse = self.request(ctx, task, kind, teacher)
                    items.append(
                        WorkItem(
                            key=f"{self.name}:{task.name}:{kind}:{teacher.name}",
                            phase=self.name,
                            model=teacher,
                            request=request,
                            parse=gate.wrap_map(parse, task, kind, teacher.name, self.seeds(ctx, task, kind)),
                            on_done=self._on_done(ctx, prop_path),
                            meta={"task": task.name, "kind": kind, "teacher": teacher.name},
                        )
                    )
        try:
            await ctx.submit(self.name, items)
        finally:
            gate.close()
        for task, kind, path in pending:
            self._finish(ctx, task, kind, path)

    def _on_done(self, ctx: PhaseContext, prop_path: Path) -> Callable[[WorkOutcome], None]:
        def done(outcome: WorkOutcome) -> None:
            if outcome.status != "skipped":
                record = {
                    TEACHER_MODEL_ID: outcome.item.model.name,
                    GENERATED_AT: utc_now(),
                    **call_fields(outcome),
                }
                if outcome.status == "ok":
                    record["proposal"] = outcome.value
                atomic_write_json(prop_path, record)
            ctx.outcome(outcome)

        return done

    def _finish(self, ctx: PhaseContext, task: TaskConfig, kind: str, path: Path) -> None:
        teachers = ctx.callable_models("teacher")
        proposals = []
        missing = []
        for teacher in teachers:
            prop = self._proposal(ctx, _proposal_path(path, teacher.name))
            if prop is not None and prop.get(STATUS) == "ok":
                proposals.append(prop["proposal"])
            else:
                missing.append(teacher.name)
        if missing:
            ctx.log.warning(
                "artifact not written: teachers without an answer", phase=self.name, task=task.name,
                kind=kind, teachers=missing,
            )
            return
        if not teachers:
            ctx.log.warning("no teacher can be asked; writing the seed only", phase=self.name, task=task.name, kind=kind)
        merged = self.merge([*self.seeds(ctx, task, kind), *proposals])
        atomic_write_json(path, merged)
        ctx.log.info("artifact written", phase=self.name, task=task.name, kind=kind, source="teachers",
                     teachers=len(proposals), entries=len(merged))


def _task_vars(task: TaskConfig) -> dict[str, Any]:
    return {
        "task_name": task.name,
        "task_description": task.description.strip(),
        "output_description": task.output_description.strip(),
    }


def _seed_text(seed: Mapping[str, Any] | None) -> str:
    return "(none)" if not seed else _json(seed)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _static_map(value: Any) -> dict[str, list[str]] | None:
    if isinstance(value, Mapping):
        return {str(k): [str(v) for v in (vals if not isinstance(vals, str) else [vals])] for k, vals in value.items()}
    return None


class AttributeMappingPhase(_TeacherMappingPhase):
    """Phase 1: ``{task}.target_attrs.json`` and ``{task}.nuanced_attrs.json``."""

    name = ATTRIBUTE_MAPPING
    title = TITLES[ATTRIBUTE_MAPPING]
    short = SHORT_TITLES[ATTRIBUTE_MAPPING]

    def plan(self, view: RunView) -> PlannedCalls:
        return plan_attribute_mapping(view, self.name)

    def artifacts(self, view: RunView, task: TaskConfig) -> list[tuple[str, Path]]:
        return [("target", view.run.target_attrs_path(task.name)), ("nuanced", view.run.nuanced_attrs_path(task.name))]

    def _spec(self, task: TaskConfig, kind: str) -> Any:
        return task.target_attributes if kind == "target" else task.nuanced_attributes

    def static_value(self, view: RunView, task: TaskConfig, kind: str) -> Mapping[str, Any] | None:
        return _static_map(self._spec(task, kind))

    def seeds(self, view: RunView, task: TaskConfig, kind: str) -> list[Mapping[str, Any]]:
        seed = task.target_attributes_seed if kind == "target" else task.nuanced_attributes_seed
        return [_static_map(seed) or {}] if seed else []

    def request(self, view: RunView, task: TaskConfig, kind: str, teacher: ModelConfig) -> tuple[GenerateRequest, Callable[[Any], Any]]:
        seed = task.target_attributes_seed if kind == "target" else task.nuanced_attributes_seed
        template = "map_target_attrs" if kind == "target" else "map_nuanced_attrs"
        variables = {**_task_vars(task), "seed_attributes": _seed_text(seed)}
        if kind == "nuanced":
            target = view.target_attributes(task)
            variables["target_attributes"] = _json(target) if target else "(not decided yet)"
        prompt = render_prompt(template, variables, prompt_library=task.prompt_library, model_name=teacher.name)
        req = GenerateRequest(
            prompt=prompt,
            params=teacher.params_for("teacher"),
            role="teacher",
            json_schema=ATTRIBUTES_SCHEMA,
            schema_name="target_attributes" if kind == "target" else "nuanced_attributes",
        )
        return req, lambda result: _snake(parse_attribute_map(result.text))

    def merge(self, parts: list[Mapping[str, Any]]) -> dict[str, Any]:
        return merge_attribute_maps(parts)


def normalize_static_rubric(rubric: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, spec in rubric.items():
        if isinstance(spec, Mapping):
            out[str(name)] = dict(spec)
        else:
            out[str(name)] = str(spec)
    return out


class RubricMappingPhase(_TeacherMappingPhase):
    """Phase 2: ``{task}.rubric.json``."""

    name = RUBRIC_MAPPING
    after: tuple[str, ...] = (ATTRIBUTE_MAPPING,)
    title = TITLES[RUBRIC_MAPPING]
    short = SHORT_TITLES[RUBRIC_MAPPING]

    def plan(self, view: RunView) -> PlannedCalls:
        return plan_rubric_mapping(view, self.name)

    def artifacts(self, view: RunView, task: TaskConfig) -> list[tuple[str, Path]]:
        return [("rubric", view.run.rubric_path(task.name))]

    def static_value(self, view: RunView, task: TaskConfig, kind: str) -> Mapping[str, Any] | None:
        return normalize_static_rubric(task.rubric) if isinstance(task.rubric, Mapping) else None

    def _inherited(self, view: RunView, task: TaskConfig) -> dict[str, Any] | None:
        source = getattr(view, "source_run", None)
        if source is None:
            return None
        data = view.read_json(source.rubric_path(task.name))
        return data if isinstance(data, dict) else None

    def seeds(self, view: RunView, task: TaskConfig, kind: str) -> list[Mapping[str, Any]]:
        if task.rubric == "extend":
            inherited = self._inherited(view, task)
            if inherited is None:
                raise PhaseRefusedError(
                    f"task {task.name!r}: rubric: extend needs the rubric of the run named in resume_from, "
                    "and that run has no phase2_rubric/" + f"{task.name}.rubric.json"
                )
            return [inherited]
        return []

    def request(self, view: RunView, task: TaskConfig, kind: str, teacher: ModelConfig) -> tuple[GenerateRequest, Callable[[Any], Any]]:
        target = view.target_attributes(task)
        existing = self._inherited(view, task) if task.rubric == "extend" else None
        variables = {
            **_task_vars(task),
            "target_attributes": _json(target) if target else "(none)",
            "existing_rubric": _json(existing) if existing else "(none)",
        }
        prompt = render_prompt("autorubric", variables, prompt_library=task.prompt_library, model_name=teacher.name)
        req = GenerateRequest(
            prompt=prompt,
            params=teacher.params_for("teacher"),
            role="teacher",
            json_schema=RUBRIC_SCHEMA,
            schema_name="rubric",
        )
        return req, lambda result: _snake(parse_rubric(result.text))

    def merge(self, parts: list[Mapping[str, Any]]) -> dict[str, Any]:
        return merge_rubrics(parts)
