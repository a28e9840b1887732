"""The Label page of ``coeval view --label me`` in headless Chromium, against a real server
process: labels given by keyboard land in human_labels.jsonl and the page moves on; POSTs
from anywhere but the viewer's own page are refused; without --label there is no route."""

from __future__ import annotations

import http.client
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from coeval_testing.synthetic import SyntheticSpec, write_synthetic_run

from tests.analysis.viewer_wait import serve_view

pytestmark = [pytest.mark.browser, pytest.mark.slow]

KEYS = ["3", "2", "l"]  # High, Medium, Low (keys 1-3 or l/m/h)
LEVEL_OF = {"3": "High", "2": "Medium", "l": "Low", "1": "Low", "m": "Medium", "h": "High"}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("label")
    return write_synthetic_run(root / "labelled", SyntheticSpec(datapoints_per_teacher=2))


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return {**os.environ, "COEVAL_VIEW_CACHE": str(tmp_path_factory.mktemp("cache"))}


@pytest.fixture(scope="module")
def labelling(run: Path, env: dict[str, str]) -> Iterator[str]:
    yield from serve_view(["--run", str(run), "--label", "me"], env)


@pytest.fixture(scope="module")
def read_only(run: Path, env: dict[str, str]) -> Iterator[str]:
    yield from serve_view(["--run", str(run)], env)


def _post(url: str, body: Any, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    host_port = url.removeprefix("http://")
    conn = http.client.HTTPConnection(host_port, timeout=30)
    try:
        data = json.dumps(body).encode()
        conn.request("POST", "/r/0/label", body=data, headers={"Content-Type": "application/json", **headers})
        reply = conn.getresponse()
        text = reply.read()
        if reply.getheader("Content-Type", "").startswith("application/json"):
            return reply.status, json.loads(text or b"{}")
        return reply.status, {"error": text.decode()}  # the viewer's guard answers in plain text
    finally:
        conn.close()


def _labels(run: Path) -> list[dict[str, Any]]:
    path = run / "human_labels.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _unit(page: Any) -> dict[str, Any]:
    return dict(json.loads(page.locator("script#unit").text_content()))


def test_label_three_answers_by_keyboard(labelling: str, run: Path, page: Any) -> None:
    page.goto(f"{labelling}/r/0/label")
    assert "0 human labels on 0 answers" in page.locator("#labels-line").inner_text()
    seen = []
    for n in range(3):
        unit = _unit(page)
        seen.append(unit)
        factors = page.locator("tr.factor").evaluate_all("rows => rows.map(r => r.dataset.factor)")
        assert factors == ["accuracy", "clarity", "depth"] or factors == ["accuracy", "tone"]
        assert page.locator("#answer").text_content()
        assert f"Prompt {unit['datapoint_id']}" in page.content() and "Reference." in page.content()
        assert unit["student"] not in page.locator("body").inner_text()  # labels are blind
        assert page.locator("#mine").text_content() == str(len(_labels(run)))
        with page.expect_navigation():
            for i, _f in enumerate(factors):
                page.keyboard.press(KEYS[(n + i) % len(KEYS)])
        written = [r for r in _labels(run) if (r["datapoint_id"], r["student"]) == (unit["datapoint_id"],
                                                                                     unit["student"])]
        assert sorted((r["factor"], r["level"]) for r in written) == sorted(
            (f, LEVEL_OF[KEYS[(n + i) % len(KEYS)]]) for i, f in enumerate(factors)
        )
        assert {r["labeler"] for r in written} == {"me"} and all(r["answer_sha256"] == unit["answer_sha256"]
                                                                 for r in written)
    # the page advanced each time to an answer not labelled yet
    after = _unit(page)
    keys = [(u["datapoint_id"], u["student"]) for u in [*seen, after]]
    assert len(set(keys)) == 4
    assert len({(r["datapoint_id"], r["student"]) for r in _labels(run)}) == 3


def test_posts_from_elsewhere_are_refused(labelling: str, run: Path) -> None:
    before = (run / "human_labels.jsonl").read_bytes() if (run / "human_labels.jsonl").exists() else b""
    host = labelling.removeprefix("http://")
    unit = {"datapoint_id": "task-1__tea-x__00001", "student": "stu-a", "levels": {"accuracy": "High"}}
    assert _post(labelling, unit, {"Origin": "http://evil.example"})[0] == 403
    assert _post(labelling, unit, {})[0] == 403  # no Origin: not the viewer's page
    assert _post(labelling, unit, {"Host": "evil.example", "Origin": "http://evil.example"})[0] == 421
    assert _post(labelling, unit, {"Host": f"attacker.test:{host.split(':')[1]}",
                                   "Origin": f"http://attacker.test:{host.split(':')[1]}"})[0] == 421
    status, reply = _post(labelling, {**unit, "levels": {"accuracy": "Great"}}, {"Origin": labelling})
    assert status == 400 and "allowed: Low, Medium, High" in reply["error"]
    after = (run / "human_labels.jsonl").read_bytes() if (run / "human_labels.jsonl").exists() else b""
    assert after == before


def test_no_label_route_without_label(read_only: str) -> None:
    conn = http.client.HTTPConnection(read_only.removeprefix("http://"), timeout=30)
    conn.request("GET", "/r/0/label")
    assert conn.getresponse().status == 404
    conn.close()
    unit = {"datapoint_id": "task-1__tea-x__00001", "student": "stu-a", "levels": {"accuracy": "High"}}
    assert _post(read_only, unit, {"Origin": read_only})[0] == 404
