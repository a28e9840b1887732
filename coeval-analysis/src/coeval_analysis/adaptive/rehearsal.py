"""Rehearse an adaptive design on mock judges before paying for it (``coeval plan --adaptive``).

Each run draws a grid the way the ``mock`` interface plays one: a student of quality ``q``
writes six sentences or more, each solid with probability ``q``, so an answer's quality is
the share of solid ones; a judge follows it with probability ``reliability`` (reading it
within +-0.15, shifted by its bias for the student and blurred by its noise) and guesses a
level otherwise, or gives every answer its one ``flat`` level. The design is then played over
the grid (:func:`~coeval_analysis.adaptive.design.play`), and what it bought is counted per
judge. The mock's draws are not the run's (they hang on prompts the plan does not have): the
rehearsal gives the spread of what a design of this shape buys, not what one run will.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from coeval.contract.adaptive import Rehearsal, RehearsalOutcome, RehearsedJudge

from coeval_analysis.adaptive.design import Design, play
from coeval_analysis.adaptive.stopping import parse_stop_rule
from coeval_analysis.stats.headline import Judgments

__all__ = ["draw_grid", "rehearse"]

#: sentences of a mock answer (the mock writes at least this many)
SENTENCES = 6
#: how far a mock judge reads an answer's quality off, either way
READING = 0.15
#: the levels' values on the 0..1 scale
LEVELS = {"low": 0.0, "medium": 0.5, "high": 1.0}


def _judge_values(judge: RehearsedJudge, quality: np.ndarray, students: list[str],
                  rng: np.random.Generator) -> np.ndarray:
    """(datapoints, students) values one judge gives the answers of ``quality``."""
    if judge.flat is not None:
        return np.full(quality.shape, LEVELS[judge.flat])
    shift = np.array([judge.bias.get(s, 0.0) for s in students])[None, :]
    read = quality + rng.uniform(-READING, READING, quality.shape) + shift
    if judge.noise > 0:
        read = read + judge.noise * rng.standard_normal(quality.shape)
    level = np.where(read >= 0.66, 1.0, np.where(read >= 0.33, 0.5, 0.0))
    guess = rng.integers(0, 3, quality.shape) / 2.0
    follows = rng.uniform(0, 1, quality.shape) < judge.reliability
    out: np.ndarray = np.where(follows, level, guess)
    return out


def draw_grid(r: Rehearsal, rng: np.random.Generator) -> Judgments:
    """One full grid of judgments of the rehearsed design."""
    students = list(r.students)
    item_teacher = np.repeat(np.arange(len(r.datapoints)), r.datapoints)
    n_items = int(item_teacher.size)
    q = np.array([r.students[s] for s in students])
    quality = rng.binomial(SENTENCES, np.broadcast_to(q, (n_items, q.size))) / SENTENCES
    values = np.stack([_judge_values(j, quality, students, rng) for j in r.judges])  # (judges, items, students)
    jj, ii, ss = np.meshgrid(np.arange(len(r.judges)), np.arange(n_items), np.arange(len(students)), indexing="ij")
    families = np.array([r.families.get(s, s) for s in students], dtype=object)
    judge_family = np.array([j.family for j in r.judges], dtype=object)
    conflicted = judge_family[jj.ravel()] == families[ss.ravel()]
    return Judgments(ii.ravel().astype(np.int64), ss.ravel().astype(np.int64), jj.ravel().astype(np.int64),
                     values.ravel().astype(np.float64), np.asarray(conflicted, bool), n_items, len(students),
                     len(r.judges), item_teacher.astype(np.int64))


def _design(settings: Mapping[str, Any]) -> Design:
    return Design(stop_when=parse_stop_rule(settings.get("stop_when")), looks=int(settings.get("looks", 6)),
                  calibration=float(settings.get("calibration", 0.3)), alpha=float(settings.get("alpha", 0.05)),
                  screen=bool(settings.get("screen", True)))


def rehearse(r: Rehearsal) -> RehearsalOutcome:
    """Play the design ``r.runs`` times over grids drawn afresh."""
    names = [j.name for j in r.judges]
    design = _design(r.settings)
    bought: list[dict[str, int]] = []
    stopped = dict.fromkeys(names, 0)
    full: dict[str, int] = {}
    for run in range(r.runs):
        grid = draw_grid(r, np.random.default_rng([r.seed, 7052, run]))
        full = {n: int(c) for n, c in zip(names, np.bincount(grid.judge, minlength=len(names)), strict=True)}
        outcome = play(grid, names, design, seed=r.seed + run)
        counts = np.bincount(outcome.bought.judge, minlength=len(names))
        bought.append({n: int(c) for n, c in zip(names, counts, strict=True)})
        for n in outcome.screening.stopped if outcome.screening is not None else []:
            stopped[n] += 1
    return RehearsalOutcome(full, tuple(bought), {n: k / max(r.runs, 1) for n, k in stopped.items()})
