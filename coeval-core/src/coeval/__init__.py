"""CoEval: benchmark language models with language models.

Public API for embedding (see docs/python-api.md)::

    import coeval
    config = coeval.load_config("experiment.yaml")     # raises ConfigError (all problems at once)
    plan = coeval.plan_experiment(config)               # call counts per phase, no calls
    result = coeval.run_experiment(config)              # runs the five phases
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "load_config": "coeval.config",
    "ConfigError": "coeval.config",
    "ValidationIssue": "coeval.config",
    "validate_config": "coeval.config",
    "plan_experiment": "coeval.planning",
    "run_experiment": "coeval.runner",
}


def __getattr__(name: str) -> Any:  # lazy so `import coeval` stays cheap
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(name)
    return getattr(importlib.import_module(module), name)


__all__ = ["ConfigError", "ValidationIssue", "load_config", "plan_experiment", "run_experiment", "validate_config"]
