"""A judge that gives every factor of an answer the same level is measured and flagged."""

from __future__ import annotations

import pandas as pd
from coeval_analysis.warnings.judge_quality import degenerate_rates, with_degenerate_rates


def units(rows: list[tuple[str, int, int]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["judge", "response", "level"])


def test_rate_is_the_share_of_answers_with_one_level_for_every_factor() -> None:
    u = units([("flat", 1, 2), ("flat", 1, 2), ("flat", 2, 0), ("flat", 2, 0),
               ("fair", 1, 2), ("fair", 1, 1), ("fair", 2, 0), ("fair", 2, 0), ("fair", 3, 1), ("fair", 3, 2),
               ("fair", 4, 1), ("fair", 4, 1)])
    assert degenerate_rates(u) == {"flat": 1.0, "fair": 0.5}


def test_single_factor_scorings_and_numeric_scores_do_not_count() -> None:
    u = units([("one", 1, 2), ("one", 2, 2), ("num", 1, -1), ("num", 1, -1)])
    assert degenerate_rates(u) == {}


def test_summary_entries_get_rate_and_flag() -> None:
    u = units([("flat", 1, 2), ("flat", 1, 2), ("fair", 1, 2), ("fair", 1, 0)])
    out = with_degenerate_rates({"flat": {"n": 1}, "fair": {"n": 1}, "silent": {"n": 0}}, degenerate_rates(u))
    assert out == {"flat": {"n": 1, "degenerate_rate": 1.0, "degenerate": True},
                   "fair": {"n": 1, "degenerate_rate": 0.0, "degenerate": False},
                   "silent": {"n": 0, "degenerate_rate": None, "degenerate": False}}
