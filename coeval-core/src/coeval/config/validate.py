"""Config validation: rules V-01..V-17 of the seed documentation plus our own V-18 onward.

Validation runs on the raw mapping read from YAML, before anything is structured, and
collects *every* problem so a user fixes their file in one pass. The shape rules (types,
allowed values, unknown keys) come from the shipped JSON Schema (see ``_schema_check``);
this module adds the rules a schema cannot express: uniqueness, references between
sections, the roles the phases need, and the state of the disk.

Rules (docs/configuration.md has the full table):

=====  =====================================================================================
V-00   the file exists, is YAML, holds one mapping and no key twice in a mapping
V-01   ``models`` and ``tasks`` present and non-empty
V-02   model names unique                      V-03  task names unique
V-04   names: letters, digits, ``-``, ``_``, ``.``; no ``__``
V-05   every model has >= 1 role among teacher, student, judge
V-06   interface known (or ``auto``)           V-07  a teacher, a student, and a judge when
                                                     some factor needs one
V-08   mode ``Model`` not for phases 1-2       V-09  ``rubric: extend`` needs ``resume_from``
V-10   ``resume_from`` exists on disk          V-11  a new run's folder must not exist
V-12   ``generation_retries`` integer >= 0     V-13  batch: batchable interfaces, valid phases
V-14   ``--continue``: folder and meta.json exist, same experiment id
V-15   ``probe_mode``                          V-16  ``probe_on_fail``
V-17   ``label_attributes`` are target attribute names
V-18   unknown key (with a did-you-mean)       V-19  required key missing
V-20   wrong type or value elsewhere           V-21  phase names and modes
V-22   ``evaluation_mode``                     V-23  sampling shapes and ranges
V-24   ``log_level``                           V-25  quota shape and model names
V-26   batch values and ``batch_enabled``      V-27  ``parameters.model`` where needed
V-28   prompt_library ids, models, variables   V-29  metric factors name known metrics
V-30   ``label_attributes`` shape              V-31  ``budget_usd`` >= 0
V-32   ``seed`` integer                        V-33  ``role_parameters`` roles
V-34   attribute maps and rubric shapes        V-35  ``interface: auto`` resolves
V-36   ``--only-models`` names configured models
V-37   model names differ from phase-5 evaluator names (``label``, ``metric``, ``gold``, ...)
V-38   ``experiment.item_checks`` names registered item checks
V-45   ``parameters`` keys the interface understands  V-46  timeouts in (0, 24 h]
V-47   a rubric factor's ``evaluator:`` names a registered evaluator
V-55   ``parameters.cluster`` keys and values, and Ray installed (config/cluster_block.py)
V-60   a check factor's ``params`` (contains, regex, json_schema, python...) work
V-61   a task's ``data`` can be read: file or dataset, its columns, its rows
=====  =====================================================================================
"""

from __future__ import annotations

import collections
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from coeval.config._schema_check import did_you_mean, schema_issues
from coeval.config._yaml import LineMap
from coeval.config.check_rules import check_factor_params
from coeval.config.data_rules import check_task_data, every_task_has_data
from coeval.config.cluster_block import check_cluster_blocks
from coeval.config.errors import Severity, ValidationIssue, format_path
from coeval.config.model import PHASE_IDS, ROLES
from coeval.config.names import close_name
from coeval.config.parameter_keys import TIMEOUT_KEYS, bad_timeout, known_keys
from coeval.interfaces.known import AUTO_INTERFACE, SHIPPED_INTERFACES
from coeval.interfaces.mock import parameter_problem as mock_parameter_problem
from coeval.prompts import TEMPLATE_VARIABLES, template_fields
from coeval.storage.run_folder import PHASE_DIRS

if TYPE_CHECKING:
    from coeval.contract.types import InterfaceFacts

__all__ = [
    "ALL_RULES",
    "ENVIRONMENT_RULES",
    "disk_issues",
    "KNOWN_METRICS",
    "Validator",
    "judged_factors",
    "resolve_run_reference",
    "run_folder_path",
]

#: Every rule id a validation issue can carry.
ALL_RULES = tuple(f"V-{n:02d}" for n in range(37))

#: Rules that depend on the disk, the credentials or the installed plugins rather than on
#: the file itself. ``coeval run --dry-run`` reports them as warnings so a plan prints anywhere.
ENVIRONMENT_RULES = frozenset({"V-10", "V-11", "V-14", "V-35"})

