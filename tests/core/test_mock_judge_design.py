"""A ``mock`` judge plays a design (``parameters.judge``: noise, bias, flat), so a user can
rehearse how faulty judges move a ranking before paying for real ones."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval.config.model import ModelConfig
from coeval.interfaces.base import GenerateRequest
from coeval.interfaces.mock import MockInterface

POINTS = {"High": 1.0, "Medium": 0.5, "Low": 0.0}
SCHEMA = {"type": "object", "properties": {"correct": {"type": "string", "enum": ["High", "Medium", "Low"]}},
          "required": ["correct"]}


def model(name: str, roles: tuple[str, ...], family: str | None = None, **parameters: object) -> MockInterface:
    return MockInterface(ModelConfig(name=name, interface="mock", roles=roles, family=family, parameters=parameters))


def answer(student: MockInterface, i: int) -> str:
    request = GenerateRequest(prompt=f"Question {i}: explain how tides follow the moon", role="student",
                              params=student.model.parameters)
    return asyncio.run(student.generate(request)).text


def grade(judge: MockInterface, reply: str, i: int) -> str:
    prompt = f"Grade this answer to question {i}.\nAnswer: {reply}\nReturn JSON."
    request = GenerateRequest(prompt=prompt, role="judge", params=judge.model.parameters, json_schema=SCHEMA,
                              schema_name="judge_single")
    return str(json.loads(asyncio.run(judge.generate(request)).text)["correct"])


def grades(judge: MockInterface, student: MockInterface, n: int = 120) -> list[str]:
    return [grade(judge, answer(student, i), i) for i in range(n)]


def test_a_flat_judge_gives_its_one_level_to_every_answer() -> None:
    judge = model("flat", ("judge",), quality=1.0, judge={"flat": "high"})
    for quality in (0.05, 0.5, 0.95):
        assert set(grades(judge, model(f"s{quality}", ("student",), quality=quality), 40)) == {"High"}


def test_no_noise_and_no_bias_grade_exactly_as_a_judge_without_a_design() -> None:
    student = model("s", ("student",), quality=0.5)
    plain = grades(model("j", ("judge",), quality=0.9), student)
    designed = grades(model("j", ("judge",), quality=0.9, judge={"noise": 0, "bias": {}}), student)
    assert designed == plain


def test_a_bias_moves_only_the_named_students_grades_and_only_upward() -> None:
    favoured = model("gpt-4o-mini", ("student",), quality=0.5)
    other = model("llama-3-8b", ("student",), quality=0.5)
    fair = model("j", ("judge",), quality=1.0)
    biased = model("j", ("judge",), quality=1.0, judge={"bias": {"gpt": 0.34}})  # a prefix of the name
    assert grades(biased, other) == grades(fair, other)
    fair_favoured, biased_favoured = grades(fair, favoured), grades(biased, favoured)
    pairs = list(zip(fair_favoured, biased_favoured, strict=True))
    assert all(POINTS[b] >= POINTS[f] for f, b in pairs)
    raised = sum(POINTS[b] > POINTS[f] for f, b in pairs)
    not_high = sum(f != "High" for f in fair_favoured)
    assert not_high > 60 and raised >= 0.9 * not_high  # 0.34 is more than one band: nearly all move up


def test_a_bias_keyed_by_family_reaches_every_student_of_that_family() -> None:
    student = model("helper-a", ("student",), family="acme", quality=0.5)
    fair = grades(model("j", ("judge",), quality=1.0), student)
    harsh = grades(model("j", ("judge",), quality=1.0, judge={"bias": {"acme": -0.34}}), student)
    assert all(POINTS[h] <= POINTS[f] for f, h in zip(fair, harsh, strict=True))
    lowered = sum(POINTS[h] < POINTS[f] for f, h in zip(fair, harsh, strict=True))
    assert lowered >= 0.9 * sum(g != "Low" for g in fair) > 60


def test_noise_blurs_grades_deterministically() -> None:
    student = model("s", ("student",), quality=0.5)
    calm = grades(model("j", ("judge",), quality=1.0), student)
    noisy = grades(model("j", ("judge",), quality=1.0, judge={"noise": 0.3}), student)
    again = grades(model("j", ("judge",), quality=1.0, judge={"noise": 0.3}), student)
    assert noisy == again
    changed = sum(a != b for a, b in zip(calm, noisy, strict=True))
    assert 20 < changed < 110
    assert len(Counter(noisy)) == 3


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"qualty": 0.5}, "V-45 models[1].parameters.qualty: the mock interface has no parameter 'qualty' "
                          "(did you mean 'quality'?)"),
        ({"judge": {"nois": 0.1}}, "V-20 models[1].parameters: model 'j': mock parameter 'judge.nois' is not a "
                                   "judge fault (known: noise, bias, flat)"),
        ({"judge": {"flat": "Great"}}, "mock parameter 'judge.flat' must be High, Medium or Low, got 'Great'"),
        ({"judge": {"bias": {"gpt": 2}}}, "mock parameter 'judge.bias.gpt' must be a number from -1 to 1, got 2"),
        ({"judge": {"noise": -0.1}}, "mock parameter 'judge.noise' must be a number from 0 to 1, got -0.1"),
    ],
)
def test_unknown_or_bad_mock_parameters_are_refused_before_the_run(tmp_path: Path, parameters: dict[str, object],
                                                                  message: str) -> None:
    path = _config(tmp_path, parameters)
    result = CliRunner().invoke(cli, ["run", str(path), "--dry-run"])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_a_flat_judge_in_a_run_grades_every_answer_with_its_level(tmp_path: Path) -> None:
    path = _config(tmp_path, {"quality": 1.0, "judge": {"flat": "Low"}})
    result = CliRunner().invoke(cli, ["run", str(path), "-q"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for f in (tmp_path / "runs" / "design").glob("phase5*/*.jsonl")
               for line in f.read_text(encoding="utf-8").splitlines()]
    by_judge = Counter((r["judge_model_id"], json.dumps(r.get("scores"), sort_keys=True)) for r in records)
    flat = {scores for (judge, scores) in by_judge if judge == "j"}
    assert flat == {json.dumps({"correct": "Low"})}
    assert sum(n for (judge, _), n in by_judge.items() if judge == "j") == 4  # 2 datapoints x 2 students


def _config(folder: Path, judge_parameters: dict[str, object]) -> Path:
    config = {
        "models": [
            {"name": "t", "interface": "mock", "roles": ["teacher", "student"]},
            {"name": "j", "interface": "mock", "roles": ["judge"], "parameters": judge_parameters},
            {"name": "s", "interface": "mock", "roles": ["student"]},
        ],
        "tasks": [{"name": "qa", "description": "Answer a question.", "target_attributes": {"topic": ["a", "b"]},
                   "rubric": {"correct": "The answer is right."}, "sampling": {"total": 2}}],
        "experiment": {"id": "design", "storage_folder": str(folder / "runs")},
    }
    path = folder / "design.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path
