"""What a few human labels do for the ranking, on synthetic runs of the reference run's shape.

The shape: the two judges that tell answers apart are of one family (``gpt``) whose two
students are truly the best; of the unrelated judges one is flat (nearly every answer
Medium) and one contrary (it sees answers upside down) and has a student of its family.
The headline leaves out the GPT judges' scores of GPT students, so those students rest on
judges that cannot rank them: no arrangement of the run's own judgments settles it.

A simulated labeller sees each rubric factor's latent quality plus noise and answers Low /
Medium / High at the rubric's thresholds (:func:`simulate_labels`), exactly as the
synthetic judges do, on the answers a policy picks: the viewer's suggestion order
(:func:`coeval_analysis.labels.suggestions.suggest`, fed by the headline's rank ranges) or
random answers. Per policy, over many seeds: mean Spearman's rho between truth and the
ranking that uses the labels, how often the GPT-like students' rank ranges hold their
true places, and the ranking by the labels alone.

The ranking that uses the labels is :func:`measure`: the path of ``coeval analyze``
(:func:`coeval_analysis.ranking.headline.headline_ranking`), the measurement model with the
labels as its reference judge, its bootstrap and rank ranges. The suggestion order reads
the headline without labels (paired comparisons, each student's interval and rank range,
and each judge's ``family_bias_prior_share``), as the viewer does before the first label.

    python -m benchmarks.labels_in_loop                 # 40 labelled answers, 20 seeds
    python -m benchmarks.labels_in_loop --labels 40 --seeds 40
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

import numpy as np
from coeval_analysis.labels.suggestions import Candidate, suggest, uncertainty_from_summary
from coeval_analysis.ranking.headline import unrelated_share
from coeval_analysis.stats.bootstrap import Bootstrap, percentile_interval
from coeval_analysis.stats.comparisons import compare_students
from coeval_analysis.stats.headline import Judgments
from coeval_analysis.stats.measurement import Reference, bootstrap, fit_all, layout_of, student_scores
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


def simulate_run(
    seed: int, n_items: int = 60, n_factors: int = 3, self_preference: float = 0.0, shared: bool = False
) -> Run:
    """One run of the reference shape (see the module docstring). ``self_preference``: each
    GPT judge sees the answers of its own namesake student (gpt-4o-j: gpt-4o-like, gpt-3.5-j:
    gpt-3.5-like) this much better than they are, the calibration variant in which the judges'
    view of the two GPT-like students really is skewed, in opposite directions; ``shared``:
    both see gpt-3.5-like's answers that much better instead, which turns their view of the
    two upside down and which only the labels can show."""
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
    for j in GPT_LIKE:  # judge j's namesake is student j
        seen[j][:, GPT_LIKE[1] if shared else j] += self_preference
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


@dataclass
class Measured:
    """The headline of one synthetic run as ``coeval analyze`` computes it: scores, rank
    ranges, and per student whether its place is determined."""

    score: np.ndarray
    rank_range: list[tuple[int, int] | None]
    summary: dict[str, Any]  #: the parts of ``summary.json`` the suggestion order reads


def measure(j: Judgments, picks: list[tuple[int, int]], labels: np.ndarray, n_boot: int, seed: int) -> Measured:
    """The analysis path of :func:`coeval_analysis.ranking.headline.headline_ranking` on
    judgment arrays: the measurement model with the labels as its reference judge (scale 1,
    location 0, no family), its bootstrap, comparisons and rank ranges; the summary holds
    what the suggestion order reads (rank ranges, intervals, paired comparisons)."""
    ref = None
    if picks:
        p = np.array(picks, np.int64)
        ref = Reference(p[:, 0], p[:, 1], np.asarray(labels, np.float64))
    lay = layout_of(j, ref)
    f, sub, share = fit_all(lay)
    sc = student_scores(lay, f)
    boot = Bootstrap(j.n_items, n_boot, seed)
    reps = bootstrap(lay, f, sc, sub, share, list(boot.weights()), boot.seed).score if n_boot else np.zeros((0, len(STUDENTS)))
    comp = compare_students(list(STUDENTS), sc.score, reps)
    k = j.n_judges
    n_conf = np.bincount(j.judge[j.conflicted].astype(np.int64), minlength=k)[:k]
    unrelated = unrelated_share(lay, f)
    lo, hi = percentile_interval(reps) if len(reps) else (np.full(len(STUDENTS), np.nan),) * 2
    summary: dict[str, Any] = {
        "students": {s: {"rank_range": list(r) if r else None, "unrelated_judge_weight": float(unrelated[i]),
                         "ci": [float(lo[i]), float(hi[i])] if len(reps) else [None, None]}
                     for i, (s, r) in enumerate(zip(STUDENTS, comp.rank_range, strict=True))},
        "comparisons": comp.pairs,
        "judges": {name: {"family_bias_prior_share": float(f.bias_prior_share[i]) if n_conf[i] else None}
                   for i, name in enumerate(JUDGES)},
    }  # fmt: skip
    return Measured(sc.score, comp.rank_range, summary)


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
    """The first ``n`` answers of the viewer's suggestion order for this run, chosen from
    its headline without labels (as the viewer does before the first label)."""
    summary = measure(run.judgments, [], np.zeros(0), n_boot, seed).summary
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


def evaluate(n_labels: int, seeds: int, n_boot: int = 200) -> dict[str, dict[str, float]]:
    """Per policy (none, suggested, random): mean Spearman with truth of the headline that
    uses the labels (:func:`measure`), its top-1 rate, the share of runs whose GPT-like
    students' rank ranges hold their true places, the share where those ranges are exactly
    their true places, the GPT-like ranges' mean width (places beyond one), and the
    labels-only Spearman; and ``suggested_minus_random``: the widths' difference, paired by
    seed, with its standard error (a width moves in steps of half a place per run, so a
    difference under two standard errors is not one the bench can tell)."""
    true_rank = 1 + np.argsort(np.argsort(-np.asarray(QUALITY)))
    keys = ("rho", "top1", "gpt_places", "gpt_exact", "gpt_width", "human_rho")
    out: dict[str, dict[str, list[float]]] = {p: {k: [] for k in keys} for p in ("none", "suggested", "random")}
    for seed in range(seeds):
        run = simulate_run(seed)
        rng = np.random.default_rng(10_000 + seed)
        policies = {"none": [], "suggested": suggestion_picks(run, n_labels, n_boot, seed),
                    "random": random_picks(run, n_labels, rng)}  # fmt: skip
        for name, picks in policies.items():
            labels = simulate_labels(run.latent, picks, rng)
            m = measure(run.judgments, picks, labels, n_boot, seed)
            out[name]["rho"].append(float(spearmanr(m.score, run.quality)[0]))
            out[name]["top1"].append(float(np.nanargmax(m.score) == 0))
            gpt = [m.rank_range[i] for i in GPT_LIKE]
            out[name]["gpt_places"].append(float(all(
                r is not None and r[0] <= true_rank[i] <= r[1] for i, r in zip(GPT_LIKE, gpt, strict=True))))
            out[name]["gpt_exact"].append(float(all(
                r is not None and r[0] == r[1] == true_rank[i] for i, r in zip(GPT_LIKE, gpt, strict=True))))
            out[name]["gpt_width"].append(float(np.mean([r[1] - r[0] if r else len(STUDENTS) - 1 for r in gpt])))
            if picks:
                human = _human_only(run, picks, labels)
                ok = ~np.isnan(human)
                rho = spearmanr(human[ok], run.quality[ok])[0] if ok.sum() >= 3 else np.nan
                out[name]["human_rho"].append(float(rho))
    res = {p: {k: float(np.nanmean(v)) if v else float("nan") for k, v in m.items()} for p, m in out.items()}
    # suggested - random, paired by seed: the mean difference of the GPT-like widths and its standard error
    diff = np.asarray(out["suggested"]["gpt_width"]) - np.asarray(out["random"]["gpt_width"])
    res["suggested_minus_random"] = {"gpt_width": float(diff.mean()),
                                     "gpt_width_se": float(diff.std(ddof=1) / np.sqrt(len(diff))) if len(diff) > 1
                                     else float("nan")}  # fmt: skip
    return res


def with_labels_rows(n_labels: int = 40, seeds: int = 10, n_boot: int = 150) -> list[str]:
    """Rows for ``ranking_accuracy``'s figure table (``| figure | measured | target |``):
    the reference shape with ``n_labels`` labels chosen by the suggestion order or at random."""
    res = evaluate(n_labels, seeds, n_boot)
    sug, rnd, none = res["suggested"], res["random"], res["none"]
    return [
        f"| reference shape, Spearman: no labels / {n_labels} suggested / {n_labels} random ({seeds} seeds) "
        f"| {none['rho']:.3f} / {sug['rho']:.3f} / {rnd['rho']:.3f} | suggested >= 0.95 |",
        f"| reference shape, GPT-like rank ranges' mean width: no labels / suggested / random "
        f"| {none['gpt_width']:.2f} / {sug['gpt_width']:.2f} / {rnd['gpt_width']:.2f} | suggested < random |",
        f"| reference shape, width suggested - random (paired by seed, +- standard error) "
        f"| {res['suggested_minus_random']['gpt_width']:+.2f} +- {res['suggested_minus_random']['gpt_width_se']:.2f} "
        f"| below -2 standard errors |",
        f"| reference shape, GPT-like rank ranges hold their true places: suggested / random "
        f"| {sug['gpt_places']:.0%} / {rnd['gpt_places']:.0%} | 100% |",
        f"| reference shape, GPT-like rank ranges are exactly their true places: no labels / suggested / random "
        f"| {none['gpt_exact']:.0%} / {sug['gpt_exact']:.0%} / {rnd['gpt_exact']:.0%} | reported |",
    ]


def run(n_labels: int = 40, seeds: int = 10, n_boot: int = 150) -> dict[str, Any]:
    """``nox -s bench``'s "with labels" figure: :func:`evaluate` per policy, and whether the
    targets hold (suggested labels lift the Spearman to 0.95 and narrow the GPT-like rank
    ranges more than random ones, every run's GPT-like ranges holding their true places)."""
    res = evaluate(n_labels, seeds, n_boot)
    sug, gap = res["suggested"], res["suggested_minus_random"]
    ok = sug["rho"] >= 0.95 and gap["gpt_width"] < -2 * gap["gpt_width_se"] and sug["gpt_places"] == 1.0
    return {"name": "labels", "n_labels": n_labels, "seeds": seeds, "n_boot": n_boot, "policies": res, "ok": ok}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=40, help="labelled answers per run (each: every factor)")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--bootstrap", type=int, default=200)
    args = parser.parse_args()
    res = evaluate(args.labels, args.seeds, args.bootstrap)
    print(f"reference shape, {args.labels} labelled answers, {args.seeds} seeds")
    print("| labels | Spearman with truth | top-1 | GPT-like rank ranges hold their places | are exactly them "
          "| their mean width | labels alone: Spearman |")
    print("|---|---|---|---|---|---|---|")
    gap = res.pop("suggested_minus_random")
    for name, r in res.items():
        print(f"| {name} | {r['rho']:.3f} | {r['top1']:.0%} | {r['gpt_places']:.0%} | {r['gpt_exact']:.0%} "
              f"| {r['gpt_width']:.2f} | {r['human_rho']:.3f} |")
    print(f"width, suggested - random (paired by seed): {gap['gpt_width']:+.2f} +- {gap['gpt_width_se']:.2f} (standard error)")


if __name__ == "__main__":
    main()
