"""Key lookup order and secret hygiene of credentials."""

from __future__ import annotations

from pathlib import Path

import pytest
from coeval.config.credentials import KeyFileError, KeyStore, find_keys_file, redact


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for var in ("COEVAL_KEYS_FILE", "OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "AWS_REGION"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_search_order_flag_then_env_then_cwd_then_home(tmp_path, monkeypatch):
    home = write(tmp_path / "home/.coeval/keys.yaml", "providers: {openai: sk-home-000000}")
    assert find_keys_file() == home
    cwd = write(tmp_path / "keys.yaml", "providers: {openai: sk-cwd-0000000}")
    assert find_keys_file() == cwd
    env = write(tmp_path / "env.yaml", "providers: {}")
    monkeypatch.setenv("COEVAL_KEYS_FILE", str(env))
    assert find_keys_file() == env
    assert find_keys_file("flag.yaml") == Path("flag.yaml")


def test_access_key_beats_key_file_beats_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-1111111111")
    store = KeyStore.load(write(tmp_path / "k.yaml", "providers:\n  openai: sk-file-2222222222\n"))
    assert store.for_provider("openai").api_key == "sk-file-2222222222"
    assert store.for_provider("openai", access_key="sk-model-333333").api_key == "sk-model-333333"
    assert KeyStore().for_provider("openai").api_key == "sk-env-1111111111"
    assert KeyStore().for_provider("openai").source == "env"


def test_structured_entries_and_env_fallbacks(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    store = KeyStore.load(write(tmp_path / "k.yaml", """
providers:
  azure_openai: {api_key: az-secret-999999, endpoint: "https://r.openai.azure.com/", api_version: 2024-08-01-preview}
  bedrock: {access_key_id: AKIAEXAMPLE123, secret_access_key: very-secret-aws-key}
"""))
    az = store.for_provider("azure_openai")
    assert az.api_key == "az-secret-999999" and az.get("endpoint") == "https://r.openai.azure.com/"
    br = store.for_provider("bedrock")
    assert br.get("region") == "eu-west-1"
    assert "very-secret-aws-key" not in repr(br) and "AKIAEXAMPLE123" not in repr(br)


def test_secrets_never_show_in_repr_and_are_redacted_from_text(tmp_path):
    store = KeyStore.load(write(tmp_path / "k.yaml", "providers: {openai: sk-topsecret-abcdef}"))
    creds = store.for_provider("openai")
    assert "sk-topsecret-abcdef" not in repr(creds) and "sk-topsecret-abcdef" not in str(creds)
    assert redact("401: bad key sk-topsecret-abcdef") == "401: bad key ***"


@pytest.mark.parametrize("text, fragment", [
    ("providers: [a, b]", "'providers' must be a mapping"),
    ("providers: {openai: [x]}", "providers.openai must be a string or a mapping"),
    ("providers: {openai: 'x'\n  bad", "not valid YAML"),
    ("- just a list", "expected a mapping"),
])
def test_malformed_key_files_name_the_file_and_the_problem(tmp_path, text, fragment):
    path = write(tmp_path / "k.yaml", text)
    with pytest.raises(KeyFileError) as err:
        KeyStore.load(path)
    assert str(path) in str(err.value) and fragment in str(err.value)


def test_missing_explicit_key_file_is_an_error(tmp_path):
    with pytest.raises(KeyFileError, match=r"^key file .*: not found$"):
        KeyStore.load(tmp_path / "nope.yaml")
