"""Each built-in item check: examples it must reject and good items (non-English text,
code, one-letter and numeric answers) it must accept; the false-rejection rate on the
ingested benchmark fixtures; config switches; registration through the plugin hook."""

from __future__ import annotations

import pytest
from coeval.phases.base import PhaseError
from coeval.phases.item_gate import gate_for
from coeval.plugins.manager import registries
from coeval.quality import Candidate, QualityRejection
from coeval.quality.checks import implied_min_words

from tests.core.quality_support import benchmark_false_rejections, gate, make_task, rejection

GOOD = [
    ("What is the capital of France?", "The capital of France is Paris."),
    ("¿Cuál es la capital de Perú?", "La capital de Perú es Lima."),
    ("日本の首都はどこですか？", "日本の首都は東京です。"),
    ("Какая столица Казахстана?", "Столица Казахстана — Астана."),
    ("Write a Python function that returns the square of x.", "def square(x):\n    return x * x"),
    ("Which option is correct? A) 3 B) 4 C) 5", "B"),
    ("What is 17 + 25?", "42"),
    ("Name the C statement that ends a loop early.", "break;"),
]


@pytest.mark.parametrize(("prompt", "response"), GOOD)
def test_good_items_pass_every_check(prompt: str, response: str) -> None:
    assert rejection(gate(), make_task(output_description="A correct answer."), prompt, response) is None


@pytest.mark.parametrize(("response", "rule"), [
    ("   ", "reference_empty"), (");{", "reference_empty"), ("{2}", "reference_empty"), ("...", "reference_empty"),
    ("[]", "reference_empty"), ("value_one", "template_echo"), ("What an excellent answer does.", "template_echo"),
])
def test_junk_references_are_rejected(response: str, rule: str) -> None:
    assert rejection(gate(), make_task(), "What is the capital of Chile?", response) == rule


def test_short_reference_against_output_description() -> None:
    task = make_task(output_description="An essay of at least 200 words.")
    assert implied_min_words(task.output_description) == 200
    assert rejection(gate(), task, "Discuss the causes of the First World War.", "Nationalism.") == "reference_short"
    assert rejection(gate(), task, "Discuss the causes of the First World War.", " ".join(["word"] * 60)) is None
    assert implied_min_words("One sentence naming the capital.") == 1
    assert implied_min_words("2-3 sentences") == 20


def test_copying_the_task_description_or_instructions_is_rejected() -> None:
    task = make_task(description="Translate a short English sentence about travel into idiomatic French for a phrasebook.")
    copied = "Translate a short English sentence about travel into idiomatic French for a phrasebook."
    assert rejection(gate(), task, copied, "Voici la traduction.") == "copies_task"
    instr = "The item has two parts: prompt, the complete input a model under test will receive"
    assert rejection(gate(), task, instr, "Bonjour.") == "copies_task"
    assert rejection(gate(), task, "Translate: Where is the train station?", "Où est la gare ?") is None


def test_a_prompt_that_contains_its_reference_is_rejected() -> None:
    prompt = "Explain photosynthesis. Answer: plants turn light into chemical energy."
    assert rejection(gate(), make_task(), prompt, "Plants turn light into chemical energy.") == "reference_leak"
    # a one-letter answer that also appears among the options is not a leak
    assert rejection(gate(), make_task(), "Pick one: A) red B) blue", "A") is None


def test_near_duplicates_of_the_same_task_and_teacher_are_rejected() -> None:
    g, task = gate(), make_task()
    assert rejection(g, task, "What is the capital city of the country Chile in South America?", "Santiago.") is None
    again = "What is the capital city of the country Chile in South America ?!"
    assert rejection(g, task, again, "Santiago.") == "near_duplicate"
    assert rejection(g, task, again, "Santiago.", teacher="other") is None  # another teacher
    assert rejection(g, task, "What is the capital city of the country Peru in South America?", "Lima.") is None


def test_near_duplicate_threshold_is_configurable() -> None:
    g = gate({"near_duplicate": {"threshold": 0.3}})
    task = make_task()
    assert rejection(g, task, "What is the capital city of the country Chile in South America?", "Santiago.") is None
    assert rejection(g, task, "What is the capital city of the country Peru in South America?", "Lima.") == "near_duplicate"


