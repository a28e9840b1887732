"""``coeval run --dry-run`` on every example config: right call counts, no call, no file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval.interfaces.base import Interface
from coeval.planning import format_plan, plan_experiment
from coeval.plugins.config_loading import load_config

ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "docs" / "examples"

#: example -> calls of phases 1..5 (the seed formula, worked by hand)
EXPECTED: dict[str, tuple[int, int, int, int, int]] = {
    # 1 model in all roles, 20 items, static attributes and rubric
    "minimal": (0, 0, 20, 20, 20),
    "first-run": (0, 0, 10, 10, 10),
    # phases 1-3 Keep on a forked run: reused; 4-5 Extend: up to 1 x 10 each
    "resume": (0, 0, 0, 10, 10),
    # new student only: 1 student x 10 items, 1 judge x 10 responses
    "add-student": (0, 0, 0, 10, 10),
    # label attribute scored without a judge; 2 judged factors, single mode
    "sentiment-label": (0, 0, 20, 20, 20),
    # rubric auto: 1 teacher x 1 task in phase 2; 2 students x 40; 2 judges x 80
    "code-review-batch": (0, 1, 40, 80, 160),
    # benchmark teacher: no calls, but its 30 items per task are answered and judged
    "education-benchmark": (0, 1, 60, 240, 480),
    # per_factor: 2 judges x 100 responses x 5 factors
    "customer-support-per-factor": (0, 0, 50, 100, 1000),
    "sql-openrouter-auto": (0, 0, 30, 120, 120),
    # the seed's medium shape: 5 models in all roles, 4 tasks, 20 items
    "medium-benchmark": (0, 0, 400, 2000, 10000),
}


@pytest.fixture
def no_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if anything builds a model interface or imports the runner."""

    def refuse(self: Interface, *args: object, **kwargs: object) -> None:
        raise AssertionError(f"dry run built an interface for {args!r}")

    monkeypatch.setattr(Interface, "__init__", refuse)
    import sys

    monkeypatch.setitem(sys.modules, "coeval.run.runner", None)  # importing it would raise


def snapshot(folder: Path) -> dict[str, float]:
    return {str(p.relative_to(folder)): p.stat().st_mtime for p in folder.rglob("*")}


def test_every_example_has_an_expectation() -> None:
    assert {p.stem for p in EXAMPLES.glob("*.yaml")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_dry_run_counts_no_call_no_file(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_calls: None
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(EXAMPLES / f"{name}.yaml", work / "config.yaml")
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("COEVAL_KEYS_FILE", raising=False)
    before = snapshot(work)

    result = CliRunner().invoke(cli, ["run", "--config", "config.yaml", "--dry-run"])

    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert snapshot(work) == before, "a dry run wrote files"
    expected = EXPECTED[name]
    assert f"{sum(expected):,}" in result.stdout
    assert "no call made, no file written" in result.stdout

    config = load_config(work / "config.yaml", check_filesystem=False, environment_as_warnings=True)
    plan = plan_experiment(config)
    assert tuple(p.calls for p in plan.phases) == expected
    assert plan.total_calls == sum(expected)


def test_medium_shape_matches_the_documented_numbers() -> None:
    plan = plan_experiment(load_config(EXAMPLES / "medium-benchmark.yaml", check_filesystem=False))
    assert plan.calls("data_generation") == 400
    assert plan.calls("response_collection") == 2_000
    assert plan.calls("evaluation") == 10_000
    assert plan.total_calls == 12_400
    text = format_plan(plan)
    for number in ("400", "2,000", "10,000", "12,400"):
        assert number in text
    # every model holds all three roles: 20 x 4 generation + 400 answers + 2,000 judgements
    assert {m.name: m.total for m in plan.models} == dict.fromkeys([m.name for m in plan.models], 2_480)


def test_plan_shows_models_roles_interfaces_sampling_and_modes() -> None:
    plan = plan_experiment(load_config(EXAMPLES / "code-review-batch.yaml", check_filesystem=False))
    text = format_plan(plan)
    assert "claude-3-5-haiku" in text and "anthropic" in text and "student, judge" in text
    assert "1-2" in text  # sampling.target of code_review
    assert "set in phase 2" in text  # rubric: auto
    assert "New" in text
    haiku = next(m for m in plan.models if m.name == "claude-3-5-haiku")
    assert haiku.batch == ("response_collection", "evaluation")
    gpt4o = next(m for m in plan.models if m.name == "gpt-4o")
    assert gpt4o.max_calls == 1000
    assert gpt4o.calls["rubric_mapping"] == 1 and gpt4o.calls["data_generation"] == 40


def test_mock_smoke_plan(no_calls: None) -> None:
    config = load_config(ROOT / "examples" / "mock_smoke.yaml", check_filesystem=False)
    plan = plan_experiment(config)
    assert plan.calls_by_phase == {
        "attribute_mapping": 0,
        "rubric_mapping": 0,
        "data_generation": 10,
        "response_collection": 20,
        "evaluation": 40,
    }


def test_auto_interface_choice_is_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a routing plugin, the plan reads ``auto -> <provider>``."""
    from coeval.config.model import ModelConfig
    from coeval.contract.hookspecs import hookimpl
    from coeval.plugins.manager import get_plugin_manager

    class Router:
        @hookimpl
        def resolve_auto_interface(self, model: ModelConfig, has_credentials: object) -> str | None:
            assert isinstance(model, ModelConfig) and model.interface == "auto"  # the typed record, as every hook
            return "deepseek" if model.parameters["model"].startswith("deepseek/") else None

    pm = get_plugin_manager()
    pm.register(Router(), name="test-router")
    try:
        config = load_config(EXAMPLES / "sql-openrouter-auto.yaml", check_filesystem=False)
    finally:
        pm.unregister(name="test-router")
    model = config.model("deepseek-v3")
    assert (model.interface, model.requested_interface) == ("deepseek", "auto")
    assert "auto -> deepseek" in format_plan(plan_experiment(config))


def test_auto_routes_with_the_installed_providers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """coeval-providers routes auto to the cheapest provider that has a key."""
    keys = tmp_path / "keys.yaml"
    keys.write_text("providers:\n  deepseek: sk-test-deepseek-key\n", encoding="utf-8")
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("OPENROUTER_API_KEY", "DEEPSEEK_API_KEY", "DEEPINFRA_API_KEY", "AWS_BEARER_TOKEN_BEDROCK"):
        monkeypatch.delenv(var, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(EXAMPLES / "sql-openrouter-auto.yaml", work / "config.yaml")
    monkeypatch.chdir(work)
    result = CliRunner().invoke(cli, ["run", "--config", "config.yaml", "--dry-run", "--keys", str(keys)])
    assert result.exit_code == 0, result.output
    assert "auto -> deepseek" in result.stdout
    assert "sk-test-deepseek-key" not in result.output
