"""The records a run folder holds, field by field: the one place their field names are spelled.

Phase 3 datapoints, phase 4 responses, phase 5 evaluations, human labels and the lines of
the call ledger (``calls.jsonl``) are JSON objects on disk (docs/data-format.md). Code that
writes or reads one names its fields through the constants here (``rec[STUDENT_MODEL_ID]``),
never as string literals, and annotates a record whose kind it knows with the matching
``TypedDict``. Each ``TypedDict`` lists its fields in the order a line of ours holds them
(a record has a subsequence of them: optional fields appear only where they apply), and
``*_FIELDS`` is that order as a tuple. Old records lack fields that came later, so every
field is optional to the type checker: readers keep checking with ``.get``.

This module imports nothing of coeval, so every layer may use it.
"""

from __future__ import annotations

from typing import Any, Final, TypedDict

__all__ = [
    "ANSWER_FORMAT",
    "ANSWER_SHA256",
    "ATTEMPTS",
    "ATTEMPT_ERRORS",
    "BENCHMARK_ID",
    "BENCHMARK_NATIVE_ID",
    "BENCHMARK_SPLIT",
    "CALL_FIELDS",
    "CARRIED",
    "CARRIED_CALLS",
    "CARRIED_SPEND_USD",
    "CHECKS",
    "CHOICES",
    "CODE_PREFIX",
    "COST_USD",
    "DATAPOINT_FIELDS",
    "DATAPOINT_HASH",
    "DATAPOINT_ID",
    "END",
    "ENTRY_POINT",
    "ERROR",
    "ERROR_KIND",
    "ESTIMATE_USD",
    "EVALUATED_AT",
    "EVALUATION_FIELDS",
    "EVALUATION_MODE",
    "EVALUATOR",
    "EXECUTION",
    "FACTOR",
    "FINISH_REASON",
    "GENERATED_AT",
    "GOLD_METRIC",
    "ID",
    "INCORRECT_LABELS",
    "INPUT",
    "ITEM",
    "JUDGE_MODEL_ID",
    "LABEL",
    "LABELER",
    "LABELLED_AT",
    "LABELS",
    "LABEL_FIELDS",
    "LATENCY_MS",
    "LEDGER_CARRIED_FIELDS",
    "LEDGER_END_FIELDS",
    "LEDGER_START_FIELDS",
    "LEVEL",
    "METRICS",
    "MODEL",
    "PHASE",
    "PROMPT",
    "QUALITY_RULE",
    "RATIONALE",
    "RAW",
    "REFERENCE_RESPONSE",
    "REQUEST",
    "RESPONSE",
    "RESPONSE_FIELDS",
    "RESPONSE_HASH",
    "RESPONSE_ID",
    "SAMPLE",
    "SAMPLED_NUANCED_ATTRIBUTES",
    "SAMPLED_TARGET_ATTRIBUTES",
    "SCORES",
    "SENT",
    "SETTLED",
    "START",
    "STATUS",
    "STUDENT",
    "STUDENT_MODEL_ID",
    "TASK_ID",
    "TEACHER_MODEL_ID",
    "TESTS",
    "TEXT_REPLACED",
    "TOKENS_PER_S",
    "USAGE",
    "CallFields",
    "DatapointRecord",
    "EvaluationRecord",
    "LabelRecord",
    "LedgerCarried",
    "LedgerEnd",
    "LedgerStart",
    "ResponseRecord",
]

# ---- ids every record of phases 3-5 starts with ----------------------------------------
ID: Final = "id"
RESPONSE_ID: Final = "response_id"
DATAPOINT_ID: Final = "datapoint_id"
TASK_ID: Final = "task_id"
TEACHER_MODEL_ID: Final = "teacher_model_id"
STUDENT_MODEL_ID: Final = "student_model_id"
JUDGE_MODEL_ID: Final = "judge_model_id"

