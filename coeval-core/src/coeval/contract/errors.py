"""The plugin error the CLI reports in one line, kept apart from :mod:`coeval.plugins.manager` so
the entry point can catch it without loading the plugin stack, and the plugins
``COEVAL_DISABLE_PLUGINS`` keeps out."""

from __future__ import annotations

import os

#: comma-separated plugin names to leave unloaded
DISABLE_ENV = "COEVAL_DISABLE_PLUGINS"


def disabled_plugin_names() -> set[str]:
    """The plugin names ``COEVAL_DISABLE_PLUGINS`` lists."""
    raw = os.environ.get(DISABLE_ENV, "")
    return {name.strip() for name in raw.split(",") if name.strip()}


class DuplicateRegistrationError(ValueError):
    """Two plugins registered the same name in one registry (the CLI exits 2 with one line)."""

    def __init__(self, kind: str, name: str, first: str, second: str) -> None:
        self.kind, self.name, self.first, self.second = kind, name, first, second
        super().__init__(
            f"{kind} {name!r} registered twice: by plugin {first!r} and by plugin {second!r} "
            f"(uninstall one, or set {DISABLE_ENV}={second})"
        )
