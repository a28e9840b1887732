"""``coeval run --continue`` of a finished run reads its records once: the spend estimate,
the choice of phases and the phase loop share one survey per phase, and the drift check
reads no answer or judgment unless a model lost a role. On a run of a million judgments
each extra pass was seconds and gigabytes (``nox -s bench``'s resume scan)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval.phase_ids import DATA_GENERATION, EVALUATION, RESPONSE_COLLECTION
from coeval.phases.evaluation import EvaluationPhase
from coeval.phases.survey_memo import forget_surveys
from coeval.run import shrink


@pytest.fixture
def finished(work: Path) -> Path:
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    result = CliRunner().invoke(cli, ["run", "coeval.yaml"])
    assert result.exit_code == 0, result.output
    return work / "coeval.yaml"


@pytest.fixture
def surveys(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Phase 5's surveys, counted as they are made."""
    made: Counter[str] = Counter()
    real = EvaluationPhase.survey

    def counted(self: EvaluationPhase, view: object) -> object:
        made[self.name] += 1
        return real(self, view)  # type: ignore[arg-type]

    monkeypatch.setattr(EvaluationPhase, "survey", counted)
    return made


def test_each_phase_is_surveyed_once_on_a_continue_of_a_finished_run(finished: Path, surveys: Counter[str]) -> None:
    forget_surveys()  # as in a new process: nothing surveyed yet
    result = CliRunner().invoke(cli, ["run", str(finished), "--continue"])
    assert result.exit_code == 0, result.output
    assert surveys == {EVALUATION: 1}


def test_a_continue_survey_is_made_again_once_a_record_changes(finished: Path, surveys: Counter[str]) -> None:
    evaluations = next(Path("runs").glob("*/phase5_evaluations/*.jsonl"))
    lines = evaluations.read_text().splitlines(keepends=True)
    evaluations.write_text("".join(lines[:-1]))  # a judgment lost: the run must notice and redo it
    result = CliRunner().invoke(cli, ["run", str(finished), "--continue"])
    assert result.exit_code == 0, result.output
    assert surveys[EVALUATION] >= 2  # before and after the phase wrote the judgment again
    assert len(evaluations.read_text().splitlines()) == len(lines)


def test_the_drift_check_reads_no_answer_or_judgment_when_no_model_lost_a_role(
    finished: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded: Counter[str] = Counter()
    real = shrink.load_phase_records

    def counted(run: object, phase: str) -> object:
        loaded[phase] += 1
        return real(run, phase)  # type: ignore[arg-type]

    monkeypatch.setattr(shrink, "load_phase_records", counted)
    result = CliRunner().invoke(cli, ["run", str(finished), "--continue"])
    assert result.exit_code == 0, result.output
    assert loaded[RESPONSE_COLLECTION] == 0 and loaded[EVALUATION] == 0
    assert loaded[DATA_GENERATION] == 1  # the slots of a lowered sampling.total are checked