# ---- a datapoint's own fields (phase 3) -------------------------------------------------
SAMPLED_TARGET_ATTRIBUTES: Final = "sampled_target_attributes"
SAMPLED_NUANCED_ATTRIBUTES: Final = "sampled_nuanced_attributes"
PROMPT: Final = "prompt"
REFERENCE_RESPONSE: Final = "reference_response"
GENERATED_AT: Final = "generated_at"
#: what an ingested benchmark or a task's own data adds (the gold answers and their scoring)
BENCHMARK_ID: Final = "benchmark_id"
BENCHMARK_SPLIT: Final = "benchmark_split"
BENCHMARK_NATIVE_ID: Final = "benchmark_native_id"
GOLD_METRIC: Final = "gold_metric"
LABEL: Final = "label"
LABELS: Final = "labels"
INCORRECT_LABELS: Final = "incorrect_labels"
CHOICES: Final = "choices"
ANSWER_FORMAT: Final = "answer_format"
CODE_PREFIX: Final = "code_prefix"
TESTS: Final = "tests"
ENTRY_POINT: Final = "entry_point"

# ---- a response's own fields (phase 4) --------------------------------------------------
INPUT: Final = "input"
DATAPOINT_HASH: Final = "datapoint_hash"
RESPONSE: Final = "response"
SAMPLE: Final = "sample"

# ---- an evaluation's own fields (phase 5) -----------------------------------------------
RESPONSE_HASH: Final = "response_hash"
EVALUATOR: Final = "evaluator"
EVALUATION_MODE: Final = "evaluation_mode"
FACTOR: Final = "factor"
SCORES: Final = "scores"
RATIONALE: Final = "rationale"
EVALUATED_AT: Final = "evaluated_at"
METRICS: Final = "metrics"
CHECKS: Final = "checks"
EXECUTION: Final = "execution"

# ---- the call fields every model-call record carries, in order --------------------------
REQUEST: Final = "request"
RAW: Final = "raw"
FINISH_REASON: Final = "finish_reason"
LATENCY_MS: Final = "latency_ms"
TOKENS_PER_S: Final = "tokens_per_s"
STATUS: Final = "status"
ATTEMPTS: Final = "attempts"
USAGE: Final = "usage"
COST_USD: Final = "cost_usd"
ERROR: Final = "error"
ERROR_KIND: Final = "error_kind"
QUALITY_RULE: Final = "quality_rule"
ATTEMPT_ERRORS: Final = "attempt_errors"
#: added by the writer, last, when it replaced lone UTF-16 surrogates
TEXT_REPLACED: Final = "text_replaced"

# ---- a human label (human_labels.jsonl) -------------------------------------------------
STUDENT: Final = "student"
LEVEL: Final = "level"
LABELER: Final = "labeler"
LABELLED_AT: Final = "labelled_at"
ANSWER_SHA256: Final = "answer_sha256"

# ---- the call ledger's lines (calls.jsonl) ----------------------------------------------
START: Final = "start"
MODEL: Final = "model"
PHASE: Final = "phase"
ITEM: Final = "item"
ESTIMATE_USD: Final = "estimate_usd"
END: Final = "end"
SENT: Final = "sent"
SETTLED: Final = "settled"
CARRIED: Final = "carried"
CARRIED_CALLS: Final = "calls"
CARRIED_SPEND_USD: Final = "spend_usd"


class _Transcript(TypedDict, total=False):
    request: dict[str, str]
    raw: str | None
    finish_reason: str | None
    latency_ms: float | None
    tokens_per_s: float


class _StatusBlock(TypedDict, total=False):
    status: str
    attempts: int
    usage: dict[str, int]
    cost_usd: float | None


class _Failure(TypedDict, total=False):
    error: str
    error_kind: str
    quality_rule: str
    attempt_errors: list[str]


class _Written(TypedDict, total=False):
    text_replaced: str


class CallFields(_Transcript, _StatusBlock, _Failure, total=False):
    """What a model call adds to its record: the transcript first, the status block last
    (``storage.records.OK_TAIL`` recognises an ok record by how it ends), then what failed."""


