"""Answer extraction over the forms models really write."""

from __future__ import annotations

from decimal import Decimal

import pytest
from coeval_benchmarks.extraction import extract_choice, extract_code, extract_number, parse_number

OPTIONS = {"A": "London", "B": "Paris", "C": "Mercury", "D": "Venus"}


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("B", "B"),
        ("b", "B"),
        ("B.", "B"),
        ("(B)", "B"),
        ("[C]", "C"),
        ("**C**", "C"),
        ("`D`", "D"),
        ("The answer is B.", "B"),
        ("The answer is (b).", "B"),
        ("Answer: b", "B"),
        ("answer: a.", "A"),
        ("Final answer: **D**", "D"),
        ("B) Paris", "B"),
        ("B. Paris is the capital of France.", "B"),
        ("(A) London, because it is the largest city.", "A"),
        ("I think the correct option is (D) because of the atmosphere.", "D"),
        ("The correct choice would be C", "C"),
        ("Option C", "C"),
        ("I choose A.", "A"),
        ("I would go with B here.", "B"),
        ("Let me think.\nLondon is not it, Mercury is a planet.\n\nB", "B"),
        ("The correct answer is:\n\nC", "C"),
        ("Options A and B are wrong; the answer is D", "D"),
        ("The answer is D. Option A is wrong because it is older.", "D"),
        ("A cat is not a planet, so the answer is C", "C"),
        ("It is Paris.", "B"),  # the text of exactly one option
        ("The final answer is $\\boxed{B}$.", "B"),  # LaTeX math around the letter
        ("Final Answer: $\\boxed{\\text{C}}$", "C"),
        ("C is correct.", "C"),
        ("**D** is the correct answer: Venus is the hottest planet.", "D"),
        ("A is wrong because London is in England. B is correct.", "B"),
    ],
)
def test_choice_forms(reply: str, expected: str) -> None:
    assert extract_choice(reply, "ABCD", OPTIONS) == expected


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "   ",
        "The answer is a bit tricky to pin down.",  # lower-case 'a' is the article here
        "I am not sure.",
        "E",  # not an option of a four-option item
        "Either (A) or (B) could be right.",  # two options named alike: no single answer
        "Both London and Paris are cities.",  # quotes two option texts
        "A is correct if you count England, but B is correct for France.",  # two verdicts
    ],
)
def test_choice_without_a_single_answer_is_none(reply: str) -> None:
    assert extract_choice(reply, "ABCD", OPTIONS) is None


def test_choice_respects_the_items_letters() -> None:
    assert extract_choice("The answer is E.", "ABCDE") == "E"
    assert extract_choice("The answer is E.", "ABCD") is None


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("#### 42", "42"),
        ("She has 12 - 5 = 7 pens left.\n#### 7", "7"),
        ("#### **12**", "12"),
        ("the result is 42.0", "42"),
        ("$1,234", "1234"),
        ("Each ticket costs $250, so 5 tickets cost $1,250.", "1250"),
        ("The answer is 42. I hope this helps with your other 3 questions.", "42"),
        ("She has 5 apples and 3 pears, so 8 fruits in total.", "8"),
        ("Total: $1,000.50 after 2 days", "1000.50"),
        ("\\boxed{17}", "17"),
        ("So the final answer is \\boxed{-3}.", "-3"),
        ("The answer is −7", "-7"),
        ("-5", "-5"),
        ("It grew by 12.5%", "12.5"),
        ("Counting 3, 4 and 5 gives 5", "5"),
        # a stated answer written as its calculation: the result counts, not the first operand
        ("So the answer is 48 + 24 = 72.", "72"),
        ("Total: 3 x $4 = $12", "12"),
        ("The answer is 12 - 4 = 8 apples", "8"),
        ("The answer is 6 * 7 / 2 = 21", "21"),
    ],
)
def test_number_forms(reply: str, expected: str) -> None:
    assert extract_number(reply) == Decimal(expected)


def test_numbers_compare_by_value() -> None:
    assert extract_number("the result is 42.0") == parse_number("42")
    assert parse_number("1,250") == Decimal(1250)


@pytest.mark.parametrize("reply", ["", "no number here", "The answer is unclear."])
def test_number_missing_is_none(reply: str) -> None:
    assert extract_number(reply) is None


def test_parse_number_rejects_words() -> None:
    assert parse_number("seven") is None
    assert parse_number("") is None
    assert parse_number(None) is None


def test_code_takes_the_python_block_without_copied_prompt_lines() -> None:
    prompt = 'def add_one(x: int) -> int:\n    """Return x plus one."""\n'
    reply = (
        "Here is the function:\n\n```python\ndef add_one(x: int) -> int:\n"
        '    """Return x plus one."""\n    return x + 1\n```\nIt adds one.'
    )
    assert extract_code(reply, prompt) == "    return x + 1"


def test_code_without_fences_is_the_whole_reply() -> None:
    assert extract_code("    return x + 1\n") == "    return x + 1"
    assert extract_code(None) == ""
