"""The record schema (``coeval.record_schema``) is what the run writes, and the only
spelling of a record's field names in the core.

A run on the mock writes datapoints, responses, evaluations and ledger lines whose keys are
the schema's, in its order; a label saved by the labelling tool likewise. And no module of
coeval-core spells a record field as a string key of its own (the AST scan below).
"""

from __future__ import annotations

import ast
import json
import typing
from pathlib import Path
from typing import Any

import pytest
from coeval import record_schema as schema
from coeval.phase_ids import DATA_GENERATION, EVALUATION, FOLDERS, RESPONSE_COLLECTION
from coeval.storage.call_ledger import ledger_path

from tests.core.pipeline_support import folder, make_config, mock_model, run, task

CORE = Path(__file__).resolve().parents[2] / "coeval-core" / "src" / "coeval"
SCHEMA_FILE = CORE / "record_schema.py"

#: Field names that are also ordinary words of other formats in the core (template
#: variables, a judge's or teacher's reply, config keys, meta.json, status output), so a
#: string with that text is not by itself a record field: the scan leaves them out. Record
#: code still names them through the schema (``rec[PROMPT]``, ``rec[STATUS]``).
SHARED_WORDS = frozenset({
    "id", "prompt", "response", "input", "status", "error", "scores", "rationale", "factor",
    "sample", "request", "raw", "usage", "attempts", "cost_usd", "latency_ms", "tokens_per_s",
    "finish_reason", "label", "labels", "choices", "tests", "checks", "metrics", "execution",
    "evaluator", "level", "student", "model", "phase", "item", "start", "end", "sent",
    "calls", "spend_usd",
})
#: (module, field): a record field's name used for something else that happens to share it.
ALLOWED = frozenset({
    ("interfaces/mock.py", "reference_response"),  # the mock teacher's reply schema
    ("prompts/schemas.py", "reference_response"),  # a teacher reply's alternative key
    ("prompts/templates.py", "reference_response"),  # the template variable
    ("planning/cost/estimate.py", "generated_at"),  # cost_estimate.json
    ("cli/status_cmd.py", "generated_at"),  # cost_estimate.json, read back
    ("planning/__init__.py", "evaluation_mode"),  # the task's config key in the plan
    ("authoring/wizard.py", "evaluation_mode"),  # the task's config key the wizard writes
})


def _schema_fields() -> set[str]:
    return {v for k, v in vars(schema).items() if k.isupper() and isinstance(v, str)}


def _record_kinds() -> dict[str, type]:
    return {name: obj for name, obj in vars(schema).items() if typing.is_typeddict(obj)}


def _keys_in_order(line: dict[str, Any], declared: tuple[str, ...]) -> list[str]:
    """``line``'s keys as the schema orders them (unknown keys last, so they show)."""
    rank = {k: i for i, k in enumerate(declared)}
    return sorted(line, key=lambda k: rank.get(k, len(rank)))


def test_each_field_is_spelled_once_and_every_record_kind_uses_only_those() -> None:
    constants = {k: v for k, v in vars(schema).items() if k.isupper() and isinstance(v, str)}
    assert len(set(constants.values())) == len(constants), "a field name has two constants"
    assert all(name == value.upper() for name, value in constants.items() if not name.startswith("CARRIED_"))
    declared = {key for kind in _record_kinds().values() for key in kind.__annotations__}
    assert declared == set(constants.values()) - {schema.CARRIED_CALLS, schema.CARRIED_SPEND_USD}
    assert schema.RESPONSE_FIELDS[:5] == ("id", "datapoint_id", "task_id", "teacher_model_id", "student_model_id")
    # the call fields sit in each model-call record in the same order
    for fields in (schema.DATAPOINT_FIELDS, schema.RESPONSE_FIELDS, schema.EVALUATION_FIELDS):
        assert [f for f in fields if f in schema.CALL_FIELDS] == list(schema.CALL_FIELDS)


