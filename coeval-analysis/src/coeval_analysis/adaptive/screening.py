"""Judge screening: which judges tell answers apart too little to be worth paying, with confidence.

Phase 5 buys every (student, judge, datapoint) triple, and a judge that explains none of the
spread of answer quality (a flat judge, one that guesses, a contrary one) is paid in full to
be given almost no weight by the headline. Screening reads a calibration slice of judgments
and measures, per judge, its *agreement*: the correlation, over answers and within each
datapoint, of its scores with the mean of the other judges' scores. That is what the
measurement model's regression calibration estimates for a judge's scale (its scores
regressed on the quality the *other* judges give), without the model's fit: on slices of a
fifth of the reference run the fit sometimes lands where a flat judge with tiny noise carries
a third of the information, which the full run's fit does not give it. Datapoints are
resampled to give each agreement an upper confidence bound; a judge whose bound is below
``min_agreement`` is stopped. The judge that agrees most is never stopped, and with fewer
than three judges nothing is (two judges cannot tell which of them is the poor one). A judge
whose per-student taste outweighs what it shares with the others can be stopped too: in 5 of
20 draws of the ``idiosyncratic`` scenario one was.

This module decides; it runs nothing. What a run does with the decision is the caller's.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from coeval_analysis.stats.headline import Judgments

__all__ = ["JudgeScreen", "Screening", "agreement", "screen_judges"]

MIN_JUDGES = 3
AGREEMENT_ROUNDS = 3


@attrs.frozen
class JudgeScreen:
    """One judge's evidence and the decision taken on it."""

    judge: str
    judgments: int  #: judgments of this judge in the slice
    agreement: float  #: correlation with the other judges' consensus, within datapoints
    agreement_high: float  #: its upper confidence bound
    stop: bool
    reason: str


@attrs.frozen
class Screening:
    """The decision on every judge, with the rule that took it."""

    judges: tuple[JudgeScreen, ...]
    min_agreement: float
    level: float
    resamples: int
    datapoints: int  #: datapoints in the slice

    @property
    def stopped(self) -> list[str]:
        return [j.judge for j in self.judges if j.stop]

    @property
    def kept(self) -> list[str]:
        return [j.judge for j in self.judges if not j.stop]


def _centred(judgments: Judgments) -> np.ndarray:
    """(judges, datapoints, students) scores less each judge's mean on the datapoint (NaN: none)."""
    j = judgments
    x = np.full((j.n_judges, j.n_items, j.n_students), np.nan)
    x[j.judge, j.item, j.student] = j.value
    seen = ~np.isnan(x)
    count = seen.sum(2, keepdims=True)
    mean = np.where(seen, x, 0.0).sum(2, keepdims=True) / np.maximum(count, 1)
    out: np.ndarray = x - mean
    return out


def agreement(centred: np.ndarray, item_weight: np.ndarray, rounds: int = AGREEMENT_ROUNDS) -> np.ndarray:
    """Per judge: weighted correlation of its centred scores with the other judges' consensus
    (0 for a judge whose scores do not vary within a datapoint). The consensus starts as the
    others' plain mean; each further round weighs every judge by its agreement of the round
    before (none below 0), so flat and guessing judges stop diluting the consensus the good
    ones are measured against."""
    k = centred.shape[0]
    seen = ~np.isnan(centred)
    filled = np.where(seen, centred, 0.0)
    weight_of_judge = np.ones(k)
    out = np.zeros(k)
    for _ in range(rounds):
        w_seen = seen * weight_of_judge[:, None, None]
        total, mass = (filled * weight_of_judge[:, None, None]).sum(0), w_seen.sum(0)
        for judge in range(k):
            others = mass - w_seen[judge]
            consensus = (total - filled[judge] * weight_of_judge[judge]) / np.where(others > 0, others, 1.0)
            both = seen[judge] & (others > 0)
            w = np.broadcast_to(item_weight[:, None], both.shape)[both]
            a, b = filled[judge][both], consensus[both]
            va, vb = float(np.sum(w * a * a)), float(np.sum(w * b * b))
            out[judge] = 0.0 if va <= 1e-12 or vb <= 1e-12 else float(np.sum(w * a * b)) / np.sqrt(va * vb)
        weight_of_judge = np.maximum(out, 0.0)
        if not weight_of_judge.any():
            break
    return out


def screen_judges(
    judgments: Judgments,
    names: Sequence[str],
    *,
    min_agreement: float = 0.25,
    level: float = 0.95,
    resamples: int = 200,
    seed: int = 0,
) -> Screening:
    """Decide which judges to stop from the calibration slice ``judgments`` (one row per
    (datapoint, student, judge); ``names`` in judge-code order): a judge is stopped when the
    upper ``level`` bound of its agreement, over ``resamples`` datapoint resamples, is below
    ``min_agreement``."""
    if len(names) != judgments.n_judges:
        raise ValueError(f"{len(names)} judge names for {judgments.n_judges} judges")
    centred = _centred(judgments)
    present = np.flatnonzero((~np.isnan(centred)).any(axis=(0, 2)))
    base = np.zeros(judgments.n_items)
    base[present] = 1.0
    point = agreement(centred, base)
    rng = np.random.default_rng([seed, 52])
    draws = np.empty((resamples, judgments.n_judges))
    for b in range(resamples):
        weight = np.zeros(judgments.n_items)
        weight[present] = rng.multinomial(present.size, np.full(present.size, 1.0 / present.size))
        draws[b] = agreement(centred, weight)
    high = np.quantile(draws, level, axis=0) if resamples > 0 else point
    counts = np.bincount(judgments.judge, minlength=judgments.n_judges)
    leader = int(np.argmax(point)) if len(point) else -1
    can_stop = judgments.n_judges >= MIN_JUDGES and present.size >= 2
    screens = []
    for k, name in enumerate(names):
        stop = can_stop and k != leader and bool(high[k] < min_agreement)
        if stop:
            reason = (f"agrees with the other judges at most {high[k]:.2f} ({level:.0%} bound), "
                      f"below the {min_agreement:.2f} a judge needs to tell answers apart")
        elif k == leader:
            reason = "agrees most with the other judges"
        elif not can_stop:
            reason = f"screening needs {MIN_JUDGES} judges and 2 datapoints or more"
        else:
            reason = f"may agree up to {high[k]:.2f} with the other judges ({level:.0%} bound)"
        screens.append(JudgeScreen(name, int(counts[k]), float(point[k]), float(high[k]), stop, reason))
    return Screening(tuple(screens), min_agreement, level, resamples, int(present.size))
