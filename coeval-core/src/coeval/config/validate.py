"""Config validation: rules V-01..V-17 of the seed documentation plus our own V-18 onward.

:class:`Validator` composes the rules, grouped by concern: the models (``model_rules``), the
``experiment`` section (``experiment_rules``), what tasks name (``task_rules``), the disk
(``disk_rules``), the data, checks and cluster blocks (``data_rules``, ``check_rules``,
``cluster_block``); ``rule_context`` holds what they share.

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
V-60   a check factor's ``params`` (contains, regex, json_schema, python...) work, and those of an
       evaluator with ``param_problem`` (python_tests)
V-61   a task's ``data`` can be read: file or dataset, its columns, its rows
V-63   rubric ``weight``: >= 0, not 0 for every factor, a weight-only entry names a scored factor
V-64   ``experiment.adaptive``: ``stop_when`` asks an answerable question; screening's judges
=====  =====================================================================================
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from coeval.config._schema_check import schema_issues
from coeval.config.adaptive_rules import check_adaptive
from coeval.config.check_rules import check_factor_params, check_factor_weights
from coeval.config.cluster_block import check_cluster_blocks
from coeval.config.data_rules import check_task_data
from coeval.config.disk_rules import DiskRules
from coeval.config.errors import ValidationIssue
from coeval.config.evaluator_params import check_evaluator_params
from coeval.config.experiment_rules import ExperimentRules
from coeval.config.model_rules import ModelRules
from coeval.config.rule_context import (
    ALL_RULES,
    ENVIRONMENT_RULES,
    KNOWN_METRICS,
    judged_factors,
    resolve_run_reference,
    run_folder_path,
)
from coeval.config.task_rules import TaskRules

__all__ = [
    "ALL_RULES",
    "ENVIRONMENT_RULES",
    "KNOWN_METRICS",
    "Validator",
    "disk_issues",
    "judged_factors",
    "resolve_run_reference",
    "run_folder_path",
]


@attrs.define
class Validator(ModelRules, ExperimentRules, TaskRules, DiskRules):
    """Applies every rule to one raw config and collects the issues."""

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
            lambda: check_evaluator_params(self),
            lambda: check_factor_weights(self),
            lambda: check_task_data(self),
            self._role_parameters,
            self._item_checks,
            self._parameter_keys,
            lambda: check_cluster_blocks(self),  # V-55, parameters.cluster (config/cluster_block.py)
            lambda: check_adaptive(self),  # V-64, experiment.adaptive (config/adaptive_rules.py)
        ]
        if self.check_filesystem:
            checks += [self._resume_source, self._run_folder]
        return checks


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


def count_rules(issues: Iterable[ValidationIssue]) -> dict[str, int]:
    """Issues per rule id (handy in tests and summaries)."""
    return dict(collections.Counter(i.rule for i in issues))
