"""In-memory synthetic judgments with known truth, vectorised, for measuring estimators.

:func:`coeval_testing.synthetic.write_synthetic_run` writes whole run folders (for the
loader, the CLI and the benchmark); this module draws the same kind of data as arrays in
milliseconds, so an estimator can be measured over many seeds per scenario. A judge sees
``latent + leniency + noise (+ taste, + bias)`` of each rubric factor and answers Low /
Medium / High by thresholds; the answer's value is the mean level over factors on 0..1.
The truth is the students' quality.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from coeval_analysis.stats.headline import Judgments

__all__ = ["NOISE_ONLY", "REFERENCE_SHAPED", "SCENARIOS", "Scenario", "Simulated", "plain_scores", "simulate"]


@dataclass(frozen=True)
class Scenario:
    """What to draw. Judges are named ``j0..``; ``students`` is how many; families and
    biases refer to judge and student indices."""

    name: str
    n_students: int = 10
    n_teachers: int = 3
    items_per_teacher: int = 25
    n_factors: int = 3
    judge_noise: Sequence[float] = (0.08, 0.12, 0.16, 0.2)
    random_judges: int = 0
    #: judge index -> per-student taste standard deviation
    taste_sd: Mapping[int, float] = field(default_factory=dict)
    #: judge index -> (student indices it favours, bias added on their answers)
    favours: Mapping[int, tuple[tuple[int, ...], float]] = field(default_factory=dict)
    #: teacher index -> spread multiplier of student quality on its items (0: unrelated)
    teacher_spread: Mapping[int, float] = field(default_factory=dict)
    #: student index -> share of its hardest answers that fail (missing)
    fail_hardest: Mapping[int, float] = field(default_factory=dict)
    #: student whose every answer fails
    all_failed: int | None = None
    difficulty_sd: float = 0.12
    #: fixed student quality (None: drawn uniformly in 0.4..0.7 per seed)
    quality: Sequence[float] | None = None
    #: judge index -> how strongly its scores follow answer quality (1: fully; 0: a flat
    #: judge that sees every answer alike; negative: a contrary judge)
    judge_scale: Mapping[int, float] = field(default_factory=dict)
    #: judge index -> shift added before the level thresholds (a lenient or harsh judge)
    judge_shift: Mapping[int, float] = field(default_factory=dict)


@dataclass
class Simulated:
    judgments: Judgments
    quality: np.ndarray  #: true quality per student
    judges: list[str]


#: the scenario classes of the design brief (10 students, 3 teachers x 25 items)
SCENARIOS: dict[str, Scenario] = {
    "decent": Scenario("decent"),
    "random_judge": Scenario("random_judge", random_judges=1),
    "self_preferring": Scenario(
        "self_preferring", judge_noise=(0.08, 0.12, 0.16, 0.2, 0.1), favours={4: ((4,), 0.30)}
    ),
    "same_family": Scenario(
        "same_family", judge_noise=(0.05, 0.05, 0.16, 0.2, 0.2), favours={0: ((3, 6), 0.25), 1: ((3, 6), 0.25)}
    ),
    "idiosyncratic": Scenario("idiosyncratic", taste_sd={2: 0.12, 3: 0.12}),
    "hardest_fail": Scenario("hardest_fail", fail_hardest={5: 0.4}),
    "bad_teacher": Scenario("bad_teacher", teacher_spread={2: 0.0}),
}

#: the reference run's shape: the only judges that tell answers apart are of one family,
#: whose two students are truly the best; the unrelated judges are flat or contrary, and one
#: of them has a family student of its own
_BEST_TWO = (0.40, 0.42, 0.45, 0.47, 0.50, 0.52, 0.55, 0.58, 0.66, 0.70)
REFERENCE_SHAPED: dict[str, Scenario] = {
    "family_top_flat": Scenario(
        "family_top_flat", judge_noise=(0.06, 0.06, 0.05, 0.1), quality=_BEST_TWO,
        judge_scale={2: 0.0, 3: 0.1}, judge_shift={2: 0.25, 3: 0.1},
        favours={0: ((8, 9), 0.10), 1: ((8, 9), 0.10), 3: ((0,), 0.10)},
    ),
    "family_top_contrary": Scenario(
        "family_top_contrary", judge_noise=(0.06, 0.06, 0.08, 0.15), quality=_BEST_TWO,
        judge_scale={2: 0.0, 3: -0.4}, judge_shift={2: 0.2},
        favours={0: ((8, 9), 0.10), 1: ((8, 9), 0.10), 2: ((0,), 0.10)},
    ),
}
SCENARIOS.update(REFERENCE_SHAPED)

#: judges whose scores do not depend on the answer at all
NOISE_ONLY = Scenario("noise_only", judge_noise=(), random_judges=4, quality=_BEST_TWO)


def simulate(sc: Scenario, seed: int) -> Simulated:
    """Draw one run of ``sc``; conflicted = a judge's scores of the students it favours."""
    rng = np.random.default_rng(seed)
    S, F = sc.n_students, sc.n_factors
    n_items = sc.n_teachers * sc.items_per_teacher
    quality = rng.uniform(0.4, 0.7, S) if sc.quality is None else np.asarray(sc.quality, float)
    item_teacher = np.repeat(np.arange(sc.n_teachers), sc.items_per_teacher).astype(np.int32)
    spread = np.array([sc.teacher_spread.get(t, 1.0) for t in range(sc.n_teachers)])[item_teacher]
    difficulty = rng.normal(0.0, sc.difficulty_sd, n_items)
    latent = (
        0.5
        + spread[:, None, None] * (quality[None, :, None] - 0.55)
        - difficulty[:, None, None]
        + rng.normal(0.0, 0.04, (n_items, S, F))
    )
    n_j = len(sc.judge_noise) + sc.random_judges
    values = np.empty((n_j, n_items, S))
    conflicted = np.zeros((n_j, n_items, S), bool)
    for jdx in range(n_j):
        if jdx >= len(sc.judge_noise):
            levels = rng.integers(0, 3, latent.shape)
        else:
            scale, shift = sc.judge_scale.get(jdx, 1.0), sc.judge_shift.get(jdx, 0.0)
            seen = 0.5 + shift + scale * (latent - 0.5) + rng.normal(0.0, sc.judge_noise[jdx], latent.shape)
            if jdx in sc.taste_sd:
                seen += rng.normal(0.0, sc.taste_sd[jdx], S)[None, :, None]
            if jdx in sc.favours:
                who, bias = sc.favours[jdx]
                seen[:, list(who), :] += bias
                conflicted[jdx][:, list(who)] = True
            levels = np.digitize(seen, [0.4, 0.6])
        values[jdx] = levels.mean(2) / 2.0
    missing = np.zeros((n_items, S), bool)
    order = np.argsort(-difficulty)
    for s, share in sc.fail_hardest.items():
        missing[order[: round(share * n_items)], s] = True
    if sc.all_failed is not None:
        missing[:, sc.all_failed] = True
    jj, ii, ss = np.nonzero(~missing[None, :, :] & np.ones((n_j, 1, 1), bool))
    judgments = Judgments(
        item=ii.astype(np.int64),
        student=ss.astype(np.int64),
        judge=jj.astype(np.int64),
        value=values[jj, ii, ss],
        conflicted=conflicted[jj, ii, ss],
        n_items=n_items,
        n_students=S,
        n_judges=n_j,
        item_teacher=item_teacher,
    )
    return Simulated(judgments, quality, [f"j{k}" for k in range(n_j)])


def plain_scores(j: Judgments) -> np.ndarray:
    """The plain mean: every judgment of a student's answers counts equally."""
    tot = np.bincount(j.student, j.value, j.n_students)
    cnt = np.bincount(j.student, minlength=j.n_students)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt > 0, tot / np.maximum(cnt, 1), np.nan)
