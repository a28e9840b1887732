"""V-25's fix line offers a model name only when the quota's name is a likely typo of it
(a few letters off); otherwise it lists the config's models."""

from __future__ import annotations

from pathlib import Path

import pytest
from coeval.config.names import close_name
from coeval.plugins.config_loading import validate_config

MODELS = ["smollm2-greedy", "smollm2-warm", "smollm2-hot", "gpt-4o"]


@pytest.mark.parametrize(("word", "expected"), [
    ("smollm2-135m", None),     # the model id, not a config name: no model of the config is meant
    ("gpt-4o-mini", None),      # another model of the same maker
    ("smollm2-warn", "smollm2-warm"),
    ("smolm2-greedy", "smollm2-greedy"),
    ("GPT-4O", "gpt-4o"),
    ("gpt4o", "gpt-4o"),
    ("smollm2-hto", "smollm2-hot"),  # two letters swapped
])
def test_only_a_close_name_is_offered(word: str, expected: str | None) -> None:
    assert close_name(word, MODELS) == expected


def _fix_of(tmp_path: Path, quota_name: str) -> str:
    models = "\n".join(f"  - {{name: {m}, interface: mock, roles: [teacher, student, judge]}}" for m in MODELS)
    path = tmp_path / "exp.yaml"
    path.write_text(f"models:\n{models}\ntasks:\n  - name: qa\n    description: Answer.\n"
                    "    target_attributes: {topic: [a]}\n    rubric: {correct: Right.}\n    sampling: {total: 1}\n"
                    f"experiment:\n  id: q\n  storage_folder: ./runs\n  quota:\n    {quota_name}: {{max_calls: 5}}\n",
                    encoding="utf-8")
    issues = [i for i in validate_config(path) if i.rule == "V-25"]
    assert len(issues) == 1
    return issues[0].fix


def test_v25_lists_the_models_for_an_unrelated_name(tmp_path: Path) -> None:
    assert _fix_of(tmp_path, "smollm2-135m") == "use one of: smollm2-greedy, smollm2-warm, smollm2-hot, gpt-4o"


def test_v25_offers_the_model_a_typo_meant(tmp_path: Path) -> None:
    assert _fix_of(tmp_path, "smollm2-warn") == "replace 'smollm2-warn' with 'smollm2-warm'"
