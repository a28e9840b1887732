"""The plugin contract as a third party meets it: facts declared at registration, registries
that validation and planning ask, one way to collect hooks, and ``import coeval``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import coeval
import pluggy
import pytest
from coeval import RegisterBatchRunner, RegisterInterface, RegisterReport, RegisterRunEnd, hookimpl
from coeval.config import ConfigError
from coeval.contract.errors import DuplicateRegistrationError
from coeval.interfaces.mock import MockInterface
from coeval.planning import batch_phases
from coeval.plugins.config_loading import load_config
from coeval.plugins.manager import collect, registries

REPO = Path(__file__).resolve().parents[2]
DISTRIBUTIONS = {
    "coeval-core": "coeval",
    "coeval-providers": "coeval_providers",
    "coeval-hf": "coeval_hf",
    "coeval-analysis": "coeval_analysis",
    "coeval-benchmarks": "coeval_benchmarks",
}


class _RecordedBatchRunner:
    """Stands for a batch runner: validation and planning only look the name up."""


class AcmePlugin:
    """A third party's interface with a batch runner, as a provider distribution ships one."""

    @hookimpl
    def register_interfaces(self, register: RegisterInterface) -> None:
        register("acme", MockInterface, requires_model=False)

    @hookimpl
    def register_batch_runners(self, register: RegisterBatchRunner) -> None:
        register("acme", _RecordedBatchRunner)  # type: ignore[arg-type]


def _config(tmp_path: Path, **experiment: Any) -> dict[str, Any]:
    return {
        "models": [{"name": "a", "interface": "acme", "roles": ["teacher", "student", "judge"]},
                   {"name": "m", "interface": "mock", "roles": ["student"]}],
        "tasks": [{"name": "t", "description": "Answer.", "output_description": "One sentence.",
                   "target_attributes": {"topic": ["x"]},
                   "sampling": {"target": [1, 1], "nuance": [0, 0], "total": 1}, "rubric": {"c": "Right."}}],
        "experiment": {"id": "e", "storage_folder": str(tmp_path / "runs"), **experiment},
    }


def test_a_plugins_batch_runner_is_enabled_from_the_config(tmp_path: Path, pm: pluggy.PluginManager) -> None:
    pm.register(AcmePlugin(), name="acme")
    config = load_config(_config(tmp_path, batch={"acme": {"response_collection": True}}))
    acme, mock = config.models
    assert batch_phases(config, acme) == ("response_collection",)
    assert batch_phases(config, mock) == ()
    assert registries().interface_facts("acme") == coeval.InterfaceFacts(
        name="acme", requires_model=False, virtual_teacher=False, batches=True)


def test_batch_for_an_interface_without_a_runner_names_the_ones_that_have_one(
    tmp_path: Path, pm: pluggy.PluginManager
) -> None:
    pm.register(AcmePlugin(), name="acme")
    with pytest.raises(ConfigError) as info:
        load_config(_config(tmp_path, batch={"mock": {"response_collection": True}}))
    (issue,) = info.value.issues
    assert (issue.rule, issue.path, issue.message) == ("V-13", "experiment.batch.mock", "interface 'mock' has no batch API")
    assert issue.fix.startswith("remove 'mock'; batch works with: acme, ")


def test_an_unknown_registration_option_is_a_type_error(pm: pluggy.PluginManager) -> None:
    class Careless:
        @hookimpl
        def register_interfaces(self, register: Any) -> None:
            register("careless", MockInterface, batch=True)  # batching is a batch runner, not an option

    pm.register(Careless(), name="careless")
    with pytest.raises(TypeError, match="batch"):
        registries()


class _Reports:
    def __init__(self, name: str) -> None:
        self.name = name

    @hookimpl
    def register_reports(self, register: RegisterReport) -> None:
        register("acme-summary", lambda analysis, out_dir: [], default=False)

    @hookimpl
    def register_run_end(self, register: RegisterRunEnd) -> None:
        register("acme-index", lambda folder: None)


@pytest.mark.parametrize("hook", ["register_reports", "register_run_end"])
def test_a_name_registered_twice_is_an_error_in_every_registry(pm: pluggy.PluginManager, hook: str) -> None:
    pm.register(_Reports("one"), name="one")
    pm.register(_Reports("two"), name="two")
    with pytest.raises(DuplicateRegistrationError, match="registered twice: by plugin 'one' and by plugin 'two'"):
        collect(hook)


def test_report_options_are_kept(pm: pluggy.PluginManager) -> None:
    pm.register(_Reports("one"), name="one")
    assert collect("register_reports").entry("acme-summary").options == {"default": False}


def test_import_coeval_gives_the_whole_contract() -> None:
    for name in coeval.__all__:
        assert getattr(coeval, name) is not None, name
    for name in ("hookimpl", "RegisterInterface", "RegisterBatchRunner", "RegisterPhase", "RegisterEvaluator",
                 "RegisterMetric", "RegisterItemCheck", "RegisterReport", "RegisterRunEnd", "Phase", "Evaluator",
                 "Interface", "Metric", "BatchRunner", "InterfaceFacts", "load_config", "run_experiment"):
        assert name in coeval.__all__, name
    assert isinstance(coeval.hookimpl, pluggy.HookimplMarker) and coeval.hookimpl.project_name == "coeval"


@pytest.mark.parametrize("distribution", sorted(DISTRIBUTIONS))
def test_every_distribution_ships_its_types(distribution: str) -> None:
    """py.typed sits in the package, which hatchling's ``packages`` ships whole."""
    package = DISTRIBUTIONS[distribution]
    assert (REPO / distribution / "src" / package / "py.typed").is_file()
    assert f'packages = ["src/{package}"]' in (REPO / distribution / "pyproject.toml").read_text()
