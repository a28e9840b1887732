"""The plan sizes answers and datapoints by the length the task's output description names
("one or two sentences", "150-200 words"), not by a phase-wide guess: the quick start's
answers were planned at its students' max_tokens (80) and came out at 45 tokens."""

from __future__ import annotations

from pathlib import Path

import pytest
from coeval.phase_ids import DATA_GENERATION, EVALUATION, RESPONSE_COLLECTION
from coeval.planning.cost.requests import expected_output_tokens, typical_item_tokens
from coeval.prompts.lengths import typical_words

from .pipeline_support import make_config, mock_model, task


@pytest.mark.parametrize(
    ("description", "words"),
    [
        ("A correct, direct answer of one or two sentences.", 27.0),
        ("One correct, complete sentence.", 18.0),
        ("2-3 sentences", 45.0),
        ("3 to 5 sentences of plain prose", 72.0),
        ("A reply of 150-200 words", 175.0),
        ("At least 80 words.", 100.0),
        ("No more than 40 words.", 30.0),
        ("Two paragraphs", 180.0),
        ("A single word: the label.", 1.0),
        ("A short essay on the topic", 400.0),
        ("A paragraph explaining the fix", 90.0),
    ],
)
def test_the_typical_length_an_output_description_names(description: str, words: float) -> None:
    assert typical_words(description) == words


@pytest.mark.parametrize("description", ["A JSON object with the fields asked for.", "An answer in plain words.",
                                         "The label: positive or negative."])
def test_a_description_that_names_no_length_gives_none(description: str) -> None:
    assert typical_words(description) is None


def test_answers_and_datapoints_are_planned_at_the_named_length(tmp_path: Path) -> None:
    named = task("named", output_description="A reply of 150-200 words.")
    unnamed = task("unnamed", output_description="A helpful reply.")
    cfg = make_config(tmp_path, [mock_model("m")], [named, unnamed])
    model = cfg.models[0]
    tasks = {t.name: t for t in cfg.tasks}
    answer = 175 * 1.33 + 4
    assert typical_item_tokens(tasks["named"]) == pytest.approx((answer / 2, answer))
    assert expected_output_tokens(RESPONSE_COLLECTION, tasks["named"], model) == pytest.approx(answer)
    assert expected_output_tokens(DATA_GENERATION, tasks["named"], model) == pytest.approx(answer * 1.5 + 12)
    # no length named: the phases' typical sizes, as before
    assert typical_item_tokens(tasks["unnamed"]) is None
    assert expected_output_tokens(RESPONSE_COLLECTION, tasks["unnamed"], model) == 300
    assert expected_output_tokens(DATA_GENERATION, tasks["unnamed"], model) == 400
    # the judges' replies do not depend on the answers' length
    assert (expected_output_tokens(EVALUATION, tasks["named"], model)
            == expected_output_tokens(EVALUATION, tasks["unnamed"], model))


def test_max_tokens_still_caps_the_named_length(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, [mock_model("m", max_tokens=100)], [task("long", output_description="A reply of 150-200 words.")])
    assert expected_output_tokens(RESPONSE_COLLECTION, cfg.tasks[0], cfg.models[0]) == 100
