"""What ``pip install ./coeval-<name>`` ships: the product and its types, never the test
support (the fake provider server and the synthetic-run writer live in coeval-testing)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

#: pip wheel of each distribution
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def wheel_files(distribution: str, where: Path) -> list[str]:
    """The file list of the distribution's wheel, built from the checkout as pip builds it."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         str(REPO / distribution), "-w", str(where)],
        check=True, capture_output=True, text=True, timeout=600,
    )
    (wheel,) = where.glob("*.whl")
    return zipfile.ZipFile(wheel).namelist()


def test_the_providers_wheel_ships_no_fake_server(tmp_path: Path) -> None:
    files = wheel_files("coeval-providers", tmp_path)
    assert {"coeval_providers/plugin.py", "coeval_providers/py.typed"} <= set(files)
    assert [f for f in files if "fake_server" in f] == []


def test_the_analysis_wheel_ships_no_synthetic_run_writer(tmp_path: Path) -> None:
    files = wheel_files("coeval-analysis", tmp_path)
    assert {"coeval_analysis/loading/loader.py", "coeval_analysis/py.typed"} <= set(files)
    assert [f for f in files if "synthetic" in f] == []


@pytest.mark.parametrize("distribution", ["coeval-core", "coeval-hf", "coeval-benchmarks"])
def test_every_wheel_ships_its_types(distribution: str, tmp_path: Path) -> None:
    package = distribution.replace("-", "_").replace("coeval_core", "coeval")
    assert f"{package}/py.typed" in wheel_files(distribution, tmp_path)


def test_the_test_support_is_a_distribution_of_its_own(tmp_path: Path) -> None:
    files = wheel_files("coeval-testing", tmp_path)
    assert {"coeval_testing/fake_server/__init__.py", "coeval_testing/synthetic.py"} <= set(files)
