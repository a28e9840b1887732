"""``coeval plan`` only looks: it writes into the run folder only where ``--out`` says."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from coeval.cli.main import cli


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
            and p.name != ".meta.lock"}


def test_plan_continue_leaves_the_run_folder_untouched_unless_out(work: Path) -> None:
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    assert CliRunner().invoke(cli, ["run", "coeval.yaml"]).exit_code == 0
    run = work / "runs" / "starter-mock"
    before = _files(run)
    planned = CliRunner().invoke(cli, ["plan", "--config", "coeval.yaml", "--continue"])
    assert planned.exit_code == 0, planned.output
    assert _files(run) == before
    assert "estimate written" not in planned.output

    out = work / "estimate.json"
    written = CliRunner().invoke(cli, ["plan", "--config", "coeval.yaml", "--continue", "--out", str(out)])
    assert written.exit_code == 0, written.output
    assert f"estimate written to {out}" in written.output
    printed = CliRunner().invoke(cli, ["plan", "--config", "coeval.yaml", "--continue", "--json"])
    assert json.loads(out.read_text())["total_calls"] == json.loads(printed.output)["total_calls"]
    assert _files(run) == before
