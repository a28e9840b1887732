"""What every validation rule works on: the raw config, what the plugins registered, and
the issues found so far (:class:`RuleContext`), with the helpers the rules share.

The rules themselves are grouped by concern in ``model_rules``, ``experiment_rules``,
``task_rules`` and ``disk_rules``; :class:`coeval.config.validate.Validator` composes them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from coeval.config._schema_check import did_you_mean
from coeval.config._yaml import LineMap
from coeval.config.errors import Severity, ValidationIssue, format_path
from coeval.shipped_interfaces import SHIPPED_INTERFACES

if TYPE_CHECKING:
    from coeval.config.data_readers import TaskDataReaderFactory
    from coeval.config.interface_facts import InterfaceFacts

__all__ = ["ALL_RULES", "ENVIRONMENT_RULES", "KNOWN_METRICS", "Path_", "RuleContext", "judged_factors", "model_roles", "resolve_run_reference", "run_folder_path", "section_items"]


#: Every rule id a validation issue can carry.
ALL_RULES = tuple(f"V-{n:02d}" for n in range(37))


#: Rules that depend on the disk, the credentials or the installed plugins rather than on
#: the file itself. ``coeval run --dry-run`` reports them as warnings so a plan prints anywhere.
ENVIRONMENT_RULES = frozenset({"V-10", "V-11", "V-14", "V-35"})


#: Metrics a rubric factor may name even when the distribution providing them
#: (coeval-analysis) is not installed; installed plugins may register more.
KNOWN_METRICS = ("bleu", "bertscore", "exact_match")


Path_ = tuple[str | int, ...]


def run_folder_path(experiment: Mapping[str, Any]) -> Path:
    """``storage_folder/id`` of a raw or structured experiment section."""
    storage = experiment.get("storage_folder") or "./eval_runs"
    return Path(str(storage)).expanduser() / str(experiment.get("id", ""))


def resolve_run_reference(storage_folder: str, reference: str) -> Path:
    """Where ``resume_from`` points: an experiment id under ``storage_folder``, or a path.

    An id is tried first (the seed examples use ids); a reference that is not found there
    is taken as a path, relative to the current directory.
    """
    under_storage = Path(storage_folder).expanduser() / reference
    if under_storage.is_dir():
        return under_storage
    return Path(reference).expanduser()


def judged_factors(task: Mapping[str, Any] | Any) -> list[str] | None:
    """Rubric factors an LLM judge scores for a task (raw mapping or TaskConfig).

    Metric factors (``{metric: ...}``), factors named after a label attribute and factors
    that name another evaluator (``{evaluator: pairwise}``) are scored without the judge, and a
    weight-only entry (``pass@1: {weight: 2}``) weights a factor another evaluator scores. None when the rubric is not static (``auto`` / ``extend``): its factors
    are only known after phase 2.
    """
    rubric = task.get("rubric", "auto") if isinstance(task, Mapping) else task.rubric
    labels = task.get("label_attributes", ()) if isinstance(task, Mapping) else task.label_attributes
    if not isinstance(rubric, Mapping):
        return None
    labels = set(labels or ()) if isinstance(labels, list | tuple) else set()
    return [
        str(name)
        for name, spec in rubric.items()
        if not (isinstance(spec, Mapping) and (spec.get("metric") or spec.get("evaluator") not in (None, "llm_judge")
                                              or set(spec) == {"weight"}))
        and name not in labels
    ]


def section_items(section: Any) -> list[tuple[int, dict[str, Any]]]:
    if not isinstance(section, list):
        return []
    return [(i, item) for i, item in enumerate(section) if isinstance(item, dict)]


def model_roles(model: Mapping[str, Any]) -> list[str]:
    roles = model.get("roles")
    return [r for r in roles if isinstance(r, str)] if isinstance(roles, list) else []


@attrs.define
class RuleContext:
    """One raw config under validation: the state every rule reads and :meth:`add` writes."""

    raw: Any
    lines: LineMap = attrs.field(factory=LineMap)
    source: str | None = None
    continue_run: bool = False
    check_filesystem: bool = True
    allow_existing_run: bool = False
    environment_as_warnings: bool = False
    #: registered interface name -> what it declared (requires_model, virtual_teacher, batches...)
    interfaces: Mapping[str, InterfaceFacts] = attrs.field(factory=dict)
    metrics: Iterable[str] = ()
    #: registered evaluator names: a rubric factor may route to one (V-47), and a model may not
    #: take one, since evaluators write their name as the records' ``judge_model_id`` (V-37)
    evaluators: Iterable[str] = ()
    #: registered evaluator name -> its ``param_problem(params)``, for the evaluators that take
    #: ``params`` on a rubric factor (rule V-60)
    evaluator_params: Mapping[str, Callable[[Any], str | None]] = attrs.field(factory=dict)
    item_checks: Iterable[str] | None = None  # registered item-check rule ids (None: not checked)
    #: data source (``file``, ``dataset``) -> the factory of the reader a plugin registered (V-61)
    task_data_readers: Mapping[str, TaskDataReaderFactory] = attrs.field(factory=dict)
    #: registered phase id -> the modes it accepts (None: the five standard phases only)
    phases: Mapping[str, Sequence[str]] | None = None
    issues: list[ValidationIssue] = attrs.field(factory=list)

    def add(
        self, rule: str, path: Sequence[str | int], message: str, fix: str, severity: Severity = "error"
    ) -> None:
        if rule in ENVIRONMENT_RULES and self.environment_as_warnings:
            severity = "warning"
        self.issues.append(
            ValidationIssue(
                rule=rule,
                path=format_path(path),
                message=message,
                fix=fix,
                line=self.lines.line(path),
                source=self.source,
                severity=severity,
            )
        )

    def _add_unknown(self, rule: str, path: Path_, message: str, word: str, choices: Sequence[str]) -> None:
        """A name that is not one of ``choices``: the message and the fix offer the closest
        choice, or the fix lists them all."""
        guess = did_you_mean(word, choices)
        if guess:
            self.add(rule, path, f"{message} (did you mean '{guess}'?)", f"replace '{word}' with '{guess}'")
        else:
            self.add(rule, path, message, f"use one of: {', '.join(choices)}")

    @property
    def models(self) -> list[tuple[int, dict[str, Any]]]:
        return section_items(self.raw.get("models"))

    @property
    def tasks(self) -> list[tuple[int, dict[str, Any]]]:
        return section_items(self.raw.get("tasks"))

    @property
    def experiment(self) -> dict[str, Any]:
        exp = self.raw.get("experiment")
        return exp if isinstance(exp, dict) else {}

    @property
    def model_names(self) -> list[str]:
        return [m["name"] for _, m in self.models if isinstance(m.get("name"), str)]

    def _known_interfaces(self) -> set[str]:
        return set(SHIPPED_INTERFACES) | set(self.interfaces)
