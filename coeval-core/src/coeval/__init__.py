"""CoEval: benchmark language models with language models.

One import gives both faces of the package (see docs/python-api.md and docs/plugins.md)::

    import coeval
    config = coeval.load_config("experiment.yaml")     # raises ConfigError (all problems at once)
    plan = coeval.plan_experiment(config)               # call counts per phase, no calls
    result = coeval.run_experiment(config)              # runs the five phases

and the whole plugin contract, as a plugin author uses it::

    @coeval.hookimpl
    def register_interfaces(register: coeval.RegisterInterface) -> None:
        register("acme", AcmeInterface)

Names are loaded on first use, so ``import coeval`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from coeval.config.credentials import Credentials, redact
    from coeval.config.errors import ConfigError, ValidationIssue
    from coeval.config.model import Config, ModelConfig, TaskConfig
    from coeval.contract.evaluation import (
        EvaluationCall,
        EvaluationFailed,
        EvaluationRequest,
        EvaluationResult,
        Evaluator,
        Scorer,
        Scoring,
        SubmitCalls,
    )
    from coeval.contract.hookspecs import hookimpl, hookspec
    from coeval.contract.types import (
        BatchRunnerFactory,
        BenchmarkAdapter,
        InterfaceFactory,
        InterfaceFacts,
        ItemCheck,
        Metric,
        MetricFactory,
        RegisterBatchRunner,
        RegisterBenchmark,
        RegisterEvaluator,
        RegisterInterface,
        RegisterItemCheck,
        RegisterMetric,
        RegisterPhase,
        RegisterReport,
        RegisterRunEnd,
        RegisterTaskDataReader,
        ReportWriter,
        RunEndAction,
        TaskDataReader,
        TaskDataReaderFactory,
        TokenSeconds,
    )
    from coeval.evaluators.base import ModelFreeEvaluator
    from coeval.evaluators.routing import routed_factors
    from coeval.interfaces.base import (
        FatalModelError,
        GenerateRequest,
        GenerateResult,
        Interface,
        MalformedResponseError,
        ModelError,
        RateLimitError,
        TransientModelError,
        Usage,
    )
    from coeval.interfaces.batch import BatchJobStatus, BatchRunner
    from coeval.phases.base import Phase, PhaseContext, PhaseError, PlannedCalls, RunView, Survey
    from coeval.planning import plan_experiment
    from coeval.plugins.config_loading import load_config, validate_config
    from coeval.prompts.errors import OutputParseError
    from coeval.run.runner import run_experiment
    from coeval.scheduler.work import WorkOutcome
    from coeval.storage.records import load_phase_records, usable_response
    from coeval.storage.run_folder import RunFolder

#: public name -> the module that defines it
_LAZY: dict[str, str] = {
    "ConfigError": "coeval.config",
    "ValidationIssue": "coeval.config",
    "load_config": "coeval.plugins.config_loading",
    "validate_config": "coeval.plugins.config_loading",
    "plan_experiment": "coeval.planning",
    "run_experiment": "coeval.run.runner",
    "hookimpl": "coeval.contract.hookspecs",
    "hookspec": "coeval.contract.hookspecs",
    "BatchRunnerFactory": "coeval.contract.types",
    "BenchmarkAdapter": "coeval.contract.types",
    "InterfaceFacts": "coeval.contract.types",
    "InterfaceFactory": "coeval.contract.types",
    "ItemCheck": "coeval.contract.types",
    "Metric": "coeval.contract.types",
    "MetricFactory": "coeval.contract.types",
    "RegisterBatchRunner": "coeval.contract.types",
    "RegisterBenchmark": "coeval.contract.types",
    "RegisterEvaluator": "coeval.contract.types",
    "RegisterInterface": "coeval.contract.types",
    "RegisterItemCheck": "coeval.contract.types",
    "RegisterMetric": "coeval.contract.types",
    "RegisterPhase": "coeval.contract.types",
    "RegisterReport": "coeval.contract.types",
    "RegisterRunEnd": "coeval.contract.types",
    "RegisterTaskDataReader": "coeval.contract.types",
    "ReportWriter": "coeval.contract.types",
    "RunEndAction": "coeval.contract.types",
    "TaskDataReader": "coeval.contract.types",
    "TaskDataReaderFactory": "coeval.contract.types",
    "TokenSeconds": "coeval.contract.types",
    "EvaluationCall": "coeval.evaluators.base",
    "EvaluationFailed": "coeval.evaluators.base",
    "EvaluationRequest": "coeval.evaluators.base",
    "EvaluationResult": "coeval.evaluators.base",
    "Evaluator": "coeval.evaluators.base",
    "ModelFreeEvaluator": "coeval.evaluators.base",
    "Scorer": "coeval.evaluators.base",
    "Scoring": "coeval.evaluators.base",
    "SubmitCalls": "coeval.evaluators.base",
    "routed_factors": "coeval.evaluators.routing",
    "FatalModelError": "coeval.interfaces.base",
    "GenerateRequest": "coeval.interfaces.base",
    "GenerateResult": "coeval.interfaces.base",
    "Interface": "coeval.interfaces.base",
    "MalformedResponseError": "coeval.interfaces.base",
    "ModelError": "coeval.interfaces.base",
    "RateLimitError": "coeval.interfaces.base",
    "TransientModelError": "coeval.interfaces.base",
    "Usage": "coeval.interfaces.base",
    "BatchJobStatus": "coeval.scheduler.batching.base",
    "BatchRunner": "coeval.scheduler.batching.base",
    "Phase": "coeval.phases.base",
    "PhaseContext": "coeval.phases.base",
    "PhaseError": "coeval.phases.base",
    "PlannedCalls": "coeval.phases.base",
    "RunView": "coeval.phases.base",
    "Survey": "coeval.phases.base",
    "OutputParseError": "coeval.prompts.errors",
    "WorkOutcome": "coeval.scheduler.work",
    "Config": "coeval.config.model",
    "ModelConfig": "coeval.config.model",
    "TaskConfig": "coeval.config.model",
    "Credentials": "coeval.config.credentials",
    "redact": "coeval.config.credentials",
    "load_phase_records": "coeval.storage.records",
    "usable_response": "coeval.storage.records",
    "RunFolder": "coeval.storage.run_folder",
}


def __getattr__(name: str) -> Any:  # lazy so `import coeval` stays cheap
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'coeval' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "BatchJobStatus",
    "BatchRunner",
    "BatchRunnerFactory",
    "BenchmarkAdapter",
    "Config",
    "ConfigError",
    "Credentials",
    "EvaluationCall",
    "EvaluationFailed",
    "EvaluationRequest",
    "EvaluationResult",
    "Evaluator",
    "FatalModelError",
    "GenerateRequest",
    "GenerateResult",
    "Interface",
    "InterfaceFactory",
    "InterfaceFacts",
    "ItemCheck",
    "MalformedResponseError",
    "Metric",
    "MetricFactory",
    "ModelConfig",
    "ModelError",
    "ModelFreeEvaluator",
    "OutputParseError",
    "Phase",
    "PhaseContext",
    "PhaseError",
    "PlannedCalls",
    "RateLimitError",
    "RegisterBatchRunner",
    "RegisterBenchmark",
    "RegisterEvaluator",
    "RegisterInterface",
    "RegisterItemCheck",
    "RegisterMetric",
    "RegisterPhase",
    "RegisterReport",
    "RegisterRunEnd",
    "RegisterTaskDataReader",
    "ReportWriter",
    "RunEndAction",
    "RunFolder",
    "RunView",
    "Scorer",
    "Scoring",
    "SubmitCalls",
    "Survey",
    "TaskConfig",
    "TaskDataReader",
    "TaskDataReaderFactory",
    "TokenSeconds",
    "TransientModelError",
    "Usage",
    "ValidationIssue",
    "WorkOutcome",
    "hookimpl",
    "hookspec",
    "load_config",
    "load_phase_records",
    "plan_experiment",
    "redact",
    "routed_factors",
    "run_experiment",
    "usable_response",
    "validate_config",
]
