"""A phase registered by a plugin through pluggy: its modes in ``experiment.phases``, its
calls in ``plan_experiment`` and ``coeval plan``, its row in ``coeval status``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from coeval.authoring.describe import describe_html
from coeval.cli.main import cli
from coeval.cli.status_cmd import collect_status
from coeval.config import ConfigError
from coeval.contract.hookspecs import hookimpl
from coeval.interfaces.base import GenerateRequest
from coeval.phases.base import PhaseContext, RunView, Survey
from coeval.phases.run_selection import run_mode
from coeval.planning import format_plan, plan_experiment
from coeval.plugins.config_loading import load_config
from coeval.plugins.manager import PlannedCalls, Registries, get_plugin_manager, registries, reset_plugins
from coeval.scheduler.work import WorkItem, WorkOutcome

from .pipeline_support import folder, make_config, meta, mock_model, run, task

STANDARD = ["attribute_mapping", "rubric_mapping", "data_generation", "response_collection", "evaluation"]


class AnswerLengths:
    """Counts answer lengths after phase 5; plans two calls per (task, judge)."""

    name = "answer_lengths"
    after = ("evaluation",)
    modes = ("New", "Extend")
    title = "6 answer lengths"
    short = "6 lengths"

    def __init__(self) -> None:
        self.modes_seen: list[str] = []

    def plan(self, view: RunView) -> PlannedCalls:
        cells = {(t.name, j.name): 2 for t in view.config.tasks for j in view.config.judges}
        return PlannedCalls.from_cells(self.name, cells)

    def survey(self, view: RunView) -> Survey:
        s = Survey(self.name)
        counts = s.group("all")
        counts.expected = 1
        counts.ok = int((view.run.root / "answer_lengths.json").is_file())
        return s

    async def run(self, ctx: PhaseContext) -> None:
        self.modes_seen.append(ctx.mode)
        (ctx.run.root / "answer_lengths.json").write_text("{}", encoding="utf-8")


class Tally:
    """A phase with neither plan() nor a title: it is counted as 0 calls, with a note."""

    name = "tally"
    after = ("answer_lengths",)
    modes = ("New",)

    def survey(self, view: RunView) -> Survey:
        return Survey(self.name)

    async def run(self, ctx: PhaseContext) -> None:
        return None


class LengthsPlugin:
    def __init__(self) -> None:
        self.lengths = AnswerLengths()

    @hookimpl
    def register_phases(self, register: Any) -> None:
        register(self.lengths)
        register(Tally())


@pytest.fixture
def plugin() -> Iterator[LengthsPlugin]:
    """The plugin registered with the process's plugin manager, as an installed one is."""
    reset_plugins()
    installed = LengthsPlugin()
    get_plugin_manager().register(installed, name="lengths")
    yield installed
    reset_plugins()


@pytest.fixture
def regs(plugin: LengthsPlugin) -> Registries:
    return registries()


def _models() -> list[dict[str, Any]]:
    return [mock_model("a"), mock_model("b")]


def test_a_plugin_phase_is_planned_after_the_standard_ones(tmp_path: Path, regs: Registries) -> None:
    config = make_config(tmp_path, _models(), [task(total=3)])
    plan = plan_experiment(config, registries=regs)
    assert [p.phase for p in plan.phases] == [*STANDARD, "answer_lengths", "tally"]
    # the standard figures are those of the seed formula: 2 teachers x 3, 6 items x 2 students, 12 x 2 judges
    assert plan.calls_by_phase == {
        "attribute_mapping": 0, "rubric_mapping": 0, "data_generation": 6, "response_collection": 12,
        "evaluation": 24, "answer_lengths": 4, "tally": 0,
    }
    assert plan.total_calls == 46
    lengths = plan.phases[5]
    assert (lengths.mode, lengths.basis, lengths.label, lengths.short_label) == ("New", "full", "6 answer lengths",
                                                                                 "6 lengths")
    assert plan.phases[6].label == "tally"
    assert {m.name: m.calls["answer_lengths"] for m in plan.models} == {"a": 2, "b": 2}
    assert plan.tasks[0].calls["answer_lengths"] == 4
    assert plan.cells[("qa", "answer_lengths", "a")] == 2
    assert "phase tally: calls unknown (it has no plan()); counted as 0" in plan.notes
    text = format_plan(plan, width=200)
    assert "6 lengths" in text and "46" in text


