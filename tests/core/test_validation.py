"""Every validation rule, through the real CLI: a corpus of broken configs.

Each file in ``broken_configs/`` declares in its header comments the rule it breaks, the
YAML path of the problem and, optionally, extra CLI arguments and a setup step; the line
of the problem carries a ``# <-`` marker. The test runs ``coeval run --config FILE`` and
checks the exit code (2), the rule id, the path, the line, and that no traceback leaks.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from coeval.cli.main import cli
from coeval.config import ConfigError
from coeval.config.validate import ALL_RULES
from coeval.plugins.config_loading import load_config, validate_config

CORPUS = Path(__file__).parent / "broken_configs"
CASES = sorted(CORPUS.glob("*.yaml"))


def header(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"# (rule|path|args|setup): (.*)$", line)
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


def marked_line(path: Path) -> int | None:
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.rstrip().endswith("# <-"):
            return n
    return None


def prepare(case: Path, workdir: Path) -> Path:
    """Copy the case into ``workdir`` and perform its setup step."""
    target = workdir / case.name
    target.write_text(case.read_text(encoding="utf-8"), encoding="utf-8")
    setup = header(case).get("setup")
    if setup:
        verb, _, rest = setup.partition(" ")
        if verb == "mkdir":
            (workdir / rest).mkdir(parents=True)
        elif verb == "write":
            rel, _, content = rest.partition(" ")
            (workdir / rel).parent.mkdir(parents=True, exist_ok=True)
            (workdir / rel).write_text(content, encoding="utf-8")
        else:  # pragma: no cover - a mistake in the corpus
            raise AssertionError(f"unknown setup {setup!r}")
    return target


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with no credentials anywhere."""
    empty_keys = tmp_path / "no-keys.yaml"
    empty_keys.write_text("providers: {}\n", encoding="utf-8")
    monkeypatch.setenv("COEVAL_KEYS_FILE", str(empty_keys))
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in (
        "OPENAI_API_KEY",
        "OPENROUTER_API_KEY",
        "DEEPSEEK_API_KEY",
        "DEEPINFRA_API_KEY",
        "GROQ_API_KEY",
    ):
        monkeypatch.delenv(var, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def test_corpus_covers_every_rule() -> None:
    covered = {header(c)["rule"] for c in CASES}
    assert set(ALL_RULES) <= covered, f"rules without a broken config: {sorted(set(ALL_RULES) - covered)}"


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_broken_config_fails_cleanly(case: Path, isolated: Path) -> None:
    meta = header(case)
    config = prepare(case, isolated)
    args = ["run", "--config", config.name, *shlex.split(meta.get("args", ""))]
    result = CliRunner().invoke(cli, args)

    assert result.exit_code == 2, result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), (
        result.exception
    )
    assert "Traceback" not in result.output
    expected = f"{meta['rule']} {meta['path']}:"
    assert expected in result.stderr, f"expected {expected!r} in:\n{result.stderr}"
    line = marked_line(case)
    if line is not None:
        assert f"{config.name}:{line}: {expected}" in result.stderr, result.stderr
    assert "fix:" in result.stderr
    # nothing was written besides what the test set up
    assert not (isolated / "runs" / "broken" / "config.yaml").exists()


def test_all_problems_are_reported_at_once(tmp_path: Path) -> None:
    config = tmp_path / "many.yaml"
    config.write_text(
        """\
models:
  - name: alpha
    interface: opneai
    roles: [teacher, student, judgee]
tasks:
  - name: qa
    description: Answer.
    target_attributes: {topic: [a, b]}
    rubric: {correct: "Right."}
    evaluation_mode: pairwise
experiment:
  id: many
  log_level: loud
""",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as err:
        load_config(config, check_filesystem=False)
    assert sorted(err.value.rules) == ["V-05", "V-06", "V-07", "V-22", "V-24"]
    by_rule = {i.rule: i for i in err.value.issues}
    assert by_rule["V-05"].path == "models[0].roles[2]"
    assert by_rule["V-05"].line == 4
    assert "did you mean 'judge'" in by_rule["V-05"].message
    assert "did you mean 'openai'" in by_rule["V-06"].message
    assert by_rule["V-24"].line == 13
    # the message names the file, and every issue has a fix
    assert str(config) in str(err.value)
    assert all(i.fix for i in err.value.issues)


def test_validate_config_returns_issues_without_raising(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text((CORPUS / "v22_evaluation_mode.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    issues = validate_config(config, check_filesystem=False)
    assert [i.rule for i in issues] == ["V-22"]
    assert issues[0].to_dict()["path"] == "tasks[0].evaluation_mode"


def test_dry_run_reports_disk_problems_as_warnings(isolated: Path) -> None:
    """A dry run still plans when the disk is not ready (V-10, V-11): it warns instead."""
    config = prepare(CORPUS / "v10_resume_missing.yaml", isolated)
    result = CliRunner().invoke(cli, ["run", "--config", config.name, "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "warning V-10 experiment.resume_from" in result.stderr
    assert "Dry run" in result.stdout


def dry_run_with_keys(workdir: Path, keys_yaml: str) -> Result:
    """``coeval run --dry-run`` of the mock smoke example with a key file holding ``keys_yaml``."""
    keys = workdir / "keys.yaml"
    keys.write_text(keys_yaml, encoding="utf-8")
    config = workdir / "ok.yaml"
    config.write_text(
        (Path(__file__).parents[2] / "examples" / "mock_smoke.yaml").read_text(), encoding="utf-8"
    )
    return CliRunner().invoke(cli, ["run", "--config", str(config), "--dry-run", "--keys", str(keys)])


def test_malformed_key_file_is_a_clean_error(isolated: Path) -> None:
    result = dry_run_with_keys(isolated, "providers:\n  openai: [not, a, key\n")
    assert result.exit_code == 2
    assert "key file" in result.stderr and "not valid YAML" in result.stderr
    assert "Traceback" not in result.output


def test_key_file_secrets_never_printed(isolated: Path) -> None:
    result = dry_run_with_keys(isolated, "providers:\n  openai: 42\n  anthropic: sk-ant-secret-value-123\n")
    assert result.exit_code == 2
    assert "providers.openai" in result.stderr
    assert "sk-ant-secret-value-123" not in result.output


@pytest.mark.slow
@pytest.mark.parametrize("name", ["v05_unknown_role", "v00_syntax", "v14_continue_missing"])
def test_real_executable_exit_code_and_no_traceback(name: str, isolated: Path) -> None:
    """The installed ``coeval`` entry point, in a separate process."""
    case = CORPUS / f"{name}.yaml"
    config = prepare(case, isolated)
    meta = header(case)
    script = Path(sys.executable).with_name("coeval")
    entry = [str(script)] if script.exists() else [sys.executable, "-m", "coeval.cli.main"]
    proc = subprocess.run(
        [*entry, "run", "--config", config.name, *shlex.split(meta.get("args", ""))],
        capture_output=True,
        text=True,
        cwd=isolated,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert f"{meta['rule']} {meta['path']}:" in proc.stderr


def test_issue_json_shape() -> None:
    with pytest.raises(ConfigError) as err:
        load_config({"models": [], "tasks": [], "experiment": {"id": "x"}}, check_filesystem=False)
    issue = err.value.issues[0]
    data = json.loads(json.dumps(issue.to_dict()))
    assert set(data) >= {"rule", "path", "line", "message", "fix", "severity"}
    assert data["line"] is None  # a mapping has no lines
