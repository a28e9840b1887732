"""The per-item tables of an :class:`coeval_analysis.analysis.Analysis`: one row per
datapoint (its students, mean score, weight and discrimination), per scored response, and
per label of the label reports."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from coeval_analysis.ranking.headline import HeadlineRanking
from coeval_analysis.stats.diagnostic_ranking import DiagnosticRanking
from coeval_analysis.stats.scores import ScoreModel

__all__ = ["datapoint_table", "label_table", "response_table"]


def label_table(labels: dict[str, Any]) -> pd.DataFrame:
    rows = []
    for key, rep in labels.items():
        for r in rep["per_label"]:
            rows.append({"task": rep["task"], "attribute": rep["attribute"], **r})
        rows.append(
            {
                "task": rep["task"],
                "attribute": rep["attribute"],
                "label": "(micro)",
                **rep["micro"],
                "support": rep["n_items"],
            }
        )
        rows.append(
            {
                "task": rep["task"],
                "attribute": rep["attribute"],
                "label": "(macro)",
                **rep["macro"],
                "support": rep["n_items"],
            }
        )
        del key
    return pd.DataFrame(rows)


def datapoint_table(
    model: ScoreModel, robust: DiagnosticRanking, headline: HeadlineRanking
) -> pd.DataFrame:
    ids = model.data.datapoint_ids
    c = robust.consensus
    n_s = (~np.isnan(c)).sum(1)
    with np.errstate(invalid="ignore"):
        mean = np.where(n_s > 0, np.nansum(np.where(np.isnan(c), 0, c), 1) / np.maximum(n_s, 1), np.nan)
    return pd.DataFrame(
        {
            "datapoint_id": np.asarray(ids, dtype=object)[model.items],
            "task": np.asarray([*model.tasks, ""], dtype=object)[model.item_task],
            "teacher": np.asarray([*model.teachers, ""], dtype=object)[model.item_teacher],
            "n_students": n_s,
            "mean_score": mean,
            "item_weight": headline.headline.item_weight,
            "discrimination": headline.headline.item_discrimination,
            "unadjusted_item_weight": robust.item_weight,
        }
    )


def response_table(model: ScoreModel, robust: DiagnosticRanking) -> pd.DataFrame:
    r = model.scored_responses()
    data = model.data
    lengths = np.full(model.n_responses, np.nan)
    if len(data.responses):
        lengths[data.responses.index.to_numpy()] = data.responses["length"].to_numpy()
    item = model.resp_item[r]
    return pd.DataFrame(
        {
            "response_id": pd.Categorical(np.asarray(data.response_ids, dtype=object)[r]),
            "datapoint_id": pd.Categorical(np.asarray(data.datapoint_ids, dtype=object)[model.items[item]]),
            "task": pd.Categorical(np.asarray([*model.tasks, ""], dtype=object)[model.item_task[item]]),
            "teacher": pd.Categorical(
                np.asarray([*model.teachers, ""], dtype=object)[model.item_teacher[item]]
            ),
            "student": pd.Categorical(np.asarray(model.students, dtype=object)[model.resp_student[r]]),
            "score": model.resp_score[r],
            "robust_score": robust.resp_consensus[r],
            "item_weight": robust.item_weight[item],
            "length": lengths[r],
        }
    )
