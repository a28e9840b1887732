"""Which way is better: the measured judges' majority decides, and a judge the fit left at
the floor is no side of it (``measurement_model.measured_sides``).

A floored scale moves with the rescaling of theta (1.16 times the floor in seed 28 of
``family_top_contrary``'s undamped fit), just enough to pass as measured. The fit's restart
stopped counting such a judge first; the reported scale counts sides by the same rule, so
a judge that is next to blind cannot turn a tie into a majority there either.
"""

from __future__ import annotations

import copy

import numpy as np
from coeval_analysis.stats.measurement import fit_all, layout_of
from coeval_analysis.stats.measurement_model import (
    COMPETENT,
    LAMBDA_FLOOR,
    Fit,
    Layout,
    measured,
    measured_sides,
)
from coeval_analysis.stats.measurement_scores import reported_scale
from coeval_analysis.stats.scenarios import SCENARIOS, simulate


def _tied_fit() -> tuple[Layout, Fit]:
    """Seed 28's fit, rearranged so that its sides tie: one GPT judge left at the floor,
    the other forward, and the contrary judge reversed with more information than it."""
    lay = layout_of(simulate(SCENARIOS["family_top_contrary"], 28).judgments)
    f = copy.deepcopy(fit_all(lay)[0])
    f.scale = f.scale.copy()
    f.scale[0] = LAMBDA_FLOOR  # gpt-a: no evidence
    f.scale[3] = -3.0 * abs(f.scale[1])  # the contrary judge outweighs gpt-b
    return lay, f


def _with_flat_at(f: Fit, times_floor: float) -> Fit:
    g = copy.deepcopy(f)
    g.scale = g.scale.copy()
    g.scale[2] = times_floor * LAMBDA_FLOOR  # the flat judge, on gpt-b's side
    return g


def test_a_floored_judge_rescaled_off_the_floor_is_no_side() -> None:
    lay, f = _tied_fit()
    drifted = _with_flat_at(f, 1.16)
    assert measured(drifted.scale[2:3])[0] and drifted.reliability[2] < COMPETENT
    forward, reversed_ = measured_sides(lay, drifted)
    assert forward.tolist() == [False, True, False, False]
    assert reversed_.tolist() == [False, False, False, True]


def test_the_reported_direction_does_not_rest_on_a_floored_judge() -> None:
    """At the floor or 1.16 times it, the flat judge leaves a tie, which the information
    of each side breaks: the contrary judge's, here."""
    lay, f = _tied_fit()
    at_floor = reported_scale(lay, _with_flat_at(f, 1.0))
    drifted = reported_scale(lay, _with_flat_at(f, 1.16))
    assert at_floor[0] < 0
    assert np.sign(drifted[0]) == np.sign(at_floor[0])
    assert np.isclose(drifted[0], at_floor[0], rtol=1e-3)
