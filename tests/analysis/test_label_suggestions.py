"""The suggestion order: answers of students whose places are not determined first, then
those graded by the judges least known against the reference; labels spread over students."""

from __future__ import annotations

from coeval_analysis.label_suggestions import Candidate, Uncertainty, suggest, uncertainty_from_summary


def _c(dp: str, student: str, judges: tuple[str, ...] = ("j1",), spread: float = 0.0) -> Candidate:
    return Candidate(dp, student, f"{dp}__{student}", judges, spread)


def test_undetermined_students_first_and_spread_over_them() -> None:
    cands = [_c(f"d{i}", s) for i in range(5) for s in ("top", "a", "b")]
    unc = Uncertainty({"top": 0.0, "a": 1.0, "b": 1.0}, {"j1": 0.5})
    picks = suggest(cands, unc, {}, 4)
    assert [p.student for p in picks] == ["a", "b", "a", "b"]
    # the second pick is b's answer to the datapoint of a's (a paired comparison)
    assert picks[1].datapoint_id == picks[0].datapoint_id == "d0"
    # answers already labelled are not suggested, and count for their student
    picks = suggest(cands, unc, {("d0", "a"): 3}, 1)
    assert (picks[0].datapoint_id, picks[0].student) == ("d0", "b")


def test_least_known_judges_and_disputed_answers_win_among_equals() -> None:
    unc = Uncertainty({"a": 0.5}, {"known": 0.1, "unknown": 1.0})
    cands = [_c("d1", "a", ("known",)), _c("d2", "a", ("unknown",))]
    assert suggest(cands, unc, {}, 1)[0].datapoint_id == "d2"
    cands = [_c("d1", "a", ("known",), spread=0.0), _c("d2", "a", ("known",), spread=0.4)]
    assert suggest(cands, unc, {}, 1)[0].datapoint_id == "d2"


def test_uncertainty_from_summary() -> None:
    summary = {
        "students": {"a": {"rank_range": [1, 1]}, "b": {"rank_range": [2, 3]}, "c": {"rank_range": [2, 3]},
                     "d": {"rank_range": [4, 4]}},
        "judges": {"j1": {}, "j2": {}},
        "reference": {"judges": {"j1": {"human": {"n": 10}, "gold": {"n": 10}}}},
    }  # fmt: skip
    unc = uncertainty_from_summary(summary)
    assert unc.student_open == {"a": 0.0, "b": 1 / 3, "c": 1 / 3, "d": 0.0}
    assert unc.judge_open == {"j1": 0.5, "j2": 1.0}
