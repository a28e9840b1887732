"""The suggestion order: answers of students whose places are not determined first, then
those graded by the judges least known against the reference; labels spread over students."""

from __future__ import annotations

from coeval_analysis.labels.suggestions import Candidate, Uncertainty, suggest, uncertainty_from_summary


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


def test_labels_go_to_the_undetermined_pairs_with_calibrating_anchors() -> None:
    """The reference run's shape: the GPT-like students' places rest on judges that cannot
    rank them (a wide own spread, half of it removable by labels), the Qwen-like ones are
    settled by unrelated judges, one student's every comparison is decided. The labels go
    to the undetermined pairs, a share to the settled students (which measure the labels'
    own scale), none to the decided student, and they come in datapoint blocks."""
    from coeval_analysis.labels.suggestions import CALIBRATION

    students = ("g1", "g2", "q1", "q2", "m")
    cands = [_c(f"d{i}", s, ("j1", "j2")) for i in range(10) for s in students]
    unc = Uncertainty(
        {}, {"j1": 0.5, "j2": 0.5},
        student_sd={"g1": 0.06, "g2": 0.06, "q1": 0.02, "q2": 0.02, "m": 0.02},
        pairs=[("g1", "g2"), ("g2", "q1")],
        removable={"g1": 0.5, "g2": 0.5, "q1": 0.0, "q2": 0.0, "m": 0.5},
    )  # fmt: skip
    picks = suggest(cands, unc, {}, 12)
    who = [p.student for p in picks]
    assert "m" not in who
    assert who.count("g1") + who.count("g2") >= 6
    assert 1 <= who.count("q1") + who.count("q2") <= CALIBRATION * 12 + 1
    assert len({p.datapoint_id for p in picks}) <= 6  # blocks: several students per prompt
    # g2 is in both undetermined pairs: a label of it narrows both
    assert who.count("g2") == max(who.count(s) for s in students)
    assert picks[1].datapoint_id == picks[0].datapoint_id


def test_own_spread_from_paired_intervals() -> None:
    """Each student's own standard error is the part of the paired differences' spread
    that is its own: a wide student widens every pair it is in."""
    z = 1.959963984540054
    own = {"a": 0.04, "b": 0.01, "c": 0.01}
    comps = [{"a": x, "b": y, "diff": 0.1, "ci": [0.0 - z * (own[x] ** 2 + own[y] ** 2) ** 0.5,
                                                 0.0 + z * (own[x] ** 2 + own[y] ** 2) ** 0.5]}
             for x, y in (("a", "b"), ("a", "c"), ("b", "c"))]  # fmt: skip
    comps[2]["ci"] = [0.01, 0.01 + 2 * z * (2 * 0.01**2) ** 0.5]  # b vs c decided
    summary = {"students": {s: {"rank_range": [1, 3]} for s in own}, "comparisons": comps}
    unc = uncertainty_from_summary(summary)
    assert unc.pairs == [("a", "b"), ("a", "c")]
    for s, sd in own.items():
        assert abs(unc.student_sd[s] - sd) < 1e-6
