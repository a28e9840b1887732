"""The experiment configuration as typed, immutable attrs classes.

Raw YAML is validated first (JSON Schema, then rules V-01..), and only a valid mapping is
structured into these classes by :func:`coeval.config.loader.structure_config`, so code past
loading never sees a malformed value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

from coeval.config.task_data import TaskData
from coeval.phase_ids import STANDARD_PHASE_IDS

__all__ = [
    "PHASE_IDS",
    "PHASE_MODES",
    "ROLES",
    "AdaptiveConfig",
    "Config",
    "ExperimentConfig",
    "ModelConfig",
    "PhaseModes",
    "QuotaConfig",
    "SamplingConfig",
    "TaskConfig",
]

ROLES = ("teacher", "student", "judge")
PHASE_IDS = STANDARD_PHASE_IDS
PHASE_MODES = ("New", "Keep", "Extend", "Model")
Role = Literal["teacher", "student", "judge"]
PhaseMode = Literal["New", "Keep", "Extend", "Model"]


@attrs.frozen
class ModelConfig:
    name: str
    interface: str
    roles: tuple[str, ...] = ()
    parameters: Mapping[str, Any] = attrs.field(factory=dict)
    role_parameters: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    access_key: str | None = attrs.field(default=None, repr=False)
    batch_enabled: bool | None = None
    #: The interface as written in the config when it differs from ``interface`` (``"auto"``
    #: resolved at load time to a concrete provider); None when used as written.
    requested_interface: str | None = None
    #: Model family for conflict-of-interest checks in the analysis; None: inferred there.
    family: str | None = None

    def params_for(self, role: str) -> dict[str, Any]:
        """``parameters`` with this role's overrides merged on top (only given keys change)."""
        return {**self.parameters, **self.role_parameters.get(role, {})}

    def has_role(self, role: str) -> bool:
        return role in self.roles


@attrs.frozen
class SamplingConfig:
    """How phase 3 draws attributes for each datapoint.

    ``target`` is ``(min, max)`` values per item or ``"all"`` (cycle the cross-product);
    ``nuance`` is ``(min, max)``; ``total`` is datapoints per (task, teacher).
    """

    target: tuple[int, int] | Literal["all"] = (1, 1)
    nuance: tuple[int, int] = (0, 0)
    total: int = 10


@attrs.frozen
class TaskConfig:
    name: str
    description: str
    output_description: str = ""
    category: str | None = None
    target_attributes: Mapping[str, tuple[str, ...]] | str = "auto"  # dict | "auto" | "complete"
    nuanced_attributes: Mapping[str, tuple[str, ...]] | str = attrs.field(factory=dict)  # dict | "auto"
    target_attributes_seed: Mapping[str, tuple[str, ...]] | None = None
    nuanced_attributes_seed: Mapping[str, tuple[str, ...]] | None = None
    sampling: SamplingConfig = attrs.field(factory=SamplingConfig)
    store_nuanced: bool = False
    # factor -> criterion text, or factor -> {"description": ..., "metric": ...}; or "auto" | "extend"
    rubric: Mapping[str, Any] | str = "auto"
    evaluation_mode: Literal["single", "per_factor"] = "single"
    prompt_library: Mapping[str, str] = attrs.field(factory=dict)
    label_attributes: tuple[str, ...] = ()
    #: The task's own datapoints (a file or dataset); None: the teachers write them in phase 3.
    data: TaskData | None = None
    #: ``python_tests``: the answers' code is run against each datapoint's ``tests`` (pass@1).
    checker: Literal["python_tests"] | None = None
    #: Answers per (datapoint, student): with k > 1 every student answers each datapoint k
    #: times (pass@k for code); each answer is a response of its own.
    samples: int = 1

    @property
    def static_target_attributes(self) -> Mapping[str, tuple[str, ...]] | None:
        return self.target_attributes if isinstance(self.target_attributes, Mapping) else None

    @property
    def static_rubric(self) -> Mapping[str, Any] | None:
        return self.rubric if isinstance(self.rubric, Mapping) else None


@attrs.frozen
class QuotaConfig:
    max_calls: int | None = None