class _DatapointHead(TypedDict, total=False):
    id: str
    task_id: str
    teacher_model_id: str
    sampled_target_attributes: dict[str, Any]
    sampled_nuanced_attributes: dict[str, Any]
    prompt: str
    reference_response: str
    generated_at: str


class _Gold(TypedDict, total=False):
    benchmark_id: str
    benchmark_split: str
    benchmark_native_id: str
    gold_metric: str
    label: str
    labels: list[str]
    incorrect_labels: list[str]
    choices: dict[str, str]
    answer_format: str
    code_prefix: str
    tests: str
    entry_point: str


class DatapointRecord(_DatapointHead, CallFields, _Gold, _Written, total=False):
    """A phase 3 line, ``phase3_datapoints/{task}.{teacher}.datapoints.jsonl``; an ingested
    benchmark's or a task's own data adds its gold fields (and has no transcript)."""


class _ResponseHead(TypedDict, total=False):
    id: str
    datapoint_id: str
    task_id: str
    teacher_model_id: str
    student_model_id: str
    input: str
    datapoint_hash: str
    response: str
    sample: int
    generated_at: str


class ResponseRecord(_ResponseHead, CallFields, _Written, total=False):
    """A phase 4 line, ``phase4_responses/{task}.{teacher}.{student}.responses.jsonl``."""


class _EvaluationHead(TypedDict, total=False):
    id: str
    response_id: str
    #: copied from the response (None where an old response lacked them)
    datapoint_id: str | None
    task_id: str | None
    teacher_model_id: str | None
    student_model_id: str | None
    judge_model_id: str
    response_hash: str
    evaluator: str
    evaluation_mode: str
    factor: str
    scores: dict[str, Any]
    rationale: dict[str, str]
    evaluated_at: str


class _EvaluatorFields(TypedDict, total=False):
    metrics: dict[str, str]
    checks: dict[str, Any]
    execution: dict[str, Any]


class EvaluationRecord(_EvaluationHead, _Transcript, _StatusBlock, _EvaluatorFields, _Failure, _Written,
                       total=False):
    """A phase 5 line, ``phase5_evaluations/{task}.{teacher}.{judge}.evaluations.jsonl``.

    A judge's record has ``evaluation_mode`` (and ``factor`` per factor), ``rationale`` and
    the transcript; a model-free one (label, metric, check, code test) has zero usage and
    its evaluator's own field (``metrics``, ``checks``, ``execution``) after ``cost_usd``.
    A plugin evaluator's fields (after ``evaluator``) are its own and not listed here."""


class LabelRecord(TypedDict, total=False):
    """A line of ``human_labels.jsonl``: one person's level of one answer on one factor."""

    id: str
    datapoint_id: str
    student: str
    factor: str
    level: str
    labeler: str
    labelled_at: str
    response_id: str
    answer_sha256: str


class LedgerStart(TypedDict):
    """A ledger line written before a call is sent."""

    start: str
    model: str
    phase: str
    item: str
    estimate_usd: float


class LedgerEnd(TypedDict, total=False):
    """A ledger line written when a call returned (``sent: false``: it never reached the
    server; ``settled``: a killed process's call closed at its estimate)."""

    end: str
    cost_usd: float | None
    sent: bool
    settled: str


class LedgerCarried(TypedDict):
    """The ledger's first line in a run made before it had one: the counts it had."""

    carried: dict[str, dict[str, float]]


#: Each kind's fields in the order a line holds them (a line has a subsequence of them).
CALL_FIELDS: Final = tuple(CallFields.__annotations__)
DATAPOINT_FIELDS: Final = tuple(DatapointRecord.__annotations__)
RESPONSE_FIELDS: Final = tuple(ResponseRecord.__annotations__)
EVALUATION_FIELDS: Final = tuple(EvaluationRecord.__annotations__)
LABEL_FIELDS: Final = tuple(LabelRecord.__annotations__)
LEDGER_START_FIELDS: Final = tuple(LedgerStart.__annotations__)
LEDGER_END_FIELDS: Final = tuple(LedgerEnd.__annotations__)
LEDGER_CARRIED_FIELDS: Final = tuple(LedgerCarried.__annotations__)
