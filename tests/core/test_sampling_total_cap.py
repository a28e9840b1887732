"""The documented cap on ``sampling.total``: 1,000,000 passes, one more is V-23 with exit 2."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from coeval.cli.main import cli


def test_total_cap_is_one_million(work: Path) -> None:
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    text = (work / "coeval.yaml").read_text()
    (work / "at.yaml").write_text(text.replace("total: 5 }", "total: 1000000 }"))
    (work / "over.yaml").write_text(text.replace("total: 5 }", "total: 1000001 }"))
    assert CliRunner().invoke(cli, ["run", "at.yaml", "--dry-run"]).exit_code == 0
    over = CliRunner().invoke(cli, ["run", "over.yaml", "--dry-run"])
    assert over.exit_code == 2
    assert "V-23 tasks[0].sampling.total: must be <= 1000000, got 1000001" in over.output
