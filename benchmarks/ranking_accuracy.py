"""How well each ranking estimator recovers known student quality, per scenario.

Draws the scenarios of :mod:`coeval_analysis.scenarios` over many seeds and prints, per
scenario, the mean Spearman's rho between truth and score and the share of runs whose best
student is ranked first, for: the plain mean, the earlier agreement-weighted robust score
(judge weights only), the conflict-aware headline, and a variant that keeps conflicted
judgments with a per-judge conflict bias subtracted. The numbers in docs/analysis.md come
from here.

    python -m benchmarks.ranking_accuracy            # 40 seeds
    python -m benchmarks.ranking_accuracy --seeds 100
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np
from coeval_analysis.scenarios import SCENARIOS, plain_scores, simulate
from coeval_analysis.stats.headline import Judgments, fit_headline
from coeval_analysis.stats.robust import judge_weights
from scipy.stats import spearmanr


def agreement_weighted(j: Judgments) -> np.ndarray:
    """The earlier robust score's judge weighting (every judgment counted, no leniency)."""
    S = j.n_students
    x = np.full((j.n_items * S, j.n_judges), np.nan)
    x[j.item * S + j.student, j.judge] = j.value
    rows = ~np.isnan(x).all(1)
    w, _, _ = judge_weights(x[rows])
    present = ~np.isnan(x[rows])
    num = np.where(present, x[rows], 0.0) @ w
    den = present @ w
    cell = np.full(j.n_items * S, np.nan)
    cell[rows] = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    score: np.ndarray = np.nanmean(cell.reshape(j.n_items, S), 0)
    return score


def bias_term(j: Judgments) -> np.ndarray:
    """Keep conflicted judgments, minus each judge's mean excess on them over the
    non-conflicted consensus of the same answers."""
    h = fit_headline(j)
    cons = h.cell.reshape(-1)[j.item * j.n_students + j.student]
    excess = j.value - h.judge_leniency[j.judge] - cons
    bias = np.zeros(j.n_judges)
    for k in range(j.n_judges):
        mine = j.conflicted & (j.judge == k) & ~np.isnan(cons)
        if mine.any():
            bias[k] = excess[mine].mean()
    value = np.where(j.conflicted, j.value - bias[j.judge], j.value)
    return fit_headline(replace(j, value=value, conflicted=np.zeros_like(j.conflicted))).score


ESTIMATORS = {
    "plain": plain_scores,
    "agreement-weighted": agreement_weighted,
    "headline": lambda j: fit_headline(j).score,
    "bias-term": bias_term,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40)
    args = parser.parse_args()
    print("| scenario | " + " | ".join(ESTIMATORS) + " |")
    for name, sc in SCENARIOS.items():
        rho: dict[str, list[float]] = {k: [] for k in ESTIMATORS}
        top: dict[str, list[bool]] = {k: [] for k in ESTIMATORS}
        for seed in range(args.seeds):
            sim = simulate(sc, seed)
            best = int(np.argmax(sim.quality))
            for key, estimator in ESTIMATORS.items():
                score = estimator(sim.judgments)
                rho[key].append(float(spearmanr(score, sim.quality)[0]))
                top[key].append(int(np.nanargmax(score)) == best)
        cells = [f"{np.mean(rho[k]):.3f} ({np.mean(top[k]):.0%})" for k in ESTIMATORS]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
