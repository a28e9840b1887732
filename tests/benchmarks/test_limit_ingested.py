"""``--limit N`` applies to every teacher, the benchmark teacher of an ingested file too:
N datapoints per (task, teacher) are answered and judged, the estimate says so, and the run
is recorded as a slice until a run without the limit finishes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli

RUN = Path("runs") / "starter-mock"
ROWS = [{"question": f"What is {n} + {n}?", "answer": str(2 * n), "key": f"q{n:02d}"} for n in range(1, 21)]


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.slow
def test_limit_3_on_an_ingested_20_row_file_makes_3_answers_per_student(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    assert CliRunner().invoke(cli, ["run", "coeval.yaml"]).exit_code == 0
    data = tmp_path / "mine.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    ingested = CliRunner().invoke(cli, ["ingest", "--run", str(RUN), "--file", str(data), "--task-name", "mine",
                                        "--prompt-field", "question", "--reference-field", "answer",
                                        "--id-field", "key"])
    assert ingested.exit_code == 0, ingested.output

    sliced = CliRunner().invoke(cli, ["run", "coeval.yaml", "--continue", "--limit", "3"])
    assert sliced.exit_code == 0, sliced.output
    # 3 rows x 2 students answered, each answer judged by 2 judges (the gold scorer makes no call)
    assert "estimate for remaining work: 18 calls" in sliced.output
    for student in ("mock-a", "mock-b"):
        answers = _lines(RUN / "phase4_responses" / f"mine.mine-data.{student}.responses.jsonl")
        assert sorted(str(a["datapoint_id"]) for a in answers) == [f"mine__mine-data__q0{n}" for n in (1, 2, 3)]
    assert "note: limited to 3 datapoints per (task, teacher)" in sliced.output
    status = CliRunner().invoke(cli, ["status", "--run", str(RUN), "-q"])
    assert status.output == f"{RUN}: partial (limited to 3 datapoints per (task, teacher))\n"

    rest = CliRunner().invoke(cli, ["run", "coeval.yaml", "--continue"])
    assert rest.exit_code == 0, rest.output
    assert "estimate for remaining work: 102 calls" in rest.output  # 17 rows x 2 students x (1 + 2 judges)
    for student in ("mock-a", "mock-b"):
        assert len(_lines(RUN / "phase4_responses" / f"mine.mine-data.{student}.responses.jsonl")) == 20
    assert CliRunner().invoke(cli, ["status", "--run", str(RUN), "-q"]).output == f"{RUN}: completed\n"