@attrs.frozen
class PhaseModes:
    """Mode per phase id: the five built-in phases, and in ``others`` the phases plugins
    registered (filled in by the loader, which knows them)."""

    attribute_mapping: PhaseMode = "New"
    rubric_mapping: PhaseMode = "New"
    data_generation: PhaseMode = "New"
    response_collection: PhaseMode = "New"
    evaluation: PhaseMode = "New"
    others: Mapping[str, str] = attrs.field(factory=dict)

    def mode(self, phase_id: str, default: str = "New") -> str:
        """The phase's mode; ``default`` for a plugin phase the config was loaded without."""
        if phase_id in PHASE_IDS:
            return str(getattr(self, phase_id))
        return str(self.others.get(phase_id, default))

    def has(self, phase_id: str) -> bool:
        return phase_id in PHASE_IDS or phase_id in self.others

    def as_dict(self) -> dict[str, str]:
        return {**{p: self.mode(p) for p in PHASE_IDS}, **self.others}


@attrs.frozen
class AdaptiveConfig:
    """``experiment.adaptive``: phase 5 in rounds that stop once the question is answered
    (docs/configuration.md). Off (None) unless the config or ``coeval run --adaptive`` asks."""

    #: stop judges that tell answers apart too little, after the calibration slice
    screen: bool = True
    #: share of the datapoints every judge grades first (at least ``MIN_CALIBRATION``)
    calibration: float = 0.3
    #: the question that ends the rounds: {top: k}, {separated: all, delta: d} or {width: w}
    stop_when: Mapping[str, Any] = attrs.field(factory=lambda: {"top": 1})
    #: looks at the judgments, the calibration slice's included; alpha is spent over them
    looks: int = 6
    #: a pair's interval misses its value at the look the rounds stop at most this often
    alpha: float = 0.05

    def as_dict(self) -> dict[str, Any]:
        return {"screen": self.screen, "calibration": self.calibration, "stop_when": dict(self.stop_when),
                "looks": self.looks, "alpha": self.alpha}


@attrs.frozen
class ExperimentConfig:
    id: str
    storage_folder: str = "./eval_runs"
    phases: PhaseModes = attrs.field(factory=PhaseModes)
    resume_from: str | None = None
    quota: Mapping[str, QuotaConfig] = attrs.field(factory=dict)
    budget_usd: float | None = None
    batch: Mapping[str, Mapping[str, bool]] = attrs.field(factory=dict)
    probe_mode: Literal["full", "resume", "disable"] = "full"
    probe_on_fail: Literal["abort", "warn"] = "abort"
    estimate_cost: bool = False
    estimate_samples: int = 2
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    generation_retries: int = 2
    #: Item-quality checks: rule id -> false, or {enabled, threshold...} (docs/item-quality.md).
    item_checks: Mapping[str, Any] = attrs.field(factory=dict)
    #: Seed of phase 3's attribute draws (and of the mock interface); same seed, same draws.
    seed: int = 0
    #: Adaptive evaluation (None: every judgment of the full grid is bought).
    adaptive: AdaptiveConfig | None = None


@attrs.frozen
class Config:
    models: tuple[ModelConfig, ...]
    tasks: tuple[TaskConfig, ...]
    experiment: ExperimentConfig
    #: Where the YAML came from (None when built in Python); errors and snapshots name it.
    source: str | None = attrs.field(default=None, eq=False)
    #: Problems that do not stop a run (:class:`coeval.config.ValidationIssue` with
    #: severity "warning"), for the CLI and the run log to show.
    warnings: tuple[Any, ...] = attrs.field(default=(), eq=False)
    #: ``--limit N``: datapoints answered per (task, teacher), every teacher (not in config.yaml).
    datapoint_limit: int | None = None

    def model(self, name: str) -> ModelConfig:
        for m in self.models:
            if m.name == name:
                return m
        raise KeyError(name)

    def task(self, name: str) -> TaskConfig:
        for t in self.tasks:
            if t.name == name:
                return t
        raise KeyError(name)

    def models_with_role(self, role: str) -> list[ModelConfig]:
        return [m for m in self.models if role in m.roles]

    @property
    def teachers(self) -> list[ModelConfig]:
        return self.models_with_role("teacher")

    @property
    def students(self) -> list[ModelConfig]:
        return self.models_with_role("student")

    @property
    def judges(self) -> list[ModelConfig]:
        return self.models_with_role("judge")
