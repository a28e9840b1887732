"""CSV files CoEval writes never hand a spreadsheet a formula: a cell of run text starting
with ``=``, ``+``, ``-``, ``@``, tab or carriage return gets a leading ``'`` (OWASP's
advice for CSV injection); numbers are left alone."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from coeval_testing.synthetic import SyntheticSpec, write_synthetic_run

from tests.analysis.runs import datapoint, evaluation, response, write_run

#: whole runs, then analyze and export
pytestmark = pytest.mark.slow

FORMULAS = ['=HYPERLINK("https://evil.example","click")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(1,2)",
            "\t=1+1", "\r=1+1"]
DANGEROUS = ("=", "+", "-", "@", "\t", "\r")


def _coeval(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coeval.cli.main", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=240, check=False, env={**os.environ, "COEVAL_VIEW_CACHE": str(cwd / "c")})


def _cells(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8") as fh:
        return [cell for row in csv.reader(fh) for cell in row]


def test_export_csv_neutralises_formulas(tmp_path: Path) -> None:
    dps = [datapoint("t", "tea", i) for i in range(len(FORMULAS))]
    resps = [response(dp, "stu", text=FORMULAS[i]) for i, dp in enumerate(dps)]
    evals: list[dict[str, Any] | str] = [evaluation(r, "judge", {"accuracy": "High"}, raw=FORMULAS[i], rationale={"accuracy": FORMULAS[i]})
             for i, r in enumerate(resps)]
    run = write_run(tmp_path / "run", rubric={"accuracy": "right"}, datapoints=dps, responses=resps,
                    evaluations=evals)
    out = tmp_path / "j.csv"
    done = _coeval("export", "--run", str(run), "--format", "csv", "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    cells = _cells(out)
    assert not [c for c in cells if c.startswith(DANGEROUS) and not _number(c)]
    for formula in FORMULAS:
        assert cells.count("'" + formula) == 2  # the raw reply and the rationale


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tables")
    spec = SyntheticSpec(students={"=HYPERLINK(1)": 0.7, "@evil": 0.5, "+plus": 0.4, "stu-d": 0.3},
                         datapoints_per_teacher=4)
    run = write_synthetic_run(root / "run", spec)
    done = _coeval("analyze", "--run", str(run), "--out", str(root / "a"), "--bootstrap", "0", "--quiet", cwd=root)
    assert done.returncode == 0, done.stderr
    return root / "a" / "tables"


def test_analysis_tables_neutralise_formulas(tables: Path) -> None:
    files = sorted(tables.glob("*.csv"))
    assert files
    cells = [c for f in files for c in _cells(f)]
    assert not [c for c in cells if c.startswith(DANGEROUS) and not _number(c)]
    assert "'=HYPERLINK(1)" in cells and "'@evil" in cells and "'+plus" in cells
    assert not [c for c in cells if c.startswith("'") and _number(c[1:])]  # numbers are left as they are