#: Metrics a rubric factor may name even when the distribution providing them
#: (coeval-analysis) is not installed; installed plugins may register more.
KNOWN_METRICS = ("bleu", "bertscore", "exact_match")
#: Evaluators whose records use their name as ``judge_model_id``; a model may not take one.
KNOWN_EVALUATORS = ("label", "metric", "gold", "llm_judge")

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
    that name another evaluator (``{evaluator: pairwise}``) are scored without the judge. None when the rubric is not static (``auto`` / ``extend``): its factors
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
        if not (isinstance(spec, Mapping) and (spec.get("metric") or spec.get("evaluator") not in (None, "llm_judge")))
        and name not in labels
    ]


def _items(section: Any) -> list[tuple[int, dict[str, Any]]]:
    if not isinstance(section, list):
        return []
    return [(i, item) for i, item in enumerate(section) if isinstance(item, dict)]


def _roles(model: Mapping[str, Any]) -> list[str]:
    roles = model.get("roles")
    return [r for r in roles if isinstance(r, str)] if isinstance(roles, list) else []


@attrs.define
class Validator:
    """Applies every rule to one raw config and collects the issues."""

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
    evaluators: Iterable[str] = KNOWN_EVALUATORS
    item_checks: Iterable[str] | None = None  # registered item-check rule ids (None: not checked)
    #: registered phase id -> the modes it accepts (None: the five standard phases only)
    phases: Mapping[str, Sequence[str]] | None = None
    issues: list[ValidationIssue] = attrs.field(factory=list)

    # ---- collecting ------------------------------------------------------------------------
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

    def run(self) -> list[ValidationIssue]:
        if not isinstance(self.raw, dict):
            got = "an empty file" if self.raw is None else f"a {type(self.raw).__name__}"
            self.add(
                "V-00",
                (),
                f"the config must be a mapping with models, tasks and experiment; got {got}",
                "start from docs/examples/minimal.yaml",
            )
            return self.issues
        for rule, path, message, fix in schema_issues(self.raw):
            self.add(rule, path, message, fix)
        for check in self._checks():
            check()
        return self.issues

    def _checks(self) -> list[Callable[[], None]]:
        checks = [
            self._unique_names,
            self._interfaces,
            self._roles_needed,
            self._phase_modes,
            self._rubric_extend,
            self._batch,
            self._label_attributes,
            self._sampling_ranges,
            self._quota_models,
            self._model_parameter,
            self._prompt_library,
            self._metrics,
            self._factor_evaluators,
            lambda: check_factor_params(self),
            lambda: check_task_data(self),
            self._role_parameters,
            self._item_checks,
            self._parameter_keys,
            lambda: check_cluster_blocks(self),  # V-55, parameters.cluster (config/cluster_block.py)
        ]
        if self.check_filesystem:
            checks += [self._resume_source, self._run_folder]
        return checks

    # ---- views of the raw mapping ---------------------------------------------------------
    @property
    def models(self) -> list[tuple[int, dict[str, Any]]]:
        return _items(self.raw.get("models"))

    @property
    def tasks(self) -> list[tuple[int, dict[str, Any]]]:
        return _items(self.raw.get("tasks"))

    @property
    def experiment(self) -> dict[str, Any]:
        exp = self.raw.get("experiment")
        return exp if isinstance(exp, dict) else {}

    @property
    def model_names(self) -> list[str]:
        return [m["name"] for _, m in self.models if isinstance(m.get("name"), str)]

    def _known_interfaces(self) -> set[str]:
        return set(SHIPPED_INTERFACES) | set(self.interfaces)

    # ---- rules ------------------------------------------------------------------------------
    def _unique_names(self) -> None:
        for section, rule, what in (("models", "V-02", "model"), ("tasks", "V-03", "task")):
            first: dict[str, int] = {}
            for i, item in _items(self.raw.get(section)):
                name = item.get("name")
                if not isinstance(name, str):
                    continue
                if name in first:
                    self.add(
                        rule,
                        (section, i, "name"),
                        f"{what} name '{name}' is already used by {section}[{first[name]}]",
                        f"give each {what} a unique name (e.g. '{name}-2')",
                    )
                else:
                    first[name] = i
        reserved = set(self.evaluators)
        for i, model in self.models:
            name = model.get("name")
            if isinstance(name, str) and name in reserved:
                self.add(
                    "V-37",
                    ("models", i, "name"),
                    f"model name '{name}' is the name of a phase-5 evaluator, whose records would be "
                    "mixed up with this model's judgements",
                    f"rename the model (e.g. '{name}-model')",
                )

    def _interfaces(self) -> None:
        known = self._known_interfaces()
        for i, model in self.models:
            iface = model.get("interface")
            if not isinstance(iface, str) or not iface or iface == AUTO_INTERFACE or iface in known:
                continue
            self._add_unknown(
                "V-06", ("models", i, "interface"), f"unknown interface '{iface}'", iface, sorted(known | {AUTO_INTERFACE})
            )

    def _needs_judge(self) -> bool:
        for _, task in self.tasks:
            factors = judged_factors(task)
            if factors is None or factors:
                return True
        return False

    def _roles_needed(self) -> None:
        models = self.models
        if not models:
            return  # V-01 already reported
        held = {r for _, m in models for r in _roles(m)}
        needs = {
            "teacher": ("phases 1-3 need at least one teacher to write the evaluation set",
                        not every_task_has_data(self.tasks)),
            "student": ("phase 4 needs at least one student to answer it", True),
            "judge": ("phase 5 needs at least one judge to score the answers", self._needs_judge()),
        }
        for role, (why, required) in needs.items():
            if required and role not in held:
                self.add(
                    "V-07",
                    ("models",),
                    f"no model has the {role} role; {why}",
                    f"add {role} to the roles of a model, e.g. roles: [{role}]",
                )

    def _phase_modes(self) -> None:
        phases = self.experiment.get("phases")
        if not isinstance(phases, dict):
            return
        self._phase_ids_and_modes(phases)
        for phase in ("attribute_mapping", "rubric_mapping"):
            if phases.get(phase) == "Model":
                self.add(
                    "V-08",
                    ("experiment", "phases", phase),
                    f"mode Model is only valid for phases 3-5, not {phase}",
                    "use New, Keep or Extend for phases 1-2",
                )

    def _phase_ids_and_modes(self, phases: Mapping[str, Any]) -> None:
        """Plugin phases: the id is a registered phase, the mode one that phase accepts (the
        standard phases' modes are checked by the schema and V-08)."""
        registered = dict(self.phases or {})
        known = list(dict.fromkeys([*PHASE_IDS, *registered]))
        for phase, mode in phases.items():
            path = ("experiment", "phases", phase)
            if phase not in known:
                self._add_unknown("V-21", path, f"unknown phase '{phase}'", str(phase), known)
            elif phase not in PHASE_IDS and isinstance(mode, str) and mode not in registered[phase]:
                accepted = list(registered[phase])
                self._add_unknown(
                    "V-21", path, f"phase {phase} does not accept mode '{mode}' (it accepts "
                    f"{', '.join(accepted)})", mode, accepted,
                )

    def _rubric_extend(self) -> None:
        if self.experiment.get("resume_from"):
            return
        for i, task in self.tasks:
            if task.get("rubric") == "extend":
                self.add(
                    "V-09",
                    ("tasks", i, "rubric"),
                    "rubric: extend adds to the rubric of an earlier run, but experiment.resume_from is not set",
                    "set experiment.resume_from to the earlier run, or use rubric: auto",
                )

    def _batchable(self) -> list[str]:
        """Interfaces with a registered batch runner, whichever plugin provides them."""
        return sorted(name for name, facts in self.interfaces.items() if facts.batches)

    def _batch_unknowable(self, iface: str) -> bool:
        """A shipped interface whose distribution is not loaded here: its batch runner is
        unknown until it is (running such a model fails anyway, naming the distribution)."""
        return iface not in self.interfaces and iface in SHIPPED_INTERFACES

    def _batch_fix(self) -> str:
        batchable = self._batchable()
        return f"batch works with: {', '.join(batchable)}" if batchable else "no installed plugin registers a batch runner"

    def _batch(self) -> None:
        batch = self.experiment.get("batch")
        batchable = self._batchable()
        if isinstance(batch, dict):
            for iface in batch:
                if iface in batchable or self._batch_unknowable(str(iface)):
                    continue
                if iface in self._known_interfaces():
                    message = f"interface '{iface}' has no batch API"
                    fix = f"remove '{iface}'; {self._batch_fix()}"
                    self.add("V-13", ("experiment", "batch", iface), message, fix)
                else:
                    self._add_unknown(
                        "V-13",
                        ("experiment", "batch", iface),
                        f"'{iface}' is not a batchable interface",
                        str(iface),
                        batchable,
                    )
        for i, model in self.models:
            iface = model.get("interface")
            if (
                model.get("batch_enabled") is True
                and isinstance(iface, str)
                and iface != AUTO_INTERFACE
                and iface not in batchable
                and not self._batch_unknowable(iface)
            ):
                self.add(
                    "V-26",
                    ("models", i, "batch_enabled"),
                    f"batch_enabled is true but interface '{iface}' has no batch API",
                    f"remove batch_enabled; {self._batch_fix()}",
                )

    def _label_attributes(self) -> None:
        for i, task in self.tasks:
            labels = task.get("label_attributes")
            target = task.get("target_attributes")
            if not isinstance(labels, list) or not isinstance(target, dict):
                continue
            for j, label in enumerate(labels):
                if isinstance(label, str) and label not in target:
                    guess = did_you_mean(label, [str(k) for k in target])
                    message = f"label attribute '{label}' is not one of the task's target_attributes ({', '.join(map(str, target))})"
                    fix = (
                        f"replace '{label}' with '{guess}'"
                        if guess
                        else f"add '{label}' to target_attributes or remove it here"
                    )
                    self.add("V-17", ("tasks", i, "label_attributes", j), message, fix)

    def _sampling_ranges(self) -> None:
        for i, task in self.tasks:
            sampling = task.get("sampling")
            if not isinstance(sampling, dict):
                continue
            for key, attrs_key in (("target", "target_attributes"), ("nuance", "nuanced_attributes")):
                value = sampling.get(key)
                if not (
                    isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value)
                ):
                    continue
                low, high = value
                if low > high:
                    self.add(
                        "V-23",
                        ("tasks", i, "sampling", key),
                        f"min {low} is greater than max {high}",
                        f"write it as [{high}, {low}]",
                    )
                    continue
                attributes = task.get(attrs_key, {} if key == "nuance" else None)
                if isinstance(attributes, dict) and low > len(attributes):
                    self.add(
                        "V-23",
                        ("tasks", i, "sampling", key),
                        f"asks for at least {low} {attrs_key} per item but the task defines {len(attributes)}",
                        f"lower the minimum to {len(attributes)} or add attributes",
                        severity="warning",
                    )

    def _quota_models(self) -> None:
        quota = self.experiment.get("quota")
        if not isinstance(quota, dict):
            return
        names = self.model_names
        for name in quota:
            if name not in names:
                message = f"quota names '{name}', which is not a model of this config"
                guess = close_name(str(name), names)  # model names share prefixes: only a typo is offered
                if guess:
                    self.add("V-25", ("experiment", "quota", name), f"{message} (did you mean '{guess}'?)",
                             f"replace '{name}' with '{guess}'")
                else:
                    self.add("V-25", ("experiment", "quota", name), message, f"use one of: {', '.join(names)}")

    def _requires_model(self, interface: str) -> bool:
        """What the registered interface declared; a shipped interface whose distribution is
        not loaded here is not checked (its declaration is unknown until it is)."""
        if interface == AUTO_INTERFACE:
            return True
        facts = self.interfaces.get(interface)
        return facts is not None and facts.requires_model

    def _model_parameter(self) -> None:
        for i, model in self.models:
            iface = model.get("interface")
            if not isinstance(iface, str) or not self._requires_model(iface):
                continue
            if iface != AUTO_INTERFACE and iface not in self._known_interfaces():
                continue  # V-06 reported it
            params = model.get("parameters")
            if isinstance(params, dict) and params.get("model"):
                continue
            if params is not None and not isinstance(params, dict):
                continue  # the schema reported the shape
            what = "to pick a provider for" if iface == AUTO_INTERFACE else "to call on"
            self.add(
                "V-27",
                ("models", i, "parameters", "model"),
                f"interface '{iface}' needs parameters.model: the provider's model id {what}",
                "add  parameters: {model: <provider model id>}  to this model",
            )

    def _prompt_library(self) -> None:
        names = self.model_names
        for i, task in self.tasks:
            library = task.get("prompt_library")
            if not isinstance(library, dict):
                continue
            for key, text in library.items():
                path = ("tasks", i, "prompt_library", key)
                template_id, _, model = str(key).partition(".")
                if template_id not in TEMPLATE_VARIABLES:
                    guess = did_you_mean(template_id, TEMPLATE_VARIABLES)
                    self.add(
                        "V-28",
                        path,
                        f"unknown template id '{template_id}'"
                        + (f" (did you mean '{guess}'?)" if guess else ""),
                        f"use one of: {', '.join(TEMPLATE_VARIABLES)}, optionally followed by .<model name>",
                    )
                    continue
                if model and model not in names:
                    guess = did_you_mean(model, names)
                    self.add(
                        "V-28",
                        path,
                        f"override for model '{model}', which is not a model of this config"
                        + (f" (did you mean '{guess}'?)" if guess else ""),
                        f"write it as {template_id}.<model name> with one of: {', '.join(names)}",
                    )
                if isinstance(text, str):
                    self._template_variables(path, template_id, text)

    def _template_variables(self, path: Path_, template_id: str, text: str) -> None:
        allowed = TEMPLATE_VARIABLES[template_id]
        for name in template_fields(text):
            if name in allowed:
                continue
            guess = did_you_mean(name, allowed)
            self.add(
                "V-28",
                path,
                f"template uses unknown variable {{{name}}}"
                + (f" (did you mean {{{guess}}}?)" if guess else ""),
                f"{template_id} may use {', '.join('{' + v + '}' for v in sorted(allowed))}; "
                "write {{ and }} for literal braces",
            )

    def _item_checks(self) -> None:
        experiment = self.raw.get("experiment")
        settings = experiment.get("item_checks") if isinstance(experiment, dict) else None
        if self.item_checks is None or not isinstance(settings, dict):
            return
        known = sorted(self.item_checks)
        for rule in settings:
            if str(rule) not in known:
                self._add_unknown("V-38", ("experiment", "item_checks", rule), f"unknown item check '{rule}'",
                                  str(rule), known)

    def _metrics(self) -> None:
        known = sorted(set(KNOWN_METRICS) | set(self.metrics))
        for i, task in self.tasks:
            rubric = task.get("rubric")
            if not isinstance(rubric, dict):
                continue
            for factor, spec in rubric.items():
                if not isinstance(spec, dict) or not isinstance(spec.get("metric"), str):
                    continue
                metric = spec["metric"]
                if metric in known:
                    continue
                guess = did_you_mean(metric, known)
                self.add(
                    "V-29",
                    ("tasks", i, "rubric", factor, "metric"),
                    f"unknown metric '{metric}'" + (f" (did you mean '{guess}'?)" if guess else ""),
                    f"use one of: {', '.join(known)}",
                )

    def _factor_evaluators(self) -> None:
        """V-47: ``{evaluator: NAME}`` in a rubric factor names an installed evaluator."""
        known = sorted(set(self.evaluators))
        for i, task in self.tasks:
            rubric = task.get("rubric")
            for factor, spec in rubric.items() if isinstance(rubric, dict) else ():
                name = spec.get("evaluator") if isinstance(spec, dict) else None
                if isinstance(name, str) and name not in known:
                    self._add_unknown("V-47", ("tasks", i, "rubric", factor, "evaluator"),
                                      f"unknown evaluator '{name}' (no installed plugin registers it)", name, known)

    def _parameter_keys(self) -> None:
        """V-45 unknown sampling keys (outside ``extra_body``), V-46 nonsense timeouts."""
        for i, model in self.models:
            params = model.get("parameters")
            if not isinstance(params, dict):
                continue
            for key in TIMEOUT_KEYS:
                why = bad_timeout(params[key]) if key in params else None
                if why:
                    self.add("V-46", ("models", i, "parameters", key), f"{key} {why}; got {params[key]!r}",
                             f"set {key} to a number of seconds, e.g. 300")
            if "self_hosted" in params and not isinstance(params["self_hosted"], bool):
                self.add("V-20", ("models", i, "parameters", "self_hosted"),
                         f"self_hosted must be true or false; got {params['self_hosted']!r}",
                         "true: limit calls by latency (a server that queues); false: by 429s only")
            if model.get("interface") == "mock":
                problem = mock_parameter_problem(params, str(model.get("name")))
                if problem:
                    self.add("V-20", ("models", i, "parameters"), problem,
                             "see the mock interface's parameters in docs/running.md")
            allowed = known_keys(str(model.get("interface")))
            if allowed is None:
                continue
            for key in params:
                if key not in allowed:
                    self._add_unknown("V-45", ("models", i, "parameters", key),
                                      f"interface '{model.get('interface')}' does not send parameter '{key}'; "
                                      "put server-specific fields under extra_body", str(key), sorted(allowed))

    def _role_parameters(self) -> None:
        for i, model in self.models:
            overrides = model.get("role_parameters")
            if not isinstance(overrides, dict):
                continue
            held = set(_roles(model))
            for role in overrides:
                if role in ROLES and role not in held:
                    self.add(
                        "V-33",
                        ("models", i, "role_parameters", role),
                        f"parameters for the {role} role, which this model does not have",
                        f"add {role} to roles, or remove role_parameters.{role}",
                        severity="warning",
                    )

    # ---- the disk ---------------------------------------------------------------------------
    def _resume_source(self) -> None:
        ref = self.experiment.get("resume_from")
        if not isinstance(ref, str) or not ref:
            return
        storage = str(self.experiment.get("storage_folder") or "./eval_runs")
        path = resolve_run_reference(storage, ref)
        if not path.is_dir():
            self.add(
                "V-10",
                ("experiment", "resume_from"),
                f"earlier run '{ref}' not found (looked for {Path(storage) / ref} and {Path(ref)})",
                "set resume_from to the id of a run under storage_folder, or to the path of its folder",
            )

    def _run_folder(self) -> None:
        exp = self.experiment
        if not isinstance(exp.get("id"), str) or not exp.get("id"):
            return
        folder = run_folder_path(exp)
        if self.continue_run:
            meta = folder / "meta.json"
            if not meta.is_file():
                what = "does not exist" if not folder.exists() else "has no meta.json"
                self.add(
                    "V-14",
                    ("experiment", "id"),
                    f"--continue needs an existing run, but {folder} {what}",
                    f"run `coeval repair --run {folder}` (it rebuilds meta.json from the records), then --continue"
                    if _holds_a_run(folder) else
                    "run without --continue to start the experiment, or fix experiment.id / storage_folder",
                )
                return
            try:
                recorded = json.loads(meta.read_text(encoding="utf-8")).get("experiment_id")
            except (OSError, ValueError, AttributeError):
                self.add(
                    "V-14",
                    ("experiment", "id"),
                    f"{meta} cannot be read as JSON",
                    f"run `coeval repair --run {folder}`",
                )
                return
            if recorded and recorded != exp["id"]:
                self.add(
                    "V-14",
                    ("experiment", "id"),
                    f"{meta} belongs to experiment '{recorded}', not '{exp['id']}'",
                    "use the config of that run, or point storage_folder/id at the right folder",
                )
        elif not self.allow_existing_run and _holds_a_run(folder):
            self.add(
                "V-11",
                ("experiment", "id"),
                f"run folder {folder} already exists; a new run would mix its records with the old ones",
                "pass --continue to resume it, choose a new experiment.id, or delete the folder"
                if (folder / "meta.json").exists() else
                f"its meta.json is missing: run `coeval repair --run {folder}` to rebuild it, then --continue",
            )


