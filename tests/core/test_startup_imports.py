"""What start-up loads: ``coeval --help`` and the layers below the plugin stack stay light.

Each check runs in a fresh interpreter, since this test process has imported everything.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

#: libraries that only the commands needing them may load
HEAVY = ("duckdb", "pandas", "numpy", "pyarrow", "torch", "transformers", "structlog", "rich")


def _loaded_after(code: str, names: tuple[str, ...]) -> list[str]:
    probe = f"import json, sys\n{code}\nprint(json.dumps([n for n in {list(names)!r} if n in sys.modules]))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded: list[str] = json.loads(result.stdout.strip().splitlines()[-1])
    return loaded


def test_importing_the_cli_loads_neither_plugins_nor_heavy_libraries() -> None:
    names = ("coeval.plugins.manager", "coeval.config", "click", *HEAVY)
    assert _loaded_after("import coeval.cli.main", names) == ["click"]


def test_coeval_help_loads_no_heavy_library_nor_the_config_loader() -> None:
    code = (
        "import contextlib, io\n"
        "from coeval.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])"
    )
    names = ("coeval.plugins.manager", "coeval.config.loader", "coeval.run.runner", *HEAVY)
    assert _loaded_after(code, names) == ["coeval.plugins.manager"]


def test_the_config_model_does_not_pull_in_the_loader() -> None:
    # the loader reaches up to the plugin layer, which itself builds on the model
    assert _loaded_after("import coeval.config.model", ("coeval.config.loader", "coeval.plugins.manager")) == []


def test_the_loader_names_still_come_from_the_config_package() -> None:
    code = "from coeval.config import structure_config"
    assert _loaded_after(code, ("coeval.config.loader", "coeval.plugins.manager")) == ["coeval.config.loader"]


def test_load_config_is_read_against_the_plugins_from_the_package_root() -> None:
    import coeval
    from coeval.plugins import config_loading

    assert coeval.load_config is config_loading.load_config
    assert coeval.validate_config is config_loading.validate_config
    import coeval.config

    with pytest.raises(AttributeError, match=r"use coeval\.load_config"):
        coeval.config.load_config  # noqa: B018 - the attribute's error says where it went
