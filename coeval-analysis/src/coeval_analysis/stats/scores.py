"""Response-level scores and student scores by slice, with bootstrap intervals.

A response's score is the mean over its rubric factors of the mean over everyone who
scored that factor (LLM judges, and metric / label evaluators for their factors). Benchmark
gold scores are kept apart (see :mod:`coeval_analysis.stats.reference`). A student's score on a
slice (a task, teacher, attribute value, factor or judge) is the mean of its response
scores there; intervals resample datapoints, so a student's answers to one prompt move
together, and all students share the resamples.

Aggregation uses dense integer keys (``response * n_factors + factor``) and ``bincount``
rather than group-by, which keeps a few million scores at tens of milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from coeval_analysis.loading.run_data import LLM_JUDGE, RunData
from coeval_analysis.stats.bootstrap import Bootstrap, percentile_interval

__all__ = ["SLICE_KINDS", "ScoreModel", "dense_mean", "pair_mean"]

GOLD = "gold"
SLICE_KINDS = ("overall", "task", "teacher", "attribute", "factor", "judge")


def pair_mean(
    a: np.ndarray, b: np.ndarray, n_b: int, values: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean of ``values`` per distinct (a, b) pair: (a, b, mean) of each pair present."""
    n_b = max(n_b, 1)
    key = a.astype(np.int64) * n_b + b
    if len(key) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    span = int(key.max()) + 1
    if span <= 4 * len(key) + 1_000_000:  # dense keys: bincount, no sort
        counts = np.bincount(key, minlength=span)
        sums = np.bincount(key, weights=values, minlength=span)
        uniq = np.flatnonzero(counts)
        mean = sums[uniq] / counts[uniq]
    else:
        uniq, inv = np.unique(key, return_inverse=True)
        mean = np.bincount(inv, weights=values) / np.bincount(inv)
    return uniq // n_b, uniq % n_b, mean


