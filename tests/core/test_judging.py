"""Judge replies: tolerant of form, never guessing a score."""

from __future__ import annotations

import pytest
from coeval.prompts.errors import OutputParseError
from coeval.prompts.judging import extract_json, normalize_score, parse_per_factor, parse_single

FACTORS = ["accuracy", "brevity"]


@pytest.mark.parametrize(
    "reply",
    [
        '{"accuracy": "High", "brevity": "Low"}',
        '{"scores": {"accuracy": "high", "brevity": "LOW"}}',
        '```json\n{"accuracy": "High", "brevity": "Low"}\n```',
        'Here is my assessment:\n```\n{"scores": {"Accuracy": "High", "Brevity": "low."}}\n```\nThanks!',
        'Sure. {"accuracy": "**High**", "brevity": " Low "} Hope that helps.',
        '[{"accuracy": "High", "brevity": "Low"}]',
        '{"accuracy": {"score": "High", "reason": "right"}, "brevity": {"score": "Low"}}',
        "accuracy: High\nbrevity: Low",
        "- **Accuracy**: high\n- Brevity - low",
    ],
)
def test_single_mode_reads_every_reasonable_form(reply):
    assert parse_single(reply, FACTORS) == {"accuracy": "High", "brevity": "Low"}


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "I cannot grade this.",
        '{"accuracy": "High"}',  # a factor missing
        '{"accuracy": "Very High", "brevity": "Low"}',
        '{"accuracy": "4", "brevity": "Low"}',
        '{"accuracy": 1, "brevity": "Low"}',
        '{"accuracy": "N/A", "brevity": "Low"}',
        "accuracy: High\naccuracy: Low\nbrevity: Low",  # conflicting
        "accuracy: excellent\nbrevity: Low",
    ],
)
def test_single_mode_never_guesses(reply):
    with pytest.raises(OutputParseError):
        parse_single(reply, FACTORS)


@pytest.mark.parametrize(
    "reply, expected",
    [
        ("High", "High"),
        ("medium.", "Medium"),
        ("**LOW**", "Low"),
        ('"High"', "High"),
        ('{"score": "medium"}', "Medium"),
        ('{"brevity": "Low"}', "Low"),
        ("```json\n{\"score\": \"High\"}\n```", "High"),
        ("After reading the answer carefully, my rating is: High", "High"),
        ("Score: Medium\nThe answer is mostly right.", "Medium"),
    ],
)
def test_per_factor_reads_a_single_clear_score(reply, expected):
    assert parse_per_factor(reply, "brevity") == expected


@pytest.mark.parametrize("reply", ["", "Somewhere between High and Medium", "Good", "5/10", '{"score": "great"}',
                                   "highly relevant"])
def test_per_factor_fails_when_the_score_is_absent_or_ambiguous(reply):
    with pytest.raises(OutputParseError):
        parse_per_factor(reply, "brevity")


def test_normalize_score_is_strict_about_the_word():
    assert normalize_score(" high! ") == "High"
    for bad in ("higher", "lowish", "H", None, 0.5):
        with pytest.raises(OutputParseError):
            normalize_score(bad)


def test_extract_json_finds_an_object_inside_prose_and_fails_without_one():
    assert extract_json('prefix {"a": {"b": [1, 2]}} suffix') == {"a": {"b": [1, 2]}}
    with pytest.raises(OutputParseError):
        extract_json("no json here")
