"""The loaded run: tidy tables with integer codes and shared categories, plus data quality.

Every model name is one category of ``RunData.models`` whichever role it plays, so
"judge == student" is a comparison of codes. Response and datapoint ids are int32 codes
into ``RunData.response_ids`` / ``RunData.datapoint_ids``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["LLM_JUDGE", "DataQuality", "PhaseQuality", "RunData"]

#: ``evaluator`` of records written by a model acting as judge (old records have none).
LLM_JUDGE = "llm_judge"


@dataclass
class PhaseQuality:
    """What the loader found in one phase's JSONL files."""

    n_records: int = 0
    n_bad_lines: int = 0
    n_duplicates: int = 0
    n_failed: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "n_records": self.n_records,
            "n_bad_lines": self.n_bad_lines,
            "n_duplicates": self.n_duplicates,
            "n_failed": self.n_failed,
        }


@dataclass
class DataQuality:
    """Every record the statistics do not use, and why (reported, never silently dropped).

    Counts are of phase-5 records unless named otherwise.
    """

    n_records: int = 0  #: phase-5 lines that parsed as records
    n_bad_lines: int = 0  #: phase-5 lines that did not parse (truncated writes)
    n_duplicates: int = 0  #: records dropped because a later record had the same id
    n_superseded_failures: int = 0  #: of those, failed records whose id also has a valid record
    n_failed: int = 0  #: kept records with status failed (or no usable score)
    n_orphaned: int = 0  #: valid records whose response or student could not be resolved
    n_incomplete: int = 0  #: (response, judge) pairs lacking some LLM rubric factor
    missing_factors: dict[str, int] = field(default_factory=dict)
    n_invalid_scores: int = 0  #: score values that are neither High/Medium/Low nor a number in [0, 1]
    invalid_values: dict[str, int] = field(default_factory=dict)
    n_unknown_factor_scores: int = 0  #: LLM-judge scores for factors not in the task's rubric
    unknown_factors: dict[str, int] = field(default_factory=dict)
    n_duplicate_scores: int = 0  #: same (response, judge, factor) scored by two records: last kept
    n_failed_responses_scored: int = 0  #: valid judge records of responses whose phase-4 record failed
    #: records of models the run's config no longer has in that role (after --allow-drift)
    n_left_out_by_config: int = 0
    left_out_models: dict[str, list[str]] = field(default_factory=dict)  #: role -> models
    #: task -> teacher -> datapoints above a lowered sampling.total (left out with their records)
    left_out_datapoints: dict[str, dict[str, int]] = field(default_factory=dict)
    phase3: PhaseQuality = field(default_factory=PhaseQuality)
    phase4: PhaseQuality = field(default_factory=PhaseQuality)

    def as_dict(self) -> dict[str, Any]:
        return {
            "n_records": self.n_records,
            "n_bad_lines": self.n_bad_lines,
            "n_duplicates": self.n_duplicates,
            "n_superseded_failures": self.n_superseded_failures,
            "n_failed": self.n_failed,
            "n_orphaned": self.n_orphaned,
            "n_incomplete": self.n_incomplete,
            "missing_factors": dict(self.missing_factors),
            "n_invalid_scores": self.n_invalid_scores,
            "invalid_values": dict(self.invalid_values),
            "n_unknown_factor_scores": self.n_unknown_factor_scores,
            "unknown_factors": dict(self.unknown_factors),
            "n_duplicate_scores": self.n_duplicate_scores,
            "n_failed_responses_scored": self.n_failed_responses_scored,
            "n_left_out_by_config": self.n_left_out_by_config,
            "left_out_models": {k: list(v) for k, v in self.left_out_models.items()},
            "left_out_datapoints": {k: dict(v) for k, v in self.left_out_datapoints.items()},
            "datapoints": self.phase3.as_dict(),
            "responses": self.phase4.as_dict(),
        }


@dataclass
class RunData:
    """A run folder, loaded.

    ``records``: one row per phase-5 record kept after de-duplication (failed ones too):
    ``response, datapoint`` (int32 codes), ``task, teacher, student, judge, evaluator``
    (categoricals), ``failed`` (bool), ``error_kind``.

    ``units``: one row per usable score: ``response, datapoint, task, teacher, student,
    judge, evaluator, factor, value`` (float32 in [0, 1]) and ``level`` (int8: Low 0,
    Medium 1, High 2; -1 for numeric scores that are not one of the three levels).

    ``responses``: indexed by response code: ``datapoint, task, teacher, student, length``
    (characters, NaN when unknown), ``failed``. ``datapoints``: indexed by datapoint code:
    ``task, teacher, failed``. ``attributes``: ``datapoint, task, attribute, value``.
    ``labels``: label-evaluator detail per (response, attribute): ``gold`` and ``predicted``
    as tuples of labels (empty when unknown).
    """

    path: Path
    experiment_id: str
    meta: dict[str, Any]
    config: dict[str, Any]
    rubrics: dict[str, dict[str, Any]]
    target_attributes: dict[str, dict[str, list[str]]]
    label_attributes: dict[str, list[str]]
    models: pd.Index
    response_ids: pd.Index
    datapoint_ids: pd.Index
    records: pd.DataFrame
    units: pd.DataFrame
    responses: pd.DataFrame
    datapoints: pd.DataFrame
    attributes: pd.DataFrame
    labels: pd.DataFrame
    quality: DataQuality
    #: per ok (judge, response) with a reason or a copied example, worked out while loading
    #: (:func:`coeval_analysis.warnings.judge_replies.replies_frame`); None for data built otherwise
    replies: pd.DataFrame | None = None
    #: phase -> records whose input is gone or was made again, counted while loading
    #: (:func:`coeval_analysis.warnings.stale.stale_counts`); None for data built otherwise
    stale: Counter[str] | None = None

    @property
    def judge_units(self) -> pd.DataFrame:
        """Scores given by LLM judges (the ones judge agreement is about)."""
        return self.units[self.units["evaluator"] == LLM_JUDGE]

    def llm_judges(self) -> list[str]:
        recs = self.records[self.records["evaluator"] == LLM_JUDGE]
        present = recs["judge"].dropna().unique()
        return sorted(str(m) for m in present)

    def students(self) -> list[str]:
        return sorted(str(m) for m in self.units["student"].dropna().unique())

    def teachers(self) -> list[str]:
        return sorted(str(m) for m in self.units["teacher"].dropna().unique())

    def tasks(self) -> list[str]:
        return sorted(str(t) for t in self.units["task"].dropna().unique())

    def model_roles(self) -> dict[str, list[str]]:
        """Roles each model has in config.yaml (empty when the config is unknown)."""
        out: dict[str, list[str]] = {}
        for m in self.config.get("models", []) or []:
            if isinstance(m, dict) and isinstance(m.get("name"), str):
                out[m["name"]] = [str(r) for r in m.get("roles", []) or []]
        return out