def test_checks_can_be_switched_off() -> None:
    assert rejection(gate({"reference_empty": False}), make_task(), "Q?", "{2}") is None


def check_map(kind: str, value: dict, seeds: tuple = (), settings: dict | None = None) -> str | None:
    try:
        gate(settings).check(Candidate(kind, make_task(), "t", value, seeds))
    except QualityRejection as exc:
        return exc.rule
    return None


def test_attribute_maps_and_rubrics() -> None:
    assert check_map("target", {"dimension_name": ["value_one", "value_two"]}) == "template_echo"
    assert check_map("rubric", {"criterion_name": "What an excellent answer does."}) == "template_echo"
    # a small model's glued variants of the examples (seen with SmolLM2-135M)
    assert check_map("rubric", {"criterion_nameone_criterion_nametwo": "Meets all criteria."}) == "template_echo"
    assert check_map("target", {"dimension_names": ["easy", "hard"]}) == "template_echo"
    assert check_map("rubric", {"value_for_money": "Says what the item costs."}) is None
    assert check_map("target", {"difficulty": []}) == "map_entries"
    assert check_map("target", {"difficulty": ["easy", "Easy "]}) == "map_entries"
    assert check_map("rubric", {"accuracy": "  "}) == "map_entries"
    assert check_map("target", {"difficulty": ["easy", "hard"], "région": ["Europe", "Asie"]}) is None
    assert check_map("rubric", {"accuracy": "Names the right capital."}) is None
    assert check_map("target", {"difficulty": ["easy"]}, seeds=({"topic": ["history"]},)) is None  # off by default
    assert check_map("target", {"difficulty": ["easy"]}, seeds=({"topic": ["history"]},),
                     settings={"map_keeps_seed": True}) == "map_keeps_seed"


@pytest.mark.parametrize("benchmark", ["mmlu", "gsm8k", "humaneval"])
def test_no_false_rejection_on_ingested_benchmark_items(benchmark: str) -> None:
    checked, rejected = benchmark_false_rejections(benchmark)
    assert checked > 0
    assert rejected == {}


def test_builtin_checks_are_registered_through_the_hook() -> None:
    entries = {e.name: e for e in registries().item_checks}
    assert set(entries) >= {"template_echo", "reference_empty", "reference_short", "copies_task", "reference_leak",
                            "near_duplicate", "map_entries", "map_keeps_seed"}
    assert {e.plugin for e in entries.values()} == {"core"}


def test_an_unknown_check_in_the_config_is_a_clear_error(tmp_path) -> None:
    import attrs
    from coeval.phases.base import RunView
    from coeval.storage.run_folder import RunFolder

    from tests.core.pipeline_support import make_config, mock_model, task

    # a config validated while a plugin with that check was installed, run without it
    cfg = make_config(tmp_path, [mock_model("m")], [task()])
    cfg = attrs.evolve(cfg, experiment=attrs.evolve(cfg.experiment, item_checks={"no_such_check": False}))
    with pytest.raises(PhaseError, match=r"experiment\.item_checks: unknown check 'no_such_check'"):
        gate_for(RunView(cfg, RunFolder(tmp_path / "r"), registries()))


def test_a_misspelt_check_in_the_yaml_is_a_validation_error_with_exit_code_2(tmp_path) -> None:
    import yaml
    from click.testing import CliRunner
    from coeval.cli.main import cli

    from tests.core.pipeline_support import mock_model, task

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({
        "models": [mock_model("m")], "tasks": [task()],
        "experiment": {"id": "iq", "storage_folder": str(tmp_path / "runs"), "probe_mode": "disable",
                       "item_checks": {"near_duplikate": False}},
    }, sort_keys=False))
    out = CliRunner().invoke(cli, ["run", "--config", str(path)])
    assert out.exit_code == 2
    assert "V-38 experiment.item_checks.near_duplikate: unknown item check 'near_duplikate'" in out.output
    assert "did you mean 'near_duplicate'" in out.output
    assert "Traceback" not in out.output
