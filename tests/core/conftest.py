"""Fixtures shared by the core tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pluggy
import pytest
from coeval import (
    RegisterEvaluator,
    RegisterInterface,
    RegisterItemCheck,
    RegisterPhase,
    hookimpl,
)
from coeval.plugins import core as builtin_plugin
from coeval.plugins.manager import CORE_PLUGIN, new_plugin_manager, use_plugin_manager


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An isolated working folder: the current directory and HOME are ``tmp_path``, and no
    key file or provider key of the developer's environment is found."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("COEVAL_KEYS_FILE", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


@pytest.fixture
def pm() -> Iterator[pluggy.PluginManager]:
    """A fresh plugin manager (the core and the installed plugins), made the process's for the
    test, as pluggy's own ``pm`` fixture: a test adds plugins with ``pm.register(obj, name=...)``
    and ``registries()`` collects them; the installed plugins come back afterwards."""
    manager = new_plugin_manager()
    use_plugin_manager(manager)
    yield manager
    use_plugin_manager(None)


class CoreWith:
    """The core plugin with some of its registrations replaced (``pm.unregister(name="core")``
    and register this instead): ``CoreWith(mock=RecordingMock)``."""

    def __init__(self, mock: Any = None) -> None:
        self.mock = mock

    @hookimpl
    def register_interfaces(self, register: RegisterInterface) -> None:
        if self.mock is None:
            builtin_plugin.register_interfaces(register)
        else:
            register("mock", self.mock, requires_model=False, exempt_item_checks=("near_duplicate",))

    @hookimpl
    def register_phases(self, register: RegisterPhase) -> None:
        builtin_plugin.register_phases(register)

    @hookimpl
    def register_evaluators(self, register: RegisterEvaluator) -> None:
        builtin_plugin.register_evaluators(register)

    @hookimpl
    def register_item_checks(self, register: RegisterItemCheck) -> None:
        builtin_plugin.register_item_checks(register)


@pytest.fixture
def recording_mock(pm: pluggy.PluginManager) -> list[Any]:
    """Every ``mock`` model goes through ``RecordingMock``; returns the requests it saw."""
    from .pipeline_support import RecordingMock

    pm.unregister(name=CORE_PLUGIN)
    pm.register(CoreWith(mock=RecordingMock), name=CORE_PLUGIN)
    RecordingMock.requests = []
    return RecordingMock.requests
