"""What a few human labels do for the ranking, on synthetic runs of the reference run's shape.

The shape: the two judges that tell answers apart are of one family (``gpt``) whose two
students are truly the best; of the unrelated judges one is flat (nearly every answer
Medium) and one contrary (it sees answers upside down) and has a student of its family.
The headline leaves out the GPT judges' scores of GPT students, so those students rest on
judges that cannot rank them: no arrangement of the run's own judgments settles it.

A simulated labeller sees each rubric factor's latent quality plus noise and answers Low /
Medium / High at the rubric's thresholds (:func:`simulate_labels`), exactly as the
synthetic judges do, on the answers a policy picks: the viewer's suggestion order
(:func:`coeval_analysis.label_suggestions.suggest`, fed by the headline's rank ranges) or
random answers. Per policy, over many seeds: mean Spearman's rho between truth and the
ranking that uses the labels, how often the GPT-like students' rank ranges hold their
true places, and the ranking by the labels alone.

The ranking that uses the labels is :func:`fit_with_reference`: today the labels enter the
conflict-aware headline as one more unrelated judge (its weight fitted like any judge's).
The measurement model that treats them as a reference judge of known scale replaces this
one function.

    python -m benchmarks.labels_in_loop                 # 40 labelled answers, 20 seeds
    python -m benchmarks.labels_in_loop --labels 40 --seeds 40
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from coeval_analysis.label_suggestions import Candidate, suggest, uncertainty_from_summary
from coeval_analysis.stats.bootstrap import Bootstrap
from coeval_analysis.stats.comparisons import compare_students
from coeval_analysis.stats.headline import Judgments, fit_headline
from scipy.stats import spearmanr

THRESHOLDS = (0.4, 0.6)  #: Low below 0.4, High from 0.6 (the synthetic judges' rubric levels)
STUDENTS = ("gpt-4o-like", "gpt-3.5-like", "qwen-1.5b-like", "smollm-like", "qwen-0.5b-like")
QUALITY = (0.74, 0.68, 0.56, 0.50, 0.44)
STUDENT_FAMILY = ("gpt", "gpt", "qwen", "smollm", "qwen")
JUDGES = ("gpt-4o-j", "gpt-3.5-j", "qwen-1.5b-j", "smollm-j")
JUDGE_FAMILY = ("gpt", "gpt", "qwen", "smollm")
GPT_LIKE = (0, 1)


@dataclass
class Run:
    judgments: Judgments
    latent: np.ndarray  #: items x students x factors: what an honest grader sees
    quality: np.ndarray


def simulate_run(seed: int, n_items: int = 60, n_factors: int = 3) -> Run:
    """One run of the reference shape (see the module docstring)."""
    rng = np.random.default_rng(seed)
    S = len(STUDENTS)
    quality = np.asarray(QUALITY)
    difficulty = rng.normal(0.0, 0.1, n_items)
    latent = 0.5 + (quality - 0.55)[None, :, None] - difficulty[:, None, None] + rng.normal(0, 0.05, (n_items, S, n_factors))
    seen = {
        0: latent + rng.normal(0, 0.06, latent.shape),  # precise
        1: latent + rng.normal(0, 0.08, latent.shape),
        2: 0.5 + 0.1 * (latent - 0.5) + rng.normal(0, 0.05, latent.shape),  # flat: nearly always Medium
        3: 1.0 - latent + rng.normal(0, 0.1, latent.shape),  # contrary
    }
    items, students, judges, values, conflicted = [], [], [], [], []
    for j, view in seen.items():
        v = np.digitize(view, THRESHOLDS).mean(2) / 2.0
        ii, ss = np.meshgrid(np.arange(n_items), np.arange(S), indexing="ij")
        items.append(ii.ravel())
        students.append(ss.ravel())
        judges.append(np.full(ii.size, j))
        values.append(v.ravel())
        conflicted.append(np.array([JUDGE_FAMILY[j] == STUDENT_FAMILY[s] for s in ss.ravel()]))
    judgments = Judgments(
        item=np.concatenate(items), student=np.concatenate(students), judge=np.concatenate(judges),
        value=np.concatenate(values), conflicted=np.concatenate(conflicted), n_items=n_items, n_students=S,
        n_judges=len(JUDGES), item_teacher=np.zeros(n_items, np.int64),
    )  # fmt: skip
    return Run(judgments, latent, quality)


def simulate_labels(
    latent: np.ndarray, picks: list[tuple[int, int]], rng: np.random.Generator, noise: float = 0.08
) -> np.ndarray:
    """A labeller's answer score (mean level over factors, 0..1) for each picked (item,
    student): each factor's latent quality plus labeller noise, thresholded at the rubric's
    levels."""
    if not picks:
        return np.zeros(0)
    cells = latent[tuple(np.array(picks).T)]  # picks x factors
    return np.asarray(np.digitize(cells + rng.normal(0, noise, cells.shape), THRESHOLDS).mean(1) / 2.0)


def with_reference(j: Judgments, picks: list[tuple[int, int]], labels: np.ndarray) -> Judgments:
    """``j`` plus the labels as one more judge, unrelated to every student."""
    if not picks:
        return j
    p = np.array(picks)
    return replace(
        j,
        item=np.concatenate([j.item, p[:, 0]]),
        student=np.concatenate([j.student, p[:, 1]]),
        judge=np.concatenate([j.judge, np.full(len(p), j.n_judges)]),
        value=np.concatenate([j.value, labels]),
        conflicted=np.concatenate([j.conflicted, np.zeros(len(p), bool)]),
        n_judges=j.n_judges + 1,
    )


def fit_with_reference(j: Judgments, picks: list[tuple[int, int]], labels: np.ndarray) -> np.ndarray:
    """Student scores using the labels: today, the labels as one more unrelated judge of the
    conflict-aware headline. (The measurement model takes them as its reference judge.)"""
    return fit_headline(with_reference(j, picks, labels)).score


def rank_ranges(j: Judgments, n_boot: int, seed: int) -> list[tuple[int, int] | None]:
    h = fit_headline(j)
    reps = h.replicates(Bootstrap(j.n_items, n_boot, seed))
    return compare_students(list(STUDENTS), h.score, reps).rank_range


def _candidates(j: Judgments) -> list[Candidate]:
    S = j.n_students
    key = j.item * S + j.student
    out = []
    for k in np.unique(key):
        sel = key == k
        judges = tuple(sorted(JUDGES[x] for x in j.judge[sel]))
        out.append(Candidate(f"d{k // S:04d}", STUDENTS[k % S], str(k), judges, float(np.std(j.value[sel]))))
    return out


def suggestion_picks(run: Run, n: int, n_boot: int, seed: int) -> list[tuple[int, int]]:
    """The first ``n`` answers of the viewer's suggestion order for this run."""
    ranges = rank_ranges(run.judgments, n_boot, seed)
    summary: dict[str, Any] = {
        "students": {s: {"rank_range": list(r) if r else None} for s, r in zip(STUDENTS, ranges, strict=True)},
        "judges": {name: {} for name in JUDGES},
    }
    picks = suggest(_candidates(run.judgments), uncertainty_from_summary(summary), {}, n)
    return [(int(c.datapoint_id[1:]), STUDENTS.index(c.student)) for c in picks]


