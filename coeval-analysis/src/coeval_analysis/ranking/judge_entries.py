"""The summary's entry of each judge and evaluator: its records (kind, count, failures,
errors) and, for a judge of the measurement model, its weight, scale, family and agreement;
the same as a table (``tables/judges``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from coeval_analysis.loading.run_data import LLM_JUDGE, RunData
from coeval_analysis.ranking.headline import HeadlineRanking
from coeval_analysis.stats.diagnostic_ranking import DiagnosticRanking
from coeval_analysis.stats.numbers import finite_or_none
from coeval_analysis.stats.scores import ScoreModel

__all__ = ["judge_entries", "record_facts"]


def record_facts(recs: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per judge (or evaluator): its kind, records, failed records, failure rate and errors."""
    failed = recs.groupby("judge", observed=True)["failed"].agg(["size", "sum"])
    kinds = recs[recs["failed"]].groupby(["judge", "error_kind"], observed=True).size()
    evaluator_of = recs.groupby("judge", observed=True)["evaluator"].first().astype(str)
    facts: dict[str, dict[str, Any]] = {}
    for name in failed.index.astype(str):
        n, n_fail = int(failed.loc[name, "size"]), int(failed.loc[name, "sum"])
        facts[name] = {
            "evaluator": str(evaluator_of.get(name, LLM_JUDGE)),
            "n_records": n,
            "n_failed": n_fail,
            "failure_rate": n_fail / n if n else None,
            "errors": {str(k): int(v) for k, v in kinds.get(name, pd.Series(dtype=int)).items()}
            if name in kinds.index.get_level_values(0)
            else {},
        }
    return facts


def judge_entries(
    data: RunData,
    model: ScoreModel,
    robust: DiagnosticRanking,
    pairs: list[dict[str, Any]],
    headline: HeadlineRanking,
) -> tuple[dict[str, Any], dict[str, Any], pd.DataFrame]:
    """(LLM judges, other evaluators (metric, label, gold), table of both)."""
    out: dict[str, Any] = {}
    others: dict[str, Any] = {}
    rows = []
    _pr, pj, pm = model.per_judge_response()
    for name, entry in record_facts(data.records).items():
        if name in model.judges:
            j = model.judges.index(name)
            mine = [p for p in pairs if name in (p["a"], p["b"]) and p["kappa"] is not None]
            h = headline.headline
            entry.update(
                {
                    "weight": finite_or_none(h.judge_weight[j]),
                    "weight_ci": [finite_or_none(headline.weight_ci[0][j]), finite_or_none(headline.weight_ci[1][j])],
                    "consensus_r": finite_or_none(h.judge_r[j]),
                    "leniency": finite_or_none(h.judge_leniency[j]),
                    **_judge_model(headline, j),
                    "family": headline.families.get(name),
                    "n_conflicted": int(h.n_conflicted[j]),
                    "unadjusted_weight": finite_or_none(robust.judge_weight[j]),
                    "unadjusted_weight_ci": [
                        finite_or_none(robust.judge_weight_ci[0][j]),
                        finite_or_none(robust.judge_weight_ci[1][j]),
                    ],
                    "n_units": int(robust.judge_units[j]),
                    "mean_score": finite_or_none(pm[pj == j].mean()) if (pj == j).any() else None,
                    "mean_kappa": finite_or_none(np.mean([p["kappa"] for p in mine])) if mine else None,
                }
            )
        elif entry["evaluator"] == LLM_JUDGE:  # every record failed: it contributes nothing
            entry.update({"weight": 0.0, "weight_ci": [0.0, 0.0], "consensus_r": None, "n_units": 0,
                          "mean_score": None, "mean_kappa": None})  # fmt: skip
        (out if entry["evaluator"] == LLM_JUDGE else others)[name] = entry
        rows.append(
            {
                "judge": name,
                **{k: v for k, v in entry.items() if k != "errors"},
                "errors": ", ".join(f"{k}: {v}" for k, v in entry["errors"].items()),
            }
        )
    table = pd.DataFrame(rows)
    for col in ("weight_ci", "unadjusted_weight_ci"):
        if col in table.columns:
            ci = table.pop(col)
            table[f"{col}_low"] = [c[0] if isinstance(c, list) else None for c in ci]
            table[f"{col}_high"] = [c[1] if isinstance(c, list) else None for c in ci]
    return out, others, table


def _judge_model(r: HeadlineRanking, j: int) -> dict[str, Any]:
    """A judge's measurement-model parameters (reported scale: 1 = an average informative judge)."""
    m = r.measurement
    f = m.fit
    if j >= len(f.scale):
        return {}
    return {
        "scale": finite_or_none(m.scale[j]),
        "reliability": finite_or_none(f.reliability[j]),
        "noise_sd": finite_or_none(np.sqrt(f.noise[j])),
        "taste_sd": finite_or_none(np.sqrt(f.taste[j])),
        "family_bias": finite_or_none(f.bias[j]) if r.headline.n_conflicted[j] else None,
        "family_bias_sd": finite_or_none(np.sqrt(f.bias_var[j])) if r.headline.n_conflicted[j] else None,
        "family_bias_prior_share": finite_or_none(f.bias_prior_share[j]) if r.headline.n_conflicted[j] else None,
        "checked": bool(f.checked[j]) if j < len(f.checked) else False,
    }
