"""Broken key files: a clear ``error: key file ...`` and exit 2, never a traceback or a key."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._support import assert_clean_failure, base_config, invoke, no_traceback, write_config

SECRET = "sk-robust-0123456789abcdef"

KEY_FILES: list[tuple[str, bytes | None, tuple[str, ...]]] = [
    ("not-yaml", b"providers: [openai: \n", ("error: key file", "not valid YAML")),
    ("not-utf8", b"providers:\n  openai: \xff\xfe\n", ("error: key file", "UTF-8")),
    ("a-list", b"- openai\n- anthropic\n", ("error: key file", "mapping")),
    ("providers-a-list", b"providers: [openai, anthropic]\n", ("error: key file", "'providers' must be a mapping")),
    ("providers-null", b"providers:\n", ("error: key file", "'providers' must be a mapping")),
    ("entry-a-number", b"providers:\n  openai: 12345\n", ("error: key file", "providers.openai")),
    ("entry-a-list", f"providers:\n  openai: [{SECRET}]\n".encode(), ("error: key file", "providers.openai")),
    ("deeply-nested", b"providers: " + b"[" * 5000 + b"]" * 5000 + b"\n", ("error: key file",)),
    ("a-scalar", f"{SECRET}\n".encode(), ("error: key file", "mapping")),
]


@pytest.mark.parametrize("case", KEY_FILES, ids=lambda c: c[0])
def test_broken_key_file_fails_cleanly(case, tmp_path: Path):
    name, content, fragments = case
    keys = tmp_path / f"{name}.keys.yaml"
    keys.write_bytes(content)
    config = write_config(tmp_path / "exp.yaml", base_config(tmp_path / "runs"))
    result = invoke(["run", "--config", str(config), "--keys", str(keys)])
    assert_clean_failure(result, *fragments)
    assert SECRET not in result.output
    assert not (tmp_path / "runs").exists()


def test_missing_key_file_named_on_the_command_line(tmp_path: Path):
    config = write_config(tmp_path / "exp.yaml", base_config(tmp_path / "runs"))
    assert_clean_failure(invoke(["run", "--config", str(config), "--keys", str(tmp_path / "nope.yaml")]), "nope.yaml")


def test_key_file_path_that_is_a_directory(tmp_path: Path):
    config = write_config(tmp_path / "exp.yaml", base_config(tmp_path / "runs"))
    assert_clean_failure(invoke(["run", "--config", str(config), "--keys", str(tmp_path)]), "key file")


def test_missing_key_file_from_the_environment(tmp_path: Path):
    config = write_config(tmp_path / "exp.yaml", base_config(tmp_path / "runs"))
    result = invoke(["run", "--config", str(config)], env={"COEVAL_KEYS_FILE": str(tmp_path / "gone.yaml")})
    assert_clean_failure(result, "gone.yaml")


def test_an_empty_key_file_is_no_keys_and_a_mock_run_completes(tmp_path: Path):
    keys = tmp_path / "keys.yaml"
    keys.write_text("# no keys yet\n", encoding="utf-8")
    config = write_config(tmp_path / "exp.yaml", base_config(tmp_path / "runs"))
    result = invoke(["run", "--config", str(config), "--keys", str(keys)])
    no_traceback(result)
    assert result.exit_code == 0, result.output
