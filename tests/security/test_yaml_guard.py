"""Every YAML the tool reads goes through the guarded loader that ``--config`` uses: a
run folder's ``config.yaml`` crafted as a "billion laughs" of nested aliases is refused
at once, not expanded for ever."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from coeval_testing.synthetic import SyntheticSpec, write_synthetic_run

REPO = Path(__file__).resolve().parents[2]


def alias_bomb(levels: int = 9) -> str:
    names = "abcdefghijklmnop"
    lines = ['experiment: {id: bomb}', f'{names[0]}: &{names[0]} ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        refs = ", ".join([f"*{names[i - 1]}"] * 9)
        lines.append(f"{names[i]}: &{names[i]} [{refs}]")
    lines.append("tasks: [{name: t, description: d, bomb: *" + names[levels - 1] + "}]")
    lines.append("models: *" + names[levels - 1])
    return "\n".join(lines) + "\n"


@pytest.fixture
def bombed_run(tmp_path: Path) -> Path:
    run = write_synthetic_run(tmp_path / "shared", SyntheticSpec(datapoints_per_teacher=2))
    (run / "config.yaml").write_text(alias_bomb(), encoding="utf-8")
    return run


def _coeval(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COEVAL_VIEW_CACHE": str(cwd / "cache")}
    return subprocess.run([sys.executable, "-m", "coeval.cli.main", *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=60, check=False)


@pytest.mark.slow
@pytest.mark.parametrize("command", [["status"], ["repair", "--dry-run"]])
def test_status_and_repair_refuse_an_alias_bomb_snapshot(bombed_run: Path, command: list[str]) -> None:
    done = _coeval(*command, "--run", str(bombed_run), cwd=bombed_run.parent)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 1, 2), done.stderr


@pytest.mark.slow
def test_analyze_refuses_an_alias_bomb_snapshot(bombed_run: Path) -> None:
    done = _coeval("analyze", "--run", str(bombed_run), "--out", str(bombed_run.parent / "a"), "--bootstrap", "0",
                   "--quiet", cwd=bombed_run.parent)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 1, 2), done.stderr


def test_the_guarded_loader_refuses_bombs_and_deep_documents() -> None:
    import yaml
    from coeval.config._yaml import load_yaml_guarded

    with pytest.raises(yaml.YAMLError, match="expands to more than"):
        load_yaml_guarded(alias_bomb(), "bomb.yaml")
    with pytest.raises(yaml.YAMLError, match="nest"):
        load_yaml_guarded("[" * 5000 + "]" * 5000, "deep.yaml")
    with pytest.raises(yaml.YAMLError, match=r"deep\.yaml"):
        load_yaml_guarded("a: [1, 2", "deep.yaml")
    with pytest.raises(yaml.YAMLError):
        load_yaml_guarded("!!python/object/apply:os.system ['true']", "tag.yaml")
    assert load_yaml_guarded("a: [1, 2]\n", "ok.yaml") == {"a": [1, 2]}
    assert load_yaml_guarded("", "empty.yaml") is None


def test_no_source_reads_yaml_around_the_guard() -> None:
    """``yaml.safe_load`` / ``yaml.load`` anywhere else would bring the hang back."""
    pattern = re.compile(r"\byaml\.(safe_load|load|unsafe_load|full_load|load_all|safe_load_all)\(")
    offenders = [
        f"{path.relative_to(REPO)}:{n}"
        for path in REPO.glob("coeval-*/src/**/*.py")
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []
