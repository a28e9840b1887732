"""Fixtures of the local-model tests: no hub access, a tiny model built once per session."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # before anything imports huggingface_hub: never a download
os.environ["TRANSFORMERS_OFFLINE"] = "1"

from collections.abc import Iterator
from pathlib import Path

import pytest
from coeval_hf._host import get_host

from tests.hf.tiny_model import build_tiny_model


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama with a chat template, saved like any local checkpoint."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="session")
def tiny_model_no_template_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-llama-base"), chat_template=False)


@pytest.fixture(autouse=True)
def _unload_local_models() -> Iterator[None]:
    """Each test starts with no resident model, whatever the previous one left."""
    yield
    get_host().unload_all()