def disk_issues(
    experiment: Mapping[str, Any], *, continue_run: bool, allow_existing_run: bool = False
) -> list[ValidationIssue]:
    """V-10, V-11 and V-14, the rules about the disk: ``resume_from`` exists, a new run's
    folder holds no run, a continued one is this experiment's. Loading a config checks them;
    the runner asks again just before it writes, since the disk may have changed since."""
    validator = Validator({"experiment": dict(experiment)}, continue_run=continue_run,
                          allow_existing_run=allow_existing_run)
    validator._resume_source()
    validator._run_folder()
    return validator.issues


def _holds_a_run(folder: Path) -> bool:
    """Whether a new run in ``folder`` would mix its records with an earlier one: the folder
    has a ``meta.json`` or phase files. A folder with only a cost estimate (``--estimate-only``)
    or the log of a start-up that died before writing anything is not a run yet."""
    if not folder.exists():
        return False
    if not folder.is_dir() or (folder / "meta.json").exists():
        return True
    return any(any((folder / d).iterdir()) for d in PHASE_DIRS.values() if (folder / d).is_dir())


def count_rules(issues: Iterable[ValidationIssue]) -> dict[str, int]:
    """Issues per rule id (handy in tests and summaries)."""
    return dict(collections.Counter(i.rule for i in issues))