def random_picks(run: Run, n: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    cells = rng.choice(run.judgments.n_items * run.judgments.n_students, size=n, replace=False)
    return [(int(c // run.judgments.n_students), int(c % run.judgments.n_students)) for c in cells]


def _human_only(run: Run, picks: list[tuple[int, int]], labels: np.ndarray) -> np.ndarray:
    S = run.judgments.n_students
    s = np.array([p[1] for p in picks], np.int64)
    tot, cnt = np.bincount(s, labels, S), np.bincount(s, minlength=S)
    return np.where(cnt > 0, tot / np.maximum(cnt, 1), np.nan)


def evaluate(
    n_labels: int, seeds: int, n_boot: int = 200, fit: Callable[..., np.ndarray] = fit_with_reference
) -> dict[str, dict[str, float]]:
    """Per policy (none, suggested, random): mean Spearman with truth of the ranking that
    uses the labels, its top-1 rate, the share of runs whose GPT-like students' rank ranges
    (headline with labels) hold their true places, and the labels-only Spearman."""
    true_rank = 1 + np.argsort(np.argsort(-np.asarray(QUALITY)))
    out: dict[str, dict[str, list[float]]] = {p: {"rho": [], "top1": [], "gpt_places": [], "human_rho": []}
                                              for p in ("none", "suggested", "random")}  # fmt: skip
    for seed in range(seeds):
        run = simulate_run(seed)
        rng = np.random.default_rng(10_000 + seed)
        policies = {"none": [], "suggested": suggestion_picks(run, n_labels, n_boot, seed),
                    "random": random_picks(run, n_labels, rng)}  # fmt: skip
        for name, picks in policies.items():
            labels = simulate_labels(run.latent, picks, rng)
            score = fit(run.judgments, picks, labels)
            out[name]["rho"].append(float(spearmanr(score, run.quality)[0]))
            out[name]["top1"].append(float(np.nanargmax(score) == 0))
            ranges = _ranges_with(run, picks, labels, n_boot, seed)
            out[name]["gpt_places"].append(float(all(
                ranges[i] is not None and ranges[i][0] <= true_rank[i] <= ranges[i][1] for i in GPT_LIKE)))  # type: ignore[index]
            if picks:
                human = _human_only(run, picks, labels)
                ok = ~np.isnan(human)
                rho = spearmanr(human[ok], run.quality[ok])[0] if ok.sum() >= 3 else np.nan
                out[name]["human_rho"].append(float(rho))
    return {p: {k: float(np.nanmean(v)) if v else float("nan") for k, v in m.items()} for p, m in out.items()}


def _ranges_with(
    run: Run, picks: list[tuple[int, int]], labels: np.ndarray, n_boot: int, seed: int
) -> list[tuple[int, int] | None]:
    return rank_ranges(with_reference(run.judgments, picks, labels), n_boot, seed)


def with_labels_rows(n_labels: int = 40, seeds: int = 20) -> list[str]:
    """Markdown rows for ``ranking_accuracy``'s table: the reference shape with labels."""
    res = evaluate(n_labels, seeds)
    return [f"| reference shape, {n_labels} labels by {p} | {r['rho']:.3f} ({r['top1']:.0%}) |"
            for p, r in res.items()]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=40, help="labelled answers per run (each: every factor)")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--bootstrap", type=int, default=200)
    args = parser.parse_args()
    res = evaluate(args.labels, args.seeds, args.bootstrap)
    print(f"reference shape, {args.labels} labelled answers, {args.seeds} seeds")
    print("| labels | Spearman with truth | top-1 | GPT-like rank ranges hold their places | labels alone: Spearman |")
    print("|---|---|---|---|---|")
    for name, r in res.items():
        print(f"| {name} | {r['rho']:.3f} | {r['top1']:.0%} | {r['gpt_places']:.0%} | {r['human_rho']:.3f} |")


if __name__ == "__main__":
    main()
