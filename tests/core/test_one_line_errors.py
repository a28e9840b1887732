"""Storage problems end in one ``error:`` line with a fix, never a traceback: repair on a
read-only folder, status on a meta.json that is a JSON array or not UTF-8, an immutable
meta.json (named as such, not by its temporary file); and a missing meta.json sends the user
to ``coeval repair`` from both --continue (V-14) and a new run (V-11)."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from coeval.cli.main import cli
from coeval.storage import run_folder

from tests.core.pipeline_support import mock_model, task

RUN = Path("runs") / "exp"


@pytest.fixture
def finished(work: Path) -> Path:
    raw = {"models": [mock_model("a", seed=1)], "tasks": [task(total=2)],
           "experiment": {"id": "exp", "storage_folder": "runs", "probe_mode": "disable"}}
    (work / "c.yaml").write_text(yaml.safe_dump(raw))
    assert CliRunner().invoke(cli, ["run", "c.yaml"]).exit_code == 0
    return work / "c.yaml"


def _one_error(result: Any) -> str:
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    return errors[0]


@pytest.mark.parametrize("content", [b"[1, 2]", b"\xff\xfe{}"])
def test_status_on_a_meta_json_that_is_not_an_object(finished: Path, content: bytes) -> None:
    (RUN / "meta.json").write_bytes(content)
    result = CliRunner().invoke(cli, ["status", "--run", str(RUN)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert "meta.json cannot be read: run `coeval repair`" in result.output


def test_repair_on_a_read_only_folder(finished: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with (RUN / "phase5_evaluations").iterdir().__next__().open("a") as fh:
        fh.write("not json\n")

    def read_only(path: Path, text: str) -> None:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    monkeypatch.setattr(run_folder, "atomic_write_text", read_only)
    import coeval.run.repair as repair

    monkeypatch.setattr(repair, "atomic_write_text", read_only)
    result = CliRunner().invoke(cli, ["repair", "--run", str(RUN)])
    assert result.exit_code == 2
    assert "Read-only file system" in _one_error(result)


def test_an_immutable_meta_json_is_named_as_itself(finished: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.replace

    def immutable(src: Any, dst: Any) -> None:
        if str(dst).endswith("meta.json"):
            raise OSError(errno.EPERM, os.strerror(errno.EPERM), str(src), None, str(dst))
        real(src, dst)

    monkeypatch.setattr(run_folder.os, "replace", immutable)
    result = CliRunner().invoke(cli, ["run", "c.yaml", "--continue"])
    assert result.exit_code == 2
    line = _one_error(result)
    assert "meta.json" in line and ".tmp" not in line


def test_a_missing_meta_json_points_to_repair_both_ways(finished: Path) -> None:
    (RUN / "meta.json").unlink()
    again = CliRunner().invoke(cli, ["run", "c.yaml", "--continue"])
    assert again.exit_code == 2 and "coeval repair --run" in again.output, again.output
    new = CliRunner().invoke(cli, ["run", "c.yaml"])
    assert new.exit_code == 2 and "coeval repair --run" in new.output, new.output