def test_only_models_restricts_a_plugin_phase_too(tmp_path: Path, regs: Registries) -> None:
    config = make_config(tmp_path, _models(), [task(total=3)])
    plan = plan_experiment(config, only_models=["b"], registries=regs)
    assert plan.calls("answer_lengths") == 2
    assert plan.calls("data_generation") == 3


def test_the_plan_without_the_plugin_is_unchanged(tmp_path: Path) -> None:
    reset_plugins()
    config = make_config(tmp_path, _models(), [task(total=3)])
    plan = plan_experiment(config)
    assert [p.phase for p in plan.phases] == STANDARD
    assert plan.total_calls == 42


def test_coeval_plan_shows_the_plugin_phase(work: Path, plugin: LengthsPlugin) -> None:
    raw = {"models": _models(), "tasks": [task(total=3)], "experiment": {"id": "p", "storage_folder": "runs"}}
    Path("exp.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    printed = CliRunner().invoke(cli, ["plan", "--config", "exp.yaml", "--estimate-samples", "0", "--json"])
    assert printed.exit_code == 0, printed.output
    estimate = json.loads(printed.output)
    assert estimate["phases"]["answer_lengths"]["calls"] == 4
    assert estimate["total_calls"] == 46
    tables = CliRunner().invoke(cli, ["plan", "--config", "exp.yaml", "--estimate-samples", "0"])
    assert tables.exit_code == 0, tables.output
    assert "6 lengths" in tables.output


def test_plugin_phase_modes_are_validated(tmp_path: Path, regs: Registries) -> None:
    def load(**phases: str) -> Any:
        return make_config(tmp_path, _models(), phases=phases)

    assert load(answer_lengths="Extend").experiment.phases.mode("answer_lengths") == "Extend"
    assert load().experiment.phases.mode("answer_lengths") == "New"
    with pytest.raises(ConfigError) as refused:
        load(answer_lengths="Keep")
    (issue,) = refused.value.issues
    assert (issue.rule, issue.path) == ("V-21", "experiment.phases.answer_lengths")
    assert "phase answer_lengths does not accept mode 'Keep' (it accepts New, Extend)" in issue.message
    with pytest.raises(ConfigError) as misspelt:
        load(answer_length="New")
    (issue,) = misspelt.value.issues
    assert (issue.rule, issue.path) == ("V-21", "experiment.phases.answer_length")
    assert issue.message == "unknown phase 'answer_length' (did you mean 'answer_lengths'?)"
    assert issue.fix == "replace 'answer_length' with 'answer_lengths'"


def test_a_plugin_phase_defaults_to_extend_on_a_forked_run(tmp_path: Path, regs: Registries) -> None:
    raw = {"models": _models(), "tasks": [task()],
           "experiment": {"id": "fork", "storage_folder": str(tmp_path), "resume_from": "earlier"}}
    config = load_config(raw, check_filesystem=False, registries=regs)
    assert config.experiment.phases.mode("answer_lengths") == "Extend"
    assert config.experiment.phases.mode("evaluation") == "Extend"
    assert config.experiment.phases.mode("data_generation") == "Keep"


def test_an_unknown_phase_mode_exits_2_with_one_clear_line(work: Path, plugin: LengthsPlugin) -> None:
    raw = {"models": _models(), "tasks": [task()],
           "experiment": {"id": "p", "storage_folder": "runs", "phases": {"answer_lengths": "Model"}}}
    Path("exp.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    result = CliRunner().invoke(cli, ["run", "--config", "exp.yaml", "--dry-run"])
    assert result.exit_code == 2
    assert "V-21 experiment.phases.answer_lengths:" in result.output
    assert "Traceback" not in result.output


def test_the_run_and_status_include_the_plugin_phase(tmp_path: Path, plugin: LengthsPlugin) -> None:
    config = make_config(tmp_path, _models(), [task(total=2)])
    first = run(config)
    assert first.exit_code == 0, first.message
    assert plugin.lengths.modes_seen == ["New"]
    rf = folder(config)
    assert meta(rf)["phases_completed"] == [*STANDARD, "answer_lengths", "tally"]
    snapshot = yaml.safe_load(rf.config_path.read_text(encoding="utf-8"))
    assert snapshot["experiment"]["phases"]["answer_lengths"] == "New"
    status = collect_status(rf.root)
    row = next(p for p in status["phases"] if p["phase"] == "answer_lengths")
    assert (row["state"], row["total"]["expected"], row["total"]["ok"]) == ("complete", 1, 1)
    printed = CliRunner().invoke(cli, ["status", "--run", str(rf.root)])
    assert printed.exit_code == 0, printed.output
    assert "answer_lengths" in printed.output
    (rf.root / "answer_lengths.json").unlink()
    again = run(config, continue_run=True)
    assert again.exit_code == 0, again.message
    assert plugin.lengths.modes_seen == ["New", "Extend"]


def test_describe_names_the_plugin_phase_by_its_title(tmp_path: Path, regs: Registries) -> None:
    config = make_config(tmp_path, _models(), [task(total=3)])
    page = describe_html(config, registries=regs)
    assert "6 answer lengths" in page
    assert "answer_lengths: New" in page  # the settings list every phase's mode


def test_planned_calls_given_as_totals_are_split_into_cells_that_keep_both() -> None:
    planned = PlannedCalls("p", calls_by_model={"a": 3, "b": 1}, calls_by_task={"t1": 2, "t2": 2})
    assert planned.total == 4
    assert planned.cell_map() == {("t1", "a"): 2, ("t2", "a"): 1, ("t2", "b"): 1}
    assert PlannedCalls("p", {"a": 3, "b": 2}, {"t1": 5}).cell_map() == {("t1", "a"): 3, ("t1", "b"): 2}
    assert PlannedCalls("p", {"a": 3}, {"t1": 2}).cell_map() == {}  # totals disagree: no split
    assert PlannedCalls.from_cells("p", {("t1", "a"): 2}, basis="upper_bound").calls_by_task == {"t1": 2}
    with pytest.raises(ValueError, match="basis"):
        PlannedCalls("p", basis="maybe")


class SecondOpinion:
    """Asks every judge one question after phase 5; declares the role whose models it calls."""

    name = "second_opinion"
    after = ("evaluation",)
    modes = ("New", "Extend")
    roles = ("judge",)

    def __init__(self) -> None:
        self.answers: dict[str, str] = {}

    def plan(self, view: RunView) -> PlannedCalls:
        return PlannedCalls(self.name, calls_by_model={j.name: 1 for j in view.config.judges})

    def survey(self, view: RunView) -> Survey:
        s = Survey(self.name)
        for judge in view.callable_models("judge"):
            counts = s.group(judge.name)
            counts.expected, counts.ok = 1, int(judge.name in self.answers)
        return s

    async def run(self, ctx: PhaseContext) -> None:
        def done(outcome: WorkOutcome) -> None:
            if outcome.status == "ok":
                self.answers[outcome.item.model.name] = str(outcome.value)
            ctx.outcome(outcome)

        items = [WorkItem(key=f"second__{j.name}", phase=self.name, model=j, on_done=done,
                          request=GenerateRequest(prompt="Is this rubric fair?", role="judge"),
                          parse=lambda result: result.text)
                 for j in ctx.callable_models("judge") if ctx.in_scope(j.name)]
        await ctx.submit(self.name, items)


def test_a_plugin_phase_left_alone_gets_the_interfaces_of_its_roles(tmp_path: Path) -> None:
    reset_plugins()
    config = make_config(tmp_path, _models(), [task(total=1)])
    assert run(config).exit_code == 0  # the five standard phases, complete
    second = SecondOpinion()

    class Plugin:
        @hookimpl
        def register_phases(self, register: Any) -> None:
            register(second)

    reset_plugins()  # the first run collected the registries: collect them again with the plugin
    get_plugin_manager().register(Plugin(), name="second")
    try:
        again = run(config, continue_run=True)  # only the plugin phase is left to run
    finally:
        reset_plugins()
    assert again.exit_code == 0, again.message
    assert again.phases["second_opinion"].written == 2
    assert sorted(second.answers) == ["a", "b"]


def test_continue_runs_a_plugin_phase_in_extend_only_when_it_has_extend(tmp_path: Path, regs: Registries) -> None:
    config = make_config(tmp_path, _models())
    by_name = {e.name: e.value for e in regs.phases}
    modes = {name: run_mode(config, by_name[name], continue_run=True)
             for name in ("rubric_mapping", "evaluation", "answer_lengths", "tally")}
    assert modes == {"rubric_mapping": "Keep", "evaluation": "Extend", "answer_lengths": "Extend", "tally": "New"}
    assert run_mode(config, by_name["answer_lengths"], continue_run=False) == "New"
