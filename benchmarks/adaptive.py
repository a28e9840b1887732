"""Adaptive evaluation against the full grid, on the same synthetic runs with known truth.

Each seed of each scenario draws the full grid of judgments once
(:mod:`coeval_analysis.stats.scenarios`); the full run buys all of it, the adaptive design
(:mod:`coeval_analysis.adaptive.design`) plays over it and buys only the cells it asks for.
The full run is ranked as ``coeval analyze`` ranks a run (the headline's measurement model);
the adaptive run by the ranking it reports where it stopped (``coeval analyze`` of an
adaptive run shows the same): weights refit on everything bought
(:mod:`coeval_analysis.adaptive.refit`). Beside them: the full grid by the design's ranking,
the headline refit on what the adaptive design bought, and the stopping look's own ranking
(the calibration slice's weights, on which the looks decide). Per scenario: phase-5 calls
(judgments) saved, phase-4 answers saved, top-1 accuracy and Spearman's rho with the true
quality, how often the question was answered before the datapoints ran out, and
pairwise-interval coverage of the reported intervals (at the stopping look's level).

Coverage is of each pair's expected difference in the reported ranking's own terms (the kept
judges' weighted mean score, less their leniency, on a random datapoint, its teacher drawn by
the teachers' weights), computed exactly from the
scenario's parameters; scenarios with per-student taste (drawn per run) or failed answers
have no such closed form and are left out of it.

    python -m benchmarks.adaptive                  # 100 seeds per scenario, stop_when {top: 1}
    python -m benchmarks.adaptive --seeds 20 --stop separated
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import attrs
import numpy as np
from coeval_analysis.adaptive.contrasts import UNRELATED_SHARE
from coeval_analysis.adaptive.design import Design, Outcome, play
from coeval_analysis.adaptive.stopping import parse_stop_rule
from coeval_analysis.stats.scenarios import NOISE_ONLY, REFERENCE_SHAPED, SCENARIOS, Scenario, simulate
from scipy.stats import norm, spearmanr

from benchmarks.ranking_accuracy import headline

#: the reference run's shape with its five judges: two discriminating judges of one family
#: (favouring their own two students, truly the best), a flat judge, a contrary one and one
#: whose scores ignore the answer
REFERENCE_FIVE = Scenario(
    "reference_five", judge_noise=(0.06, 0.06, 0.05, 0.15), random_judges=1,
    quality=REFERENCE_SHAPED["family_top_flat"].quality, judge_scale={2: 0.0, 3: -0.4}, judge_shift={2: 0.25},
    favours={0: ((8, 9), 0.10), 1: ((8, 9), 0.10)},
)  # fmt: skip
BENCH_SCENARIOS: dict[str, Scenario] = {**SCENARIOS, REFERENCE_FIVE.name: REFERENCE_FIVE}

#: the rankings compared: the full grid by the headline (as ``coeval analyze`` ranks it) and by
#: the design's own ranking, the ranking the adaptive design reports where it stopped, the
#: headline refit on what it bought, and the stopping look's ranking (the slice's weights)
KEYS = ("full", "full_design", "adaptive", "adaptive_headline", "adaptive_look")
TARGET_SAVED = 0.50
TARGET_RHO_DROP = 0.02
TARGET_COVERAGE = 0.90
#: factor noise of :func:`coeval_analysis.stats.scenarios.simulate`
FACTOR_SD = 0.04


def expected_scores(sc: Scenario, quality: np.ndarray, teacher_weight: np.ndarray | None = None) -> np.ndarray | None:
    """(judges, students): each judge's expected score of each student's answer to a random
    datapoint, its teacher drawn by ``teacher_weight`` (None: alike); None where the scenario
    has no closed form (taste, failed answers)."""
    if sc.taste_sd or sc.fail_hardest or sc.all_failed is not None:
        return None
    n_j = len(sc.judge_noise) + sc.random_judges
    tw = np.ones(sc.n_teachers) if teacher_weight is None else np.asarray(teacher_weight, float)
    tw = tw / tw.sum()
    out = np.full((n_j, quality.size), 0.5)  # a random judge's levels average Medium
    spreads = np.array([sc.teacher_spread.get(t, 1.0) for t in range(sc.n_teachers)])
    for j, noise in enumerate(sc.judge_noise):
        scale, shift = sc.judge_scale.get(j, 1.0), sc.judge_shift.get(j, 0.0)
        m = 0.5 + shift + scale * spreads[:, None] * (quality[None, :] - 0.55)
        if j in sc.favours:
            who, bias = sc.favours[j]
            m[:, list(who)] += bias
        sd = np.sqrt(scale**2 * (sc.difficulty_sd**2 + FACTOR_SD**2) + noise**2)
        level = (norm.cdf((m - 0.4) / sd) + norm.cdf((m - 0.6) / sd)) / 2.0
        out[j] = tw @ level
    return out


def expected_differences(sc: Scenario, quality: np.ndarray, outcome: Outcome) -> np.ndarray | None:
    """(students, students): the value each pair's interval estimates, in the design's terms."""
    # each teacher's datapoints count in the fit by their weight (equal numbers of datapoints)
    teacher_of = np.repeat(np.arange(sc.n_teachers), sc.items_per_teacher)
    per_teacher = np.array([outcome.item_weight[teacher_of == t].mean() for t in range(sc.n_teachers)])
    e = expected_scores(sc, quality, per_teacher)
    if e is None:
        return None
    kept = np.array(outcome.kept)
    n_s = quality.size
    favoured = np.zeros((e.shape[0], n_s), bool)
    for j, (who, _) in sc.favours.items():
        favoured[j, list(who)] = True
    per_student = np.empty(n_s)
    for s in range(n_s):
        counted = [j for j in kept if outcome.weight[j] > 0]
        clean = [j for j in counted if not favoured[j, s]]
        share = outcome.weight[clean].sum() / outcome.weight[counted].sum()
        use = clean if clean and share >= UNRELATED_SHARE else counted
        w = outcome.weight[use]
        per_student[s] = float(np.sum(w * (e[use, s] - outcome.leniency[use])) / np.sum(w))
    out: np.ndarray = per_student[:, None] - per_student[None, :]
    return out


def _scenario(sc: Scenario, seeds: int, design: Design) -> dict[str, Any]:
    saved, answers_saved, answered = [], [], []
    top: dict[str, list[bool]] = {k: [] for k in KEYS}
    rho: dict[str, list[float]] = {k: [] for k in KEYS}
    whole = attrs.evolve(design, looks=1)
    covered, pairs, separated = 0, 0, 0
    a, b = np.triu_indices(sc.n_students, 1)
    for seed in range(seeds):
        sim = simulate(sc, seed)
        best = int(np.argmax(sim.quality))
        outcome = play(sim.judgments, sim.judges, design, seed)
        saved.append(outcome.saved)
        answers_saved.append(1.0 - outcome.answers / outcome.answers_full)
        answered.append(outcome.answered)
        full_design = play(sim.judgments, sim.judges, whole, seed).intervals.score
        scores = {"full": headline(sim.judgments), "full_design": full_design,
                  "adaptive": outcome.intervals.score, "adaptive_headline": headline(outcome.bought),
                  "adaptive_look": outcome.look_intervals.score}
        for key, score in scores.items():
            top[key].append(bool(np.any(~np.isnan(score))) and int(np.nanargmax(score)) == best)
            rho[key].append(float(spearmanr(np.nan_to_num(score, nan=-1.0), sim.quality)[0]))
        iv = outcome.intervals
        lo, hi = iv.diff_low[a, b], iv.diff_high[a, b]
        separated += int(((lo > 0) | (hi < 0)).sum())
        truth = expected_differences(sc, sim.quality, outcome)
        if truth is not None:
            covered += int(((lo <= truth[a, b]) & (truth[a, b] <= hi)).sum())
            pairs += a.size
    return {
        "saved": float(np.mean(saved)), "saved_min": float(np.min(saved)),
        "answers_saved": float(np.mean(answers_saved)), "answered": float(np.mean(answered)),
        "top1": {k: float(np.mean(v)) for k, v in top.items()},
        # the paired standard error of top-1 adaptive - full: seeds where only one finds the best
        "top1_change_se": float(np.std(np.subtract(top["adaptive"], top["full"], dtype=float), ddof=1)
                                / np.sqrt(seeds)) if seeds > 1 else float("nan"),
        "rho": {k: float(np.mean(v)) for k, v in rho.items()},
        "coverage": covered / pairs if pairs else None, "pairs": pairs,
        "separated_share": separated / (seeds * a.size),
    }  # fmt: skip


DEFAULT = Design()


def run(seeds: int = 100, stop: str = "top:1", calibration: float = DEFAULT.calibration,
        looks: int = DEFAULT.looks, let_go_share: float = DEFAULT.let_go_share) -> dict[str, Any]:
    """Every bench scenario, adaptive against full on the same ``seeds``; ``ok`` when every
    target holds (calls saved, top-1 kept, rho within 0.02, coverage)."""
    started = time.perf_counter()
    design = Design(stop_when=_stop_rule(stop), calibration=calibration, looks=looks, let_go_share=let_go_share)
    scenarios = {name: _scenario(sc, seeds, design) for name, sc in BENCH_SCENARIOS.items()}
    ties = _scenario(NOISE_ONLY, seeds, design)
    covered = sum(round(r["coverage"] * r["pairs"]) for r in scenarios.values() if r["coverage"] is not None)
    pairs = sum(r["pairs"] for r in scenarios.values())
    worst_saved = min(r["saved"] for r in scenarios.values())
    worst_top_name = min(scenarios, key=lambda n: scenarios[n]["top1"]["adaptive"] - scenarios[n]["top1"]["full"])
    worst_top = scenarios[worst_top_name]["top1"]["adaptive"] - scenarios[worst_top_name]["top1"]["full"]
    worst_rho = min(r["rho"]["adaptive"] - r["rho"]["full"] for r in scenarios.values())
    # what stopping early costs alone: the same ranking on the full grid
    own_top = min(r["top1"]["adaptive"] - r["top1"]["full_design"] for r in scenarios.values())
    own_rho = min(r["rho"]["adaptive"] - r["rho"]["full_design"] for r in scenarios.values())
    coverage = covered / pairs if pairs else float("nan")
    worst_cov = min(r["coverage"] for r in scenarios.values() if r["coverage"] is not None)
    checks = {
        "saved": worst_saved >= TARGET_SAVED,
        "top1": worst_top >= 0.0,
        "rho": worst_rho >= -TARGET_RHO_DROP,
        "coverage": coverage >= TARGET_COVERAGE,
    }
    return {"name": "adaptive", "seeds": seeds, "stop_when": design.stop_when.describe(), "looks": design.looks,
            "calibration": design.calibration, "let_go_share": design.let_go_share,
            "spending": design.spending, "scenarios": scenarios, "noise_only": ties,
            "worst_saved": worst_saved, "worst_top1_change": worst_top,
            "worst_top1_change_se": scenarios[worst_top_name]["top1_change_se"], "worst_rho_change": worst_rho,
            "worst_top1_change_same_ranking": own_top, "worst_rho_change_same_ranking": own_rho,
            "coverage": coverage, "worst_coverage": worst_cov, "checks": checks, "ok": all(checks.values()),
            "seconds": round(time.perf_counter() - started, 1)}  # fmt: skip


def _stop_rule(text: str) -> Any:
    kind, _, value = text.partition(":")
    raw: dict[str, Any]
    if kind == "top":
        raw = {"top": int(value or 1)}
    elif kind == "separated":
        raw = {"separated": "all", **({"delta": float(value)} if value else {})}
    elif kind == "width":
        raw = {"width": float(value or 0.05)}
    else:
        raise SystemExit(f"--stop: expected top[:k], separated[:delta] or width[:w] (got {text!r})")
    return parse_stop_rule(raw)


def table(r: dict[str, Any]) -> list[str]:
    """The per-scenario table and the targets, as printed."""
    lines = ["| scenario | calls saved (min) | answers saved | answered | top-1 full: headline, design / adaptive: "
             "reported, headline refit, stopping look | rho, the same five | coverage |", "|---" * 7 + "|"]
    for name, s in r["scenarios"].items():
        cov = f"{s['coverage']:.3f}" if s["coverage"] is not None else "-"
        t, rho = s["top1"], s["rho"]
        lines.append(f"| {name} | {s['saved']:.1%} ({s['saved_min']:.0%}) | {s['answers_saved']:.1%} | "
                     f"{s['answered']:.0%} | {' / '.join(f'{t[k]:.0%}' for k in KEYS)} | "
                     f"{' / '.join(f'{rho[k]:.3f}' for k in KEYS)} | {cov} |")  # fmt: skip
    c = r["checks"]
    lines += ["", "| figure | measured | target | holds |", "|---|---|---|---|",
              f"| phase-5 calls saved, worst scenario | {r['worst_saved']:.1%} | >= {TARGET_SAVED:.0%} | "
              f"{'yes' if c['saved'] else 'NO'} |",
              f"| top-1 adaptive - full, worst scenario (its paired standard error) | {r['worst_top1_change']:+.1%} "
              f"({r['worst_top1_change_se']:.1%}) | >= 0 | "
              f"{'yes' if c['top1'] else 'NO'} |",
              f"| rho adaptive - full, worst scenario | {r['worst_rho_change']:+.3f} | >= -{TARGET_RHO_DROP} | "
              f"{'yes' if c['rho'] else 'NO'} |",
              f"| the same against the full grid by the design's ranking: top-1, rho | "
              f"{r['worst_top1_change_same_ranking']:+.1%}, {r['worst_rho_change_same_ranking']:+.3f} | "
              "(information) | |",
              f"| pairwise coverage of the reported intervals (worst scenario {r['worst_coverage']:.3f}) | "
              f"{r['coverage']:.3f} | >= {TARGET_COVERAGE} | {'yes' if c['coverage'] else 'NO'} |",
              f"| judges that carry no signal: pairs called separated | {r['noise_only']['separated_share']:.1%} | "
              f"<= 5% | {'yes' if r['noise_only']['separated_share'] <= 0.05 else 'NO'} |"]  # fmt: skip
    return lines


def row(r: dict[str, Any], verdict: str) -> tuple[str, str, str, str]:
    """The figure's line in the bench table."""
    return ("i. adaptive evaluation",
            f"{r['seeds']} seeds x {len(r['scenarios'])} scenarios, stop when {r['stop_when']}: phase-5 calls saved "
            f">= {r['worst_saved']:.0%} per scenario; top-1 adaptive - full >= {r['worst_top1_change']:+.0%}; rho "
            f"adaptive - full >= {r['worst_rho_change']:+.3f}; pairwise coverage {r['coverage']:.3f}",
            f">= {TARGET_SAVED:.0%} saved, top-1 >= full, rho >= full - {TARGET_RHO_DROP}, coverage >= "
            f"{TARGET_COVERAGE}", verdict)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100, help="seeds per scenario")
    parser.add_argument("--stop", default="top:1", help="top[:k], separated[:delta] or width[:w]")
    parser.add_argument("--calibration", type=float, default=DEFAULT.calibration, help="share in the calibration slice")
    parser.add_argument("--looks", type=int, default=DEFAULT.looks, help="looks at the data, the slice's included")
    parser.add_argument("--let-go-share", type=float, default=DEFAULT.let_go_share,
                        help="share of each later round the students let go still answer")
    args = parser.parse_args()
    r = run(args.seeds, args.stop, args.calibration, args.looks, args.let_go_share)
    print(f"stop when {r['stop_when']}; calibration slice {r['calibration']:.0%}, {r['looks']} looks, "
          f"students let go answer {r['let_go_share']:.0%} of later rounds, "
          f"{r['spending']} spending; {r['seeds']} seeds "
          f"({r['seconds']:.0f} s)")  # fmt: skip
    print("\n".join(table(r)))


if __name__ == "__main__":
    main()
