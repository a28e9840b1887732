"""`coeval analyze`'s console is a verdict: the leaderboard, its tiers, how the headline is
combined and at most three warnings with their actions, in one screen of a 100-column
terminal; everything else under -v."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval_analysis.leaderboard import leaderboard
from coeval_analysis.leaderboard.view import interval_text, number
from coeval_analysis.warnings.run_warnings import verdict_warnings


def _analyze(run: Path, out: Path, *extra: str) -> str:
    result = CliRunner().invoke(cli, ["analyze", "--run", str(run), "--out", str(out), *extra],
                                env={"COLUMNS": "100"})  # fmt: skip
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def console(reference_run: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    out = tmp_path_factory.mktemp("verdict")
    text = _analyze(reference_run, out)
    return text, json.loads((out / "summary.json").read_text())


@pytest.mark.slow
def test_the_reference_run_fits_one_screen_of_a_100_column_terminal(console: tuple[str, dict[str, Any]]) -> None:
    text, _ = console
    lines = text.splitlines()
    assert len(lines) <= 30, text
    assert max(len(line) for line in lines) <= 100, [line for line in lines if len(line) > 100]


@pytest.mark.slow
def test_the_console_shows_the_leaderboard_of_summary_json(console: tuple[str, dict[str, Any]]) -> None:
    text, summary = console
    board = leaderboard(summary)
    lines = text.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("─")) + 1
    rows = [line.split() for line in lines[top:top + len(board["rows"])]]
    shown = [(r[0], r[1], r[2], f"{r[3]} {r[4]}") for r in rows]
    expected = [(b["rank_label"], b["student"], number(b["headline"]), interval_text(b["headline_ci"]))
                for b in board["rows"]]  # fmt: skip
    assert shown == expected
    assert [s for _, s, _, _ in shown] == ["gpt-4o-mini", "gpt-3.5-turbo", "qwen2p5-1b5", "smollm2-1b7", "qwen2p5-0b5"]
    assert f"tiers: {board['tiers_line']}" in " ".join(text.split())
    combined = " ".join(board["combined"].split())
    assert combined[1:].rstrip(".") in " ".join(text.split())  # one sentence on how the headline is combined


def test_at_most_three_warnings_each_with_its_action(console: tuple[str, dict[str, Any]]) -> None:
    text, summary = console
    assert text.count("warning: ") <= 3 < len(summary["warnings"])
    assert text.count("action: ") >= 2
    # the per-student "not determined" warnings are one line naming both students
    assert "gpt-4o-mini and gpt-3.5-turbo are not determined" in " ".join(text.split())
    assert text.count("not determined") == 1
    assert "note: " not in text  # notes wait for -v and the report


@pytest.mark.slow
def test_verbose_prints_every_warning_and_note(reference_run: Path, tmp_path: Path) -> None:
    text = _analyze(reference_run, tmp_path, "-v")
    summary = json.loads((tmp_path / "summary.json").read_text())
    joined = " ".join(text.split())
    for w in summary["warnings"]:
        assert " ".join(w["message"].split()) in joined
    assert text.count("note: ") == len(summary["headline_notes"])
    assert "duplicates dropped 44" in joined
    assert max(len(line) for line in text.splitlines()) <= 100


def test_numbers_print_rounded_never_in_scientific_notation() -> None:
    assert number(1.39e-17) == "0.000"
    assert number(-1e-9) == "0.000"
    assert number(0.8958691) == "0.896"
    assert number(None) == "—"
    assert interval_text([1.39e-17, 0.99999]) == "[0.000, 1.000]"
    assert interval_text([None, None]) == "—"


def test_warnings_of_one_kind_become_one_line_and_the_answer_changing_ones_come_first() -> None:
    warnings = [
        {"kind": "students_alike", "subject": "t", "message": "students score alike on teacher t's datapoints"},
        {"kind": "flat_judge", "subject": "j1", "message": "judge j1 barely tells answers apart"},
        {"kind": "one_level", "subject": "j1", "message": "judge j1 gives High to 100% of answers"},
        {"kind": "flat_judge", "subject": "j2", "message": "judge j2 barely tells answers apart"},
        {"kind": "not_determined", "subject": "a", "message": "a: not determined: ..."},
        {"kind": "not_determined", "subject": "b", "message": "b: not determined: ..."},
        {"kind": "few_datapoints", "subject": None, "message": "intervals rest on 12 datapoints"},
    ]
    shown, left = verdict_warnings(warnings)
    assert [what for what, _ in shown] == [
        "intervals rest on 12 datapoints",
        "a and b are not determined: no unrelated judge that tells answers apart graded them; their places "
        "rest on judges of their own family or on judges that barely tell answers apart",
        "judges j1 and j2 barely tell answers apart: they count for almost nothing in the headline",
    ]
    assert all(action for _, action in shown)
    assert left == 1  # students_alike: under -v and in the report


def test_a_warning_that_ends_with_its_action_shows_it_as_the_action() -> None:
    warnings = [{"kind": "stale_records", "subject": None,
                 "message": "stale: 3 judgments score answers made again since; `coeval run --continue` makes them again"}]
    assert verdict_warnings(warnings) == (
        [("stale: 3 judgments score answers made again since", "`coeval run --continue` makes them again")], 0)
    flat = [{"kind": "agreement_inflated", "subject": "j", "message": "judge agreement is inflated: j gives one level"}]
    assert verdict_warnings(flat) == ([("judge agreement is inflated: j gives one level", "")], 0)


def test_no_line_is_wider_than_the_terminal_even_with_long_names() -> None:
    from coeval_analysis.leaderboard import build_leaderboard
    from coeval_analysis.leaderboard.verdict import verdict_lines

    long = "a-student-with-a-very-long-model-identifier-from-some-hub/and-its-revision-name"
    rows = [{"student": s, "rank": i, "rank_range": [i, i], "rank_label": str(i), "headline": h,
             "headline_ci": [h - 0.05, h + 0.05], "determined": True, "not_determined": None,
             "evidence": {"judged": {"score": h, "ci": [None, None], "n": 40}}}
            for i, (s, h) in enumerate([(long, 0.81), ("short", 0.52)], 1)]  # fmt: skip
    board = build_leaderboard(rows, [{"key": "judged", "kind": "judged", "title": "judged", "in_headline": True}],
                              {(long, "short"): True}, "the headline is the judged score", 0.95, True)
    summary = {"experiment_id": "x" * 80, "leaderboard": board, "students": {},
               "warnings": [{"kind": "few_datapoints", "subject": None, "message": "word " * 60}]}
    for width in (60, 100):
        lines = verdict_lines(summary, width)
        assert max(len(line) for line in lines) <= width, lines
        assert any(line.startswith("1  a-student-with") and "0.810" in line and "[0.760, 0.860]" in line
                   for line in lines)  # the name is cut, the numbers are whole
    assert "tiers: " + long in " ".join(verdict_lines(summary, 100))
