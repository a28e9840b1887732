"""The evaluation controller of an adaptive run: what :func:`~coeval_analysis.adaptive.design.play`
decides on a grid drawn in advance, decided on a run folder between the rounds of phase 5.

At each look it reads the run's judgments of the datapoints seen so far, screens the judges
on the calibration slice (:func:`~coeval_analysis.adaptive.screening.screen_judges`), weighs
the kept ones by their agreement on the slice, refits the ranking
(:mod:`~coeval_analysis.adaptive.contrasts`) at the look's share of alpha, and says whether
``stop_when`` is answered and which students are still open. At the look where the run ends
(answered, or the last) the scores it records are the ranking refit on everything bought
(:func:`~coeval_analysis.adaptive.refit.refit`), as the design reports. Everything it decides
follows from the judgments and the seed, so a continued run decides as an uninterrupted one would.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from coeval.contract.adaptive import JudgeDecision, Rehearsal, RehearsalOutcome, RoundDecision, RoundLook

from coeval_analysis.adaptive.contrasts import answer_scores, fit_intervals, judge_leniency
from coeval_analysis.adaptive.design import dense, slice_weights, subset
from coeval_analysis.adaptive.refit import refit
from coeval_analysis.adaptive.screening import MIN_JUDGES, screen_judges
from coeval_analysis.adaptive.stopping import answered, look_alphas, open_students, parse_stop_rule
from coeval_analysis.stats.headline import Judgments

__all__ = ["AdaptiveController", "decide"]


class AdaptiveController:
    """``register_evaluation_controllers``' ``adaptive``: reads the run folder at each look."""

    def look(self, look: RoundLook, /) -> RoundDecision:
        from coeval_analysis.loading.loader import load_run
        from coeval_analysis.ranking.families import model_families
        from coeval_analysis.ranking.headline import judgments_of
        from coeval_analysis.stats.scores import ScoreModel

        data = load_run(look.run_folder)
        model = ScoreModel.build(data)
        families = model_families(data.config, [*model.judges, *model.students])
        j, judges = judgments_of(model, families)
        item_ids = [str(d) for d in np.asarray(model.data.datapoint_ids, dtype=object)[model.items]]
        j, item_ids = _by_datapoint_id(j, item_ids)
        return decide(j, judges, list(model.students), item_ids, look)

    def rehearse(self, rehearsal: Rehearsal, /) -> RehearsalOutcome:
        """Play the design over grids drawn as the mock judges would grade (the plan's range)."""
        from coeval_analysis.adaptive.rehearsal import rehearse

        return rehearse(rehearsal)


def _by_datapoint_id(j: Judgments, item_ids: list[str]) -> tuple[Judgments, list[str]]:
    """``j`` with its datapoints coded in the order of their ids, not of the records: a run
    continued after a kill holds its records in another order, and the screening's resamples
    must draw the same datapoints for the same decision."""
    order = np.array(sorted(range(len(item_ids)), key=item_ids.__getitem__), np.int64)
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    recoded = Judgments(rank[j.item], j.student, j.judge, j.value, j.conflicted, j.n_items, j.n_students,
                        j.n_judges, j.item_teacher[order])
    return recoded, [item_ids[i] for i in order]


def _item_mask(item_ids: list[str], wanted: frozenset[str]) -> np.ndarray:
    return np.array([i in wanted for i in item_ids], bool)


def decide(j: Judgments, judges: list[str], students: list[str], item_ids: list[str], look: RoundLook) -> RoundDecision:
    """The decision at ``look`` from the run's judgments ``j`` (codes: ``judges``,
    ``students``, ``item_ids``), of which only the datapoints ``look.seen`` count."""
    settings: Mapping[str, Any] = look.settings
    rule = parse_stop_rule(settings.get("stop_when"))
    seen = _item_mask(item_ids, look.seen)
    j = subset(j, seen[j.item]) if j.item.size else j
    in_slice = _item_mask(item_ids, look.calibration)
    alphas = look_alphas(float(settings.get("alpha", 0.05)), np.asarray(look.fractions, float))
    alpha = float(alphas[min(look.look, len(alphas) - 1)])
    screening = None
    if settings.get("screen", True) and j.n_judges >= MIN_JUDGES:
        screening = screen_judges(subset(j, in_slice[j.item]), judges, seed=look.seed)
    stopped = {judges.index(name) for name in screening.stopped} if screening is not None else set()
    kept = np.array([k for k in range(j.n_judges) if k not in stopped], int)
    x, conflicted = dense(j)
    calib = np.where(in_slice[None, :, None], x, np.nan)
    leniency = judge_leniency(calib, kept)
    weight, item_weight = slice_weights(calib, conflicted, kept, leniency, j.item_teacher)
    iv = fit_intervals(answer_scores(x, conflicted, kept, leniency, weight), alpha, item_weight)
    done = answered(rule, iv)
    still = open_students(rule, iv)
    if done or look.look >= len(alphas) - 1:  # where the run ends: the ranking refit on everything bought
        iv = refit(j, kept, alpha).intervals
    scores = {
        students[s]: (float(iv.score[s]), float(iv.score_low[s]), float(iv.score_high[s]))
        for s in range(len(students)) if not math.isnan(float(iv.score[s]))
    }
    return RoundDecision(
        answered=bool(done),
        open_students=tuple(students[s] for s in range(len(students)) if still[s]),
        alpha=alpha,
        question=rule.describe(),
        judges=_judge_decisions(screening, judges, bool(settings.get("screen", True))),
        scores=scores,
    )


def _judge_decisions(screening: Any, judges: list[str], screen: bool) -> tuple[JudgeDecision, ...]:
    if screening is None:
        why = "screening is off" if not screen else f"screening needs {MIN_JUDGES} judges or more"
        return tuple(JudgeDecision(name, math.nan, math.nan, False, why) for name in judges)
    return tuple(JudgeDecision(s.judge, float(s.agreement), float(s.agreement_high), bool(s.stop), s.reason)
                 for s in screening.judges)
