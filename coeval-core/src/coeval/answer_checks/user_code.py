"""The user's own check functions (``python: module:function``), imported from the config's folder.

``my_checks:is_polite`` is ``is_polite`` in ``my_checks.py`` beside the config file (a
dotted module, ``checks.tone:polite``, is ``checks/tone.py``). Loading a config records its
folder (:func:`add_config_folder`); a function is looked up in the folders of the configs
loaded by this process, most recent first, or in the folder given. Only files in those
folders are imported, never an installed package that happens to share the name.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["add_config_folder", "config_folders", "load_function"]

_SPEC = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$")
_FOLDERS: list[Path] = []
_LOADED: dict[tuple[Path, str], Callable[..., Any]] = {}


def add_config_folder(folder: str | Path) -> None:
    """Look for user check modules in ``folder`` first from now on."""
    path = Path(folder).resolve()
    if path in _FOLDERS:
        _FOLDERS.remove(path)
    _FOLDERS.insert(0, path)


def config_folders() -> list[Path]:
    """Where :func:`load_function` looks when given no folder (the current directory last)."""
    return [*_FOLDERS, Path.cwd().resolve()]


def _module_file(folder: Path, module: str) -> Path | None:
    base = folder.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def load_function(spec: str, folder: str | Path | None = None) -> Callable[..., Any]:
    """The function ``module:function`` names; ImportError or ValueError say why not."""
    if not _SPEC.match(spec):
        raise ValueError(f"function {spec!r} must be written module:function (e.g. my_checks:is_polite)")
    module, _, name = spec.partition(":")
    folders = [Path(folder).resolve()] if folder is not None else config_folders()
    for where in folders:
        path = _module_file(where, module)
        if path is None:
            continue
        key = (path, name)
        if key not in _LOADED:
            _LOADED[key] = _import(path, module, name, spec)
        return _LOADED[key]
    looked = ", ".join(str(f) for f in folders)
    raise ImportError(f"module {module!r} of {spec!r} not found: looked for {module.replace('.', '/')}.py in {looked} "
                      "(the config's folder)")


def _import(path: Path, module: str, name: str, spec: str) -> Callable[..., Any]:
    unique = f"coeval_user_checks.{abs(hash(str(path)))}.{module}"
    loader_spec = importlib.util.spec_from_file_location(unique, path)
    if loader_spec is None or loader_spec.loader is None:
        raise ImportError(f"{path}: cannot be imported")
    loaded = importlib.util.module_from_spec(loader_spec)
    sys.modules[unique] = loaded
    try:
        loader_spec.loader.exec_module(loaded)
    except Exception as exc:
        del sys.modules[unique]
        raise ImportError(f"{path}: importing it failed ({type(exc).__name__}: {exc})") from None
    function = getattr(loaded, name, None)
    if not callable(function):
        raise ImportError(f"{path} has no function {name!r} (from {spec!r})")
    return function  # type: ignore[no-any-return]
