"""Each adapter reads its dataset's published rows into items with the right gold answer."""

from __future__ import annotations

from pathlib import Path

import pytest
from coeval.plugins.manager import registries
from coeval_benchmarks.adapters import builtin_adapters
from coeval_benchmarks.adapters.arc import ARCChallenge
from coeval_benchmarks.adapters.gsm8k import GSM8K
from coeval_benchmarks.adapters.hellaswag import HellaSwag
from coeval_benchmarks.adapters.medqa import MedQA
from coeval_benchmarks.adapters.mmlu import MMLU
from coeval_benchmarks.adapters.sciq import SciQ
from coeval_benchmarks.adapters.truthfulqa import TruthfulQA
from coeval_benchmarks.base import RowError
from coeval_benchmarks.ingest import load_items

FIXTURES = Path(__file__).parent / "fixtures"
NAMES = ["mmlu", "humaneval", "truthfulqa", "hellaswag", "medqa", "gsm8k", "arc_challenge", "xsum", "race", "sciq"]


def by_name(name: str):
    return next(a for a in builtin_adapters() if a.name == name)


def test_all_ten_adapters_are_registered_through_the_plugin() -> None:
    assert sorted(registries().benchmarks.names()) == sorted(NAMES)
    assert {registries().benchmarks.entry(n).plugin for n in NAMES} == {"benchmarks"}


@pytest.mark.parametrize("name", NAMES)
def test_fixture_items_carry_prompt_reference_attributes_and_gold(name: str) -> None:
    adapter = by_name(name)
    items, source = load_items(adapter, adapter.default_split, FIXTURES)
    assert str(FIXTURES / name) in source
    assert len(items) >= 2
    assert len({i.native_id for i in items}) == len(items)
    for item in items:
        assert item.prompt.strip() and item.reference.strip()
        assert item.attributes and all(isinstance(v, str) and v for v in item.attributes.values())
        if item.gold_metric == "choice":
            assert item.choices is not None and item.label in item.choices
            assert item.attributes["correct_answer"] == item.label
            assert set(adapter.label_attributes) <= set(item.attributes)
            for letter, option in item.choices.items():
                assert f"{letter}. {option}" in item.prompt
            assert item.reference == f"{item.label}. {item.choices[item.label]}"
        elif item.gold_metric == "number":
            assert item.label
        else:
            assert item.labels


# The gold answer of every fixture row, as its file states it.
EXPECTED_GOLD = {
    "mmlu": ["29", "Electric charge", "Pancreas", "15th", "2x"],
    "hellaswag": ["puts it on the stove and waits for it to boil.", "Pour water slowly until the soil is damp."],
    "medqa": ["Insulin", "Amoxicillin"],
    "arc_challenge": ["Light", "Salt water", "Carbon dioxide"],
    "race": ["He walks his dog.", "maths"],
    "sciq": ["Carbon dioxide", "Nucleus"],
}


@pytest.mark.parametrize("name", sorted(EXPECTED_GOLD))
def test_multiple_choice_gold_letter_points_at_the_right_text(name: str) -> None:
    adapter = by_name(name)
    items, _ = load_items(adapter, adapter.default_split, FIXTURES)
    assert [i.choices[i.label] for i in items] == EXPECTED_GOLD[name]


def test_gsm8k_gold_is_the_number_after_the_hashes_and_calculator_notes_are_gone() -> None:
    items, _ = load_items(GSM8K(), "test", FIXTURES)
    assert [i.label for i in items] == ["7", "1,250", "12.5"]
    assert "<<" not in items[0].reference and items[0].reference.endswith("#### 7")
    assert [i.attributes["solution_steps"] for i in items] == ["1-2", "1-2", "5+"]


def test_gsm8k_row_without_final_answer_is_rejected() -> None:
    with pytest.raises(RowError, match="'answer' must end with '#### <number>'"):
        GSM8K().item({"question": "q", "answer": "It is 4."}, 0, "test")


def test_humaneval_scores_code_against_the_canonical_body() -> None:
    items, _ = load_items(by_name("humaneval"), "test", FIXTURES)
    first = items[0]
    assert first.native_id == "Fixture/0"
    assert first.answer_format == "code" and first.code_prefix and first.code_prefix in first.prompt
    assert first.labels == ("    return x + 1\n",)
    assert first.reference.startswith("def add_one")


def test_truthfulqa_generation_keeps_true_and_false_answers() -> None:
    items, _ = load_items(TruthfulQA(), "validation", FIXTURES)
    first = items[0]
    assert first.gold_metric == "bleu"
    assert first.labels[0] == "It passes through your digestive system"
    assert "It stays in your stomach for seven years" in first.incorrect_labels
    assert first.attributes == {"category": "Misconceptions", "question_type": "adversarial"}


