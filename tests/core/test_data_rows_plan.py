"""How the rows of a data file are matched with the datapoints a run holds
(:func:`coeval.phases.data_rows.plan_rows`), without a run: ids, content, moved and
duplicated rows, the ``--limit`` choice, and records written before rows had identities."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from coeval.phases.data_rows import left_out_ids, plan_rows, row_content
from coeval.run.data_drift import row_changes
from coeval.run.drift import describe
from coeval_benchmarks.task_data import task_datapoints, task_rows


def _row(native: str, prompt: str, reference: str = "") -> dict[str, Any]:
    return {"id": f"qa__qa-data__{native}", "task_id": "qa", "teacher_model_id": "qa-data", "prompt": prompt,
            "reference_response": reference, "sampled_target_attributes": {}, "generated_at": "2026-12-01T00:00:00Z",
            "status": "ok", "attempts": 0, "benchmark_id": "file", "benchmark_split": "file",
            "benchmark_native_id": native, "gold_metric": "bleu"}


def _file(*prompts: str) -> list[dict[str, Any]]:
    """Rows of a file without an id column: each is known by its row number."""
    return [_row(f"row{i:06d}", p) for i, p in enumerate(prompts, 1)]


def _held(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["id"]: {**r, "generated_at": "2026-11-01T00:00:00Z"} for r in rows}


def test_content_ignores_bookkeeping_and_sees_each_field_a_row_fills() -> None:
    a = _row("row000001", "Q?", "A.")
    assert row_content(a) == row_content({**a, "id": "x", "generated_at": "later", "benchmark_native_id": "t9"})
    assert row_content(a) != row_content({**a, "reference_response": "B."})
    assert row_content(a) != row_content({**a, "sampled_target_attributes": {"intent": "refund"}})


def test_the_same_file_asks_for_nothing() -> None:
    rows = _file("a?", "b?", "c?")
    plan = plan_rows("qa", rows, _held(rows), by_id=False, limit=3)
    assert (plan.write, plan.edited, plan.removed, plan.added, plan.left_out) == ((), (), (), (), frozenset())


def test_moved_and_duplicated_rows_keep_their_datapoints() -> None:
    held = _held(_file("a?", "b?", "a?", "c?"))
    plan = plan_rows("qa", _file("c?", "a?", "b?", "a?"), held, by_id=False, limit=4)
    assert (plan.write, plan.removed, plan.left_out) == ((), (), frozenset())


def test_a_row_inserted_before_others_gets_an_id_no_datapoint_has() -> None:
    held = _held(_file("a?", "b?"))
    plan = plan_rows("qa", _file("new?", "a?", "b?"), held, by_id=False, limit=3)
    assert [r["id"] for r in plan.write] == ["qa__qa-data__row000001-2"]
    assert plan.write[0]["benchmark_native_id"] == "row000001-2"
    assert [n.text() for n in plan.added] == ["row 1 'new?'"]
    assert plan.edited == () and plan.left_out == frozenset()


def test_new_content_at_a_row_number_whose_content_is_gone_is_that_row_edited() -> None:
    held = _held(_file("a?", "b?", "c?"))
    plan = plan_rows("qa", _file("a?", "B, reworded?", "c?"), held, by_id=False, limit=3)
    assert [r["id"] for r in plan.write] == ["qa__qa-data__row000002"]
    assert plan.replaces == frozenset({"qa__qa-data__row000002"})
    assert [n.text() for n in plan.edited] == ["row 2 'b?' -> 'B, reworded?'"]
    assert plan.added == () and plan.removed == ()


def test_with_an_id_column_rows_are_followed_by_id_through_any_edit() -> None:
    held = _held([_row("t1", "a?"), _row("t2", "b?"), _row("t3", "c?")])
    rows = [_row("t3", "c, edited?"), _row("t1", "a?"), _row("t4", "d?")]
    plan = plan_rows("qa", rows, held, by_id=True, limit=3)
    assert [n.text() for n in plan.edited] == ["id t3 'c?' -> 'c, edited?'"]
    assert [n.text() for n in plan.added] == ["id t4 'd?'"]
    assert [n.text() for n in plan.removed] == ["id t2 'b?'"]
    assert plan.left_out == frozenset({"qa__qa-data__t2"})
    assert [r["id"] for r in plan.write] == ["qa__qa-data__t3", "qa__qa-data__t4"]
    assert plan.replaces == frozenset({"qa__qa-data__t3"})


def test_a_removed_row_is_named_by_its_old_row_number_and_left_out() -> None:
    held = _held(_file("a?", "b?", "c?", "d?"))
    plan = plan_rows("qa", _file("a?", "b?", "d?"), held, by_id=False, limit=3)
    assert [n.text() for n in plan.removed] == ["row 3 'c?'"]
    assert plan.left_out == frozenset({"qa__qa-data__row000003"})
    assert plan.write == ()


def test_a_fresh_limit_picks_the_rows_ingest_limit_picks_and_a_larger_one_keeps_them() -> None:
    rows = _file(*(f"q{i}?" for i in range(1, 11)))
    ranked = sorted(rows, key=lambda r: hashlib.sha256(r["benchmark_native_id"].encode()).hexdigest())
    first = plan_rows("qa", rows, {}, by_id=False, limit=3)
    assert {r["id"] for r in first.write} == {r["id"] for r in ranked[:3]}
    assert [r["id"] for r in first.write] == [r["id"] for r in rows if r in ranked[:3]]  # in file order
    more = plan_rows("qa", rows, _held(list(first.write)), by_id=False, limit=5)
    assert {r["id"] for r in more.write} == {r["id"] for r in ranked[3:5]}


def test_rows_the_run_holds_stay_chosen_when_the_file_is_reordered_under_a_limit() -> None:
    rows = _file(*(f"q{i}?" for i in range(1, 11)))
    held = _held(list(plan_rows("qa", rows, {}, by_id=False, limit=3).write))
    plan = plan_rows("qa", list(reversed(rows)), held, by_id=False, limit=3)
    assert (plan.write, plan.removed) == ((), ())


def test_left_out_ids_read_only_what_is_as_written() -> None:
    assert left_out_ids({}) == frozenset()
    assert left_out_ids({"data_rows_left_out": 7}) == frozenset()
    assert left_out_ids({"data_rows_left_out": {"qa": ["a", 3], "x": "b"}}) == frozenset({"a"})


def test_a_run_written_before_rows_had_identities_continues_as_it_would_have(tmp_path: Path) -> None:
    """Datapoints written by the earlier reader (``task_datapoints``: the ``--limit`` share)
    are the rows this plan picks, and a larger limit adds exactly the rows it added."""
    (tmp_path / "qa.csv").write_text("question\n" + "".join(f"Question {i}?\n" for i in range(1, 9)),
                                     encoding="utf-8")
    spec = {"file": "qa.csv", "prompt": "question"}
    old = task_datapoints("qa", spec, tmp_path, 3, "2026-01-01T00:00:00Z")
    rows = task_rows("qa", spec, tmp_path, "2026-12-01T00:00:00Z")
    assert [r["id"] for r in plan_rows("qa", rows, {}, by_id=False, limit=3).write] == [r["id"] for r in old]
    held = {r["id"]: r for r in old}
    assert plan_rows("qa", rows, held, by_id=False, limit=3).write == ()
    wider = task_datapoints("qa", spec, tmp_path, 6, "2026-01-01T00:00:00Z")
    added = plan_rows("qa", rows, held, by_id=False, limit=6).write
    assert [r["id"] for r in added] == [r["id"] for r in wider if r["id"] not in held]


def test_the_drift_message_names_at_most_five_rows_and_the_count() -> None:
    held = _held(_file(*(f"q{i}?" for i in range(1, 8))))
    plan = plan_rows("qa", _file(*(f"Q{i}, reworded?" for i in range(1, 8))), held, by_id=False, limit=7)
    [edited] = row_changes([plan])
    assert describe(edited) == (
        "task qa: data: 7 rows edited: row 1 'q1?' -> 'Q1, reworded?', row 2 'q2?' -> 'Q2, reworded?', "
        "row 3 'q3?' -> 'Q3, reworded?', row 4 'q4?' -> 'Q4, reworded?', row 5 'q5?' -> 'Q5, reworded?', "
        "... (7 in all) (made again: the new datapoint, its answers and judgments replace the old ones)")
    long = "A question that goes on and on, well past forty characters?"
    plan = plan_rows("qa", _file("a?"), _held(_file("a?", long)), by_id=False, limit=1)
    assert [n.text() for n in plan.removed] == ["row 2 'A question that goes on and on, well ...'"]