def dense_mean(
    key: np.ndarray, n_bins: int, values: np.ndarray, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(mean, total weight) per key in 0..n_bins-1; NaN mean where a key has no weight."""
    w = np.ones(len(key)) if weights is None else weights
    total = np.bincount(key, weights=w, minlength=n_bins)
    sums = np.bincount(key, weights=values * w, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(total > 0, sums / np.where(total > 0, total, 1), np.nan)
    return mean, total


@dataclass
class ScoreModel:
    """Integer-coded score arrays of a run, shared by every statistic."""

    data: RunData
    students: list[str]
    judges: list[str]  #: LLM judges
    factors: list[str]
    n_responses: int  #: size of the response code space
    # per response code (-1 / NaN where the response has no score)
    resp_student: np.ndarray
    resp_item: np.ndarray
    resp_score: np.ndarray
    items: np.ndarray  #: datapoint code of each item index
    item_task: np.ndarray
    item_teacher: np.ndarray
    # LLM-judge units
    u_resp: np.ndarray
    u_factor: np.ndarray
    u_judge: np.ndarray  #: index into ``judges``
    u_value: np.ndarray
    u_level: np.ndarray
    # non-LLM factor scores (metric / label evaluators), gold excluded
    x_resp: np.ndarray
    x_factor: np.ndarray
    x_scorer: np.ndarray  #: index into ``scorers``
    x_value: np.ndarray
    scorers: list[str]
    tasks: list[str]
    teachers: list[str]
    extra: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------------------------------
    @classmethod
    def build(cls, data: RunData) -> ScoreModel:
        units = data.units
        evaluator = units["evaluator"].astype(object).to_numpy()
        is_llm = evaluator == LLM_JUDGE
        is_gold = evaluator == GOLD
        student_codes = units["student"].cat.codes.to_numpy()
        models = list(data.models)
        scored = units[~is_gold]
        student_present = np.unique(scored["student"].cat.codes.to_numpy())
        students = sorted(models[c] for c in student_present if c >= 0)
        student_idx = _index_map(models, students)
        n_resp = len(data.response_ids)

        resp_student = np.full(n_resp, -1, np.int32)
        resp_dp = np.full(n_resp, -1, np.int64)
        resp = units["response"].to_numpy().astype(np.int64)
        resp_student[resp] = student_idx[student_codes]
        resp_dp[resp] = units["datapoint"].to_numpy()
        # items = datapoints with at least one non-gold score
        item_dps, inv = np.unique(resp_dp[resp[~is_gold]], return_inverse=True)
        resp_item = np.full(n_resp, -1, np.int64)
        resp_item[resp[~is_gold]] = inv
        tasks_cat = units["task"].cat
        teacher_cat = units["teacher"].cat
        item_task = np.full(len(item_dps), -1, np.int32)
        item_teacher = np.full(len(item_dps), -1, np.int32)
        item_task[inv] = tasks_cat.codes.to_numpy()[~is_gold]
        item_teacher[inv] = teacher_cat.codes.to_numpy()[~is_gold]

        factors = list(units["factor"].cat.categories)
        factor_codes = units["factor"].cat.codes.to_numpy().astype(np.int64)
        judge_codes = units["judge"].cat.codes.to_numpy()
        judge_present = np.unique(judge_codes[is_llm])
        judges = sorted(models[c] for c in judge_present if c >= 0)
        judge_idx = _index_map(models, judges)
        other = ~is_llm & ~is_gold
        scorer_present = np.unique(judge_codes[other])
        scorers = sorted(models[c] for c in scorer_present if c >= 0)
        scorer_idx = _index_map(models, scorers)

        value = units["value"].to_numpy().astype(np.float64)
        # plain response score: mean over factors of mean over scorers
        r_of, _, rf_mean = pair_mean(resp[~is_gold], factor_codes[~is_gold], len(factors), value[~is_gold])
        resp_score, _ = dense_mean(r_of, n_resp, rf_mean)

        return cls(
            data=data,
            students=students,
            judges=judges,
            factors=factors,
            n_responses=n_resp,
            resp_student=resp_student,
            resp_item=resp_item,
            resp_score=resp_score,
            items=item_dps,
            item_task=item_task,
            item_teacher=item_teacher,
            u_resp=resp[is_llm],
            u_factor=factor_codes[is_llm],
            u_judge=judge_idx[judge_codes[is_llm]],
            u_value=value[is_llm],
            u_level=units["level"].to_numpy()[is_llm],
            x_resp=resp[other],
            x_factor=factor_codes[other],
            x_scorer=scorer_idx[judge_codes[other]],
            x_value=value[other],
            scorers=scorers,
            tasks=[str(t) for t in tasks_cat.categories],
            teachers=[str(t) for t in teacher_cat.categories],
        )

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def n_students(self) -> int:
        return len(self.students)

    def scored_responses(self) -> np.ndarray:
        """Response codes that have a (non-gold) score and a known student."""
        return np.flatnonzero(~np.isnan(self.resp_score) & (self.resp_student >= 0) & (self.resp_item >= 0))

    def item_student_matrix(self, resp_values: np.ndarray) -> np.ndarray:
        """items x students matrix of a per-response value (NaN where missing)."""
        r = self.scored_responses()
        out = np.full((self.n_items, self.n_students), np.nan)
        v = resp_values[r]
        ok = ~np.isnan(v)
        out[self.resp_item[r][ok], self.resp_student[r][ok]] = v[ok]
        return out

    # ------------------------------------------------------------------------------------
    def slice_entries(self) -> list[tuple[str, str, str, np.ndarray, np.ndarray, np.ndarray]]:
        """(kind, slice name, task, item, student, value) entries of every slice."""
        out: list[tuple[str, str, str, np.ndarray, np.ndarray, np.ndarray]] = []
        r = self.scored_responses()
        item, student, score = self.resp_item[r], self.resp_student[r], self.resp_score[r]
        out.append(("overall", "all", "", item, student, score))
        item_task = self.item_task[item]
        for t_code in np.unique(item_task):
            sel = item_task == t_code
            out.append(("task", self.tasks[t_code], self.tasks[t_code], item[sel], student[sel], score[sel]))
        item_teacher = self.item_teacher[item]
        for t_code in np.unique(item_teacher):
            sel = item_teacher == t_code
            out.append(("teacher", self.teachers[t_code], "", item[sel], student[sel], score[sel]))
        # attribute values (a datapoint has several)
        attrs = self.data.attributes
        if len(attrs):
            dp_item = pd.Series(np.arange(self.n_items), index=self.items)
            resp_of = pd.DataFrame({"item": item, "student": student, "score": score})
            a_item = dp_item.reindex(attrs["datapoint"].to_numpy()).to_numpy()
            keep = ~np.isnan(a_item)
            a = pd.DataFrame(
                {
                    "item": a_item[keep].astype(np.int64),
                    "task": attrs["task"].astype(str).to_numpy()[keep],
                    "name": (attrs["attribute"].astype(str) + "=" + attrs["value"].astype(str)).to_numpy()[
                        keep
                    ],
                }
            )
            merged = a.merge(resp_of, on="item")
            for (task, name), g in merged.groupby(["task", "name"], sort=True):
                out.append(
                    (
                        "attribute",
                        str(name),
                        str(task),
                        g["item"].to_numpy(),
                        g["student"].to_numpy(),
                        g["score"].to_numpy(),
                    )
                )
        # factors: mean over every scorer of that factor
        f_resp, f_fac, fmean = pair_mean(
            np.concatenate([self.u_resp, self.x_resp]),
            np.concatenate([self.u_factor, self.x_factor]),
            len(self.factors),
            np.concatenate([self.u_value, self.x_value]),
        )
        ok = (self.resp_student[f_resp] >= 0) & (self.resp_item[f_resp] >= 0)
        for f in np.unique(f_fac[ok]):
            sel = ok & (f_fac == f)
            rr = f_resp[sel]
            out.append(("factor", self.factors[f], "", self.resp_item[rr], self.resp_student[rr], fmean[sel]))
        # judges (LLM judges and non-LLM scorers): mean over the factors each scored
        for name, resp_arr, val in self._per_scorer():
            ok = (self.resp_student[resp_arr] >= 0) & (self.resp_item[resp_arr] >= 0)
            rr = resp_arr[ok]
            out.append(("judge", name, "", self.resp_item[rr], self.resp_student[rr], val[ok]))
        return out

    def _per_scorer(self) -> list[tuple[str, np.ndarray, np.ndarray]]:
        out = []
        for names, resp, who, val in (
            (self.judges, self.u_resp, self.u_judge, self.u_value),
            (self.scorers, self.x_resp, self.x_scorer, self.x_value),
        ):
            if len(names) == 0 or len(resp) == 0:
                continue
            r, j, mean = pair_mean(resp, who, len(names), val)
            for idx, name in enumerate(names):
                sel = j == idx
                out.append((name, r[sel], mean[sel]))
        return out

    def per_judge_response(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(response, judge index, mean over factors) of every (response, LLM judge) pair."""
        return pair_mean(self.u_resp, self.u_judge, len(self.judges), self.u_value)

    # ------------------------------------------------------------------------------------
    def student_table(self, boot: Bootstrap, level: float = 0.95) -> pd.DataFrame:
        """Score, interval and count of every (slice, student), all slices in one pass over
        the bootstrap resamples. A slice of some datapoints (a task, teacher or attribute
        value) resamples only those; a slice over all of them (overall, a factor, a judge)
        resamples all."""
        S = self.n_students
        rows = []
        blocks: list[tuple[np.ndarray | None, np.ndarray, np.ndarray]] = []
        for kind, name, task, item, student, value in self.slice_entries():
            ok = ~np.isnan(value)
            item, student, value = item[ok], student[ok], value[ok]
            local, inv = np.unique(item, return_inverse=True)
            num = np.zeros((len(local), S), np.float32)
            den = np.zeros((len(local), S), np.float32)
            _scatter(num, inv, student, value)
            _scatter(den, inv, student, None)
            total_n = den.sum(0)
            score = np.where(total_n > 0, num.sum(0, dtype=np.float64) / np.maximum(total_n, 1), np.nan)
            n_items = (den > 0).sum(0)
            for s in range(S):
                rows.append(
                    {
                        "kind": kind,
                        "slice": name,
                        "task": task,
                        "student": self.students[s],
                        "score": score[s],
                        "n": int(total_n[s]),
                        "n_items": int(n_items[s]),
                    }
                )
            if S > 1 and (den == den[:, :1]).all():
                den = den[:, :1]  # every student answered the same datapoints: one denominator
            blocks.append((None if len(local) == self.n_items else local, num, den))
        columns = ["kind", "slice", "task", "student", "score", "n", "n_items", "ci_low", "ci_high"]
        table = pd.DataFrame(rows, columns=columns[:-2])
        if len(table):
            reps = boot.ratios(blocks)
            bounds = [percentile_interval(r, level) for r in reps]
            table["ci_low"] = np.concatenate([b[0] for b in bounds])
            table["ci_high"] = np.concatenate([b[1] for b in bounds])
            table.loc[table["n"] == 0, ["score", "ci_low", "ci_high"]] = np.nan
        return table.reindex(columns=columns)


def _scatter(mat: np.ndarray, item: np.ndarray, student: np.ndarray, value: np.ndarray | None) -> None:
    flat = item.astype(np.int64) * mat.shape[1] + student
    add = np.bincount(flat, weights=value, minlength=mat.size)
    mat += add.reshape(mat.shape).astype(mat.dtype)


def _index_map(models: list[str], chosen: list[str]) -> np.ndarray:
    """Model code -> index in ``chosen`` (-1 when absent); index -1 (null code) maps to -1."""
    pos = {m: i for i, m in enumerate(chosen)}
    return np.array([pos.get(m, -1) for m in models] + [-1], np.int64)
