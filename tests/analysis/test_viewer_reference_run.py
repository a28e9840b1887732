"""``coeval view`` in headless Chromium on the real legacy-format run (``../shared/reference-runs``):
records without ``status``, ``student_model_id``, ``raw`` or ``latency_ms``. What the pages show
is checked against the JSONL read here with the standard library."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.analysis.viewer_wait import serve_view

pytestmark = [pytest.mark.browser, pytest.mark.slow]

_VALUE = {"High": 1.0, "Medium": 0.5, "Low": 0.0}


def _records(run: Path, phase: str) -> list[dict[str, Any]]:
    return [json.loads(line) for p in sorted((run / phase).glob("*.jsonl"))
            for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]


def _kept_evaluations(run: Path) -> dict[str, dict[str, Any]]:
    """Per id, a record with scores over one without, then the latest."""
    kept: dict[str, dict[str, Any]] = {}
    for rec in _records(run, "phase5_evaluations"):
        old = kept.get(rec["id"])
        if old is None or rec.get("scores") or not old.get("scores"):
            kept[rec["id"]] = rec
    return kept


@pytest.fixture(scope="module")
def served(reference_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    cache = tmp_path_factory.mktemp("cache")
    yield from serve_view(["--run", str(reference_run)], {**os.environ, "COEVAL_VIEW_CACHE": str(cache)})


def test_the_legacy_reference_run_ranks_as_its_records_say(served: str, reference_run: Path, page: Any) -> None:
    values: dict[str, list[float]] = defaultdict(list)
    for rec in _kept_evaluations(reference_run).values():
        student = rec["response_id"][len(rec["datapoint_id"]) + 2:]  # legacy: no student_model_id
        values[student].extend(_VALUE[s] for s in (rec.get("scores") or {}).values())
    expected = {s: f"{sum(v) / len(v):.3f}" for s, v in values.items() if v}
    page.goto(served + "/")
    rows = [r.locator("td").all_inner_texts() for r in page.locator("table#ranking tr").all()[1:]]
    assert {r[1]: r[2] for r in rows} == expected
    assert [float(r[2]) for r in rows] == sorted((float(r[2]) for r in rows), reverse=True)
    judged = {rec["datapoint_id"] for rec in _kept_evaluations(reference_run).values()}
    assert page.locator("#count").inner_text().startswith(f"{len(judged)} datapoints")


def test_a_legacy_datapoint_page_shows_its_item_answers_and_judgments(served: str, reference_run: Path,
                                                                      page: Any) -> None:
    page.goto(served + "/")
    first = page.locator("table#datapoints a.dp-link").first.inner_text()
    item = next(r for r in _records(reference_run, "phase3_datapoints") if r["id"] == first)
    answers = [r for r in _records(reference_run, "phase4_responses") if r["datapoint_id"] == first]
    judgments = [r for r in _kept_evaluations(reference_run).values() if r["datapoint_id"] == first]
    page.locator("table#datapoints a.dp-link").first.click()
    page.wait_for_load_state()
    assert page.locator("pre.prompt").inner_text() == item["prompt"]
    assert sorted(page.locator(".card.answer h3").all_inner_texts()) == sorted(r["student_model_id"] for r in answers)
    assert page.locator(".card.judgment").count() == len(judgments)
    raws = page.locator(".card.judgment pre.judge-raw").all_inner_texts()
    assert set(raws) == {"(not recorded)"}  # the legacy format kept no raw reply


def test_legacy_replies_without_scores_are_listed_as_failures(served: str, reference_run: Path, page: Any) -> None:
    failed = sorted(r["id"] for r in _kept_evaluations(reference_run).values() if not r.get("scores"))
    assert failed  # the reference run has a few judge replies that gave no score
    page.goto(served + "/r/0/failures")
    section = page.locator('section.cause[data-cause="no error recorded"]')
    # identical errors (legacy records have none) are one row, counted, its records listed
    assert section.locator("h2").inner_text() == f"no error recorded ({len(failed)} failed calls, 1 distinct error)"
    assert section.locator("td.times").all_inner_texts() == [str(len(failed))]
    assert sorted(section.locator("span.record-id").all_inner_texts()) == failed
