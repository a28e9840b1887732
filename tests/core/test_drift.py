"""Settings drift on ``coeval run --continue``: stop, name the setting, or proceed on request."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner
from coeval.cli.main import cli

RUN = Path("runs") / "starter-mock"


def _edit(path: Path, change: str, to: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert change in text
    path.write_text(text.replace(change, to, 1), encoding="utf-8")


def _first_run(work: Path) -> Path:
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    first = CliRunner().invoke(cli, ["run", "coeval.yaml"])
    assert first.exit_code == 0, first.output
    return work / "coeval.yaml"


def test_meta_records_settings_per_model_role_and_task(work: Path) -> None:
    _first_run(work)
    settings = json.loads((RUN / "meta.json").read_text())["settings"]
    assert settings["models"]["mock-b"]["roles"]["judge"] == {"interface": "mock", "seed": 2}
    assert sorted(settings["models"]["mock-b"]["roles"]) == ["judge", "student", "teacher"]
    assert len(settings["models"]["mock-b"]["hash"]) == 16
    definition = settings["tasks"]["short_answer"]["definition"]
    assert definition["rubric"]["correctness"] == "The answer states the right fact."
    assert "total" not in definition["sampling"]


def test_changed_temperature_stops_continue_with_exit_2_then_allow_drift_proceeds(work: Path) -> None:
    config = _first_run(work)
    meta_before = (RUN / "meta.json").read_text()
    _edit(config, "parameters: { seed: 1 }", "parameters: { seed: 1, temperature: 0.9 }")

    stopped = CliRunner().invoke(cli, ["run", "coeval.yaml", "--continue"])
    assert stopped.exit_code == 2, stopped.output
    assert "model mock-a: teacher.temperature was '(not set)', now 0.9" in stopped.output
    assert "--allow-drift" in stopped.output
    assert "Traceback" not in stopped.output
    assert (RUN / "meta.json").read_text() == meta_before  # nothing written
    assert not (RUN / "config.1.yaml").exists()

    allowed = CliRunner().invoke(cli, ["run", "coeval.yaml", "--continue", "--allow-drift"])
    assert allowed.exit_code == 0, allowed.output
    meta = json.loads((RUN / "meta.json").read_text())
    assert [c["setting"] for c in meta["drift"][0]["changes"]] == [
        "judge.temperature", "student.temperature", "teacher.temperature"
    ]
    assert meta["drift"][0]["changes"][0]["new"] == 0.9
    assert meta["settings"]["models"]["mock-a"]["roles"]["student"]["temperature"] == 0.9
    assert yaml.safe_load((RUN / "config.1.yaml").read_text())["models"][0]["parameters"] == {"seed": 1}
    assert yaml.safe_load((RUN / "config.yaml").read_text())["models"][0]["parameters"]["temperature"] == 0.9

    again = CliRunner().invoke(cli, ["run", "coeval.yaml", "--continue"])  # the new settings are the run's now
    assert again.exit_code == 0, again.output
    assert not (RUN / "config.2.yaml").exists()


def test_changed_rubric_names_the_task_and_factor(work: Path) -> None:
    config = _first_run(work)
    _edit(config, "correctness: The answer states the right fact.", "correctness: The answer is right.")
    stopped = CliRunner().invoke(cli, ["run", "coeval.yaml", "--continue", "--dry-run"])
    assert stopped.exit_code == 2
    assert (
        "task short_answer: rubric.correctness was 'The answer states the right fact.', now 'The answer is right.'"
        in stopped.output
    )


def test_additions_and_a_larger_total_are_not_drift(work: Path) -> None:
    config = _first_run(work)
    _edit(config, "total: 5 }", "total: 7 }")
    _edit(config, "\ntasks:", "  - name: mock-c\n    interface: mock\n    roles: [student]\n\ntasks:")
    result = CliRunner().invoke(cli, ["run", "coeval.yaml", "--continue"])
    assert result.exit_code == 0, result.output
    assert "drift" not in json.loads((RUN / "meta.json").read_text())


def test_legacy_run_without_settings_still_continues(work: Path) -> None:
    config = _first_run(work)
    meta = json.loads((RUN / "meta.json").read_text())
    del meta["settings"]
    (RUN / "meta.json").write_text(json.dumps(meta))
    _edit(config, "parameters: { seed: 2 }", "parameters: { seed: 2, temperature: 0.1 }")
    result = CliRunner().invoke(cli, ["run", "coeval.yaml", "--continue"])
    assert result.exit_code == 0, result.output
    assert json.loads((RUN / "meta.json").read_text())["settings"]["models"]["mock-b"]["roles"]["judge"][
        "temperature"
    ] == 0.1


def test_a_judge_that_judged_nothing_yet_is_not_said_to_have_used_a_setting(work: Path) -> None:
    config = _first_run(work)
    for path in (RUN / "phase5_evaluations").glob("*.mock-b.evaluations.jsonl"):
        path.unlink()  # as if the run had stopped before mock-b judged anything
    _edit(config, "parameters: { seed: 2 }", "parameters: { seed: 2 }\n    role_parameters: {judge: {temperature: 0.5}}")
    stopped = CliRunner().invoke(cli, ["run", "coeval.yaml", "--continue", "--dry-run"])
    assert stopped.exit_code == 2, stopped.output
    text = " ".join(stopped.output.split())
    assert "already used" not in text
    assert ("model mock-b: judge.temperature was '(not set)', now 0.5 (recorded when the run started; "
            "mock-b has not judged anything yet)") in text

    _edit(config, "parameters: { seed: 1 }", "parameters: { seed: 1, temperature: 0.9 }")
    both = CliRunner().invoke(cli, ["run", "coeval.yaml", "--continue", "--dry-run"])
    text = " ".join(both.output.split())
    assert "the config changed settings this run already used" in text
    assert "model mock-a: judge.temperature was '(not set)', now 0.9" in text
    assert "model mock-a: judge.temperature was '(not set)', now 0.9 (recorded" not in text