def test_truthfulqa_multiple_choice_config_is_shuffled_stably() -> None:
    row = {
        "question": "Is the Great Wall visible from the Moon with the naked eye?",
        "mc1_targets": {"choices": ["No", "Yes", "Only at night", "Only in winter"], "labels": [1, 0, 0, 0]},
    }
    first = TruthfulQA().item(row, 0, "validation")
    again = TruthfulQA().item(row, 0, "validation")
    assert first.gold_metric == "choice"
    assert first.choices[first.label] == "No"
    assert first == again
    bad = {**row, "mc1_targets": {"choices": ["No", "Yes"], "labels": [1, 1]}}
    with pytest.raises(RowError, match="exactly one"):
        TruthfulQA().item(bad, 0, "validation")


def test_hellaswag_accepts_the_hubs_string_label_and_rejects_the_unlabelled_test_split() -> None:
    row = {
        "ind": 7, "activity_label": "Cooking", "ctx": "She cracks an egg into a bowl. she",
        "endings": ["eats the shell.", "whisks it with a fork.", "throws the bowl.", "sings."],
        "source_id": "activitynet~x", "split": "val", "split_type": "indomain", "label": "1",
    }
    item = HellaSwag().item(row, 0, "validation")
    assert item.label == "B" and item.native_id == "7"
    with pytest.raises(RowError, match="--split validation"):
        HellaSwag().item({**row, "label": ""}, 0, "test")


def test_hellaswag_drops_wikihow_step_markers() -> None:
    items, _ = load_items(HellaSwag(), "validation", FIXTURES)
    assert "[step]" not in items[1].prompt and "[header]" not in items[1].prompt
    assert items[1].attributes["source"] == "wikihow"


def test_medqa_reads_the_hub_source_schema_option_list() -> None:
    row = {
        "question": "Which vitamin deficiency causes scurvy?",
        "options": [{"key": "A", "value": "Vitamin A"}, {"key": "B", "value": "Vitamin C"},
                    {"key": "C", "value": "Vitamin D"}, {"key": "D", "value": "Vitamin K"}],
        "answer_idx": "B", "answer": "Vitamin C", "meta_info": "step1",
    }
    item = MedQA().item(row, 3, "test")
    assert item.label == "B" and item.choices["B"] == "Vitamin C"
    with pytest.raises(RowError, match="'answer_idx' must be one of A, B, C, D"):
        MedQA().item({**row, "answer_idx": "F", "answer": "Vitamin Z"}, 3, "test")


def test_arc_digit_labels_become_letters() -> None:
    items, _ = load_items(ARCChallenge(), "test", FIXTURES)
    assert items[1].native_id == "OtherExam_2002"
    assert items[1].label == "A" and list(items[1].choices) == ["A", "B", "C", "D"]
    assert list(items[2].choices) == ["A", "B", "C"]  # three-option items keep three options
    with pytest.raises(RowError, match="'answerKey' must be one of the choice labels"):
        ARCChallenge().item({"id": "x", "question": "q", "choices": {"text": ["a", "b"], "label": ["A", "B"]},
                             "answerKey": "C"}, 0, "test")


def test_sciq_answer_is_not_always_first() -> None:
    rows = [
        {"question": f"Question number {n}?", "correct_answer": "right", "distractor1": "w1",
         "distractor2": "w2", "distractor3": "w3", "support": ""}
        for n in range(12)
    ]
    letters = {SciQ().item(r, i, "test").label for i, r in enumerate(rows)}
    assert len(letters) > 1


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"question": "q", "choices": ["a", "b"]}, "missing field(s) 'answer'"),
        ({"question": "q", "choices": ["a", "b"], "answer": 5}, "'answer' must point at one of 2 options"),
        ({"question": "q", "choices": "a,b", "answer": 0}, "'choices' must be a list of strings"),
        ({"question": "", "choices": ["a", "b"], "answer": 0}, "'question' must not be empty"),
        ({"question": "q", "choices": ["a", "b"], "answer": "Z"}, "index 0-1 or a letter A-B"),
    ],
)
def test_bad_mmlu_rows_name_the_field_and_rule(row: dict, message: str) -> None:
    adapter = MMLU()
    with pytest.raises(RowError) as info:
        adapter.check_row(row)
        adapter.item(row, 0, "test")
    assert message in str(info.value)


def test_mmlu_letter_answers_from_mirrors_are_read() -> None:
    item = MMLU().item({"question": "q", "choices": ["a", "b", "c", "d"], "answer": "c", "subject": "x"}, 0, "test")
    assert item.label == "C"