@pytest.fixture(scope="module")
def mock_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small run on the mock: a single-mode task and a per-factor task with two samples
    and a check, so every standard record shape is written."""
    checked = {"correctness": "The answer is right.",
               "has_text": {"evaluator": "regex", "params": {"pattern": r"\w"}}}
    config = make_config(tmp_path_factory.mktemp("run"), [mock_model("a", seed=1), mock_model("b", seed=2)],
                         [task("qa", total=2), task("pf", total=2, evaluation_mode="per_factor", samples=2,
                                                    rubric=checked)])
    assert run(config).exit_code == 0
    return folder(config).root


def _lines(root: Path, phase_folder: str) -> list[dict[str, Any]]:
    out = []
    for path in sorted((root / phase_folder).glob("*.jsonl")):
        out.extend(json.loads(line) for line in path.read_text().splitlines() if line.strip())
    assert out, phase_folder
    return out


CALL_TAIL = ["request", "raw", "finish_reason", "latency_ms", "status", "attempts", "usage", "cost_usd"]


@pytest.mark.parametrize(("phase", "declared", "head"), [
    (DATA_GENERATION, schema.DATAPOINT_FIELDS,
     ["id", "task_id", "teacher_model_id", "sampled_target_attributes", "prompt", "reference_response",
      "generated_at"]),
    (RESPONSE_COLLECTION, schema.RESPONSE_FIELDS,
     ["id", "datapoint_id", "task_id", "teacher_model_id", "student_model_id", "input", "datapoint_hash",
      "response", "generated_at"]),
])
def test_a_mock_runs_datapoints_and_responses_have_the_schemas_keys_in_its_order(
    mock_run: Path, phase: str, declared: tuple[str, ...], head: list[str]
) -> None:
    for line in _lines(mock_run, FOLDERS[phase]):
        assert list(line) == _keys_in_order(line, declared)
        optional = {"sample", "tokens_per_s"}
        assert [k for k in line if k not in optional] == head + CALL_TAIL


def test_a_mock_runs_evaluations_have_the_schemas_keys_in_its_order(mock_run: Path) -> None:
    ids = ["id", "response_id", "datapoint_id", "task_id", "teacher_model_id", "student_model_id",
           "judge_model_id", "response_hash", "evaluator"]
    shapes = set()
    for line in _lines(mock_run, FOLDERS[EVALUATION]):
        assert list(line) == _keys_in_order(line, schema.EVALUATION_FIELDS)
        keys = [k for k in line if k != "tokens_per_s"]
        if line["evaluator"] == "llm_judge":
            mode = ["evaluation_mode", "factor"] if "factor" in line else ["evaluation_mode"]
            assert keys == [*ids, *mode, "scores", "rationale", "evaluated_at", *CALL_TAIL]
        else:
            assert keys == [*ids, "scores", "evaluated_at", "status", "attempts", "usage", "cost_usd", "checks"]
        shapes.add((line["evaluator"], "factor" in line))
    assert shapes == {("llm_judge", False), ("llm_judge", True), ("regex", False)}


def test_a_mock_runs_ledger_lines_have_the_schemas_keys(mock_run: Path) -> None:
    kinds = set()
    for text in ledger_path(mock_run).read_text().splitlines():
        line = json.loads(text)
        if "start" in line:
            assert tuple(line) == schema.LEDGER_START_FIELDS
        else:
            assert list(line) == _keys_in_order(line, schema.LEDGER_END_FIELDS)
            assert list(line) == ["end", "cost_usd"]
        kinds.add(next(iter(line)))
    assert kinds == {"start", "end"}


def test_a_saved_human_label_has_the_schemas_keys_in_its_order(tmp_path: Path) -> None:
    from coeval_analysis.labels.human_labels import HumanLabel, save_labels

    label = HumanLabel(datapoint_id="qa__a__00001", student="b", factor="correctness", level="High",
                       labeler="ana", response_id="qa__a__00001__b", answer_sha256="0" * 64)
    assert save_labels(tmp_path, [label]) == 1
    (line,) = [json.loads(t) for t in (tmp_path / "human_labels.jsonl").read_text().splitlines()]
    assert tuple(line) == schema.LABEL_FIELDS


# ---- no second spelling -----------------------------------------------------------------


def _keyed_strings(tree: ast.AST) -> list[ast.Constant]:
    """String constants used as a key: ``x["f"]``, ``x.get("f")`` (and pop, setdefault),
    ``{"f": ...}``, ``"f" in x``."""
    out: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            out.append(node.slice)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("get", "pop", "setdefault") and node.args):
            out.append(node.args[0])
        elif isinstance(node, ast.Dict):
            out.extend(k for k in node.keys if k is not None)
        elif isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
            out.append(node.left)
    return [c for c in out if isinstance(c, ast.Constant) and isinstance(c.value, str)]


def spelled_fields(root: Path) -> list[str]:
    """``module:line: field`` for each record field of the schema spelled as a key in a
    module under ``root`` other than the schema's own."""
    guarded = _schema_fields() - SHARED_WORDS
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == SCHEMA_FILE:
            continue
        rel = path.relative_to(root).as_posix()
        for const in _keyed_strings(ast.parse(path.read_text(), str(path))):
            if const.value in guarded and (rel, const.value) not in ALLOWED:
                found.append(f"{rel}:{const.lineno}: {const.value}")
    return found


def test_no_core_module_spells_a_record_field_as_a_key() -> None:
    assert spelled_fields(CORE) == []


def test_the_scan_finds_a_field_spelled_as_a_key(tmp_path: Path) -> None:
    (tmp_path / "reader.py").write_text(
        "def teacher(rec):\n"
        "    return rec.get('teacher_model_id'), rec['judge_model_id'], {'response_hash': 1}, 'task_id' in rec\n"
        "def fine(rec):\n"
        "    return rec['prompt'], {'task': 1}, 'student_model_id'.upper()\n")
    assert spelled_fields(tmp_path) == ["reader.py:2: teacher_model_id", "reader.py:2: judge_model_id",
                                        "reader.py:2: response_hash", "reader.py:2: task_id"]
