"""Why something a plugin provides is missing: the plugin is disabled, or not installed.

``COEVAL_DISABLE_PLUGINS=providers`` keeps an installed distribution out; telling the user
to install it would send them the wrong way. Every "missing interface / command" message
words the cause through :func:`unavailable_reason`.
"""

from __future__ import annotations

import importlib.metadata

from coeval.contract.errors import DISABLE_ENV, disabled_plugin_names
from coeval.shipped_interfaces import providing_distribution

__all__ = ["PLUGIN_COMMANDS", "PLUGIN_OF_DISTRIBUTION", "missing_interface", "unavailable_reason"]

#: distribution -> the name its ``coeval`` entry point registers (what COEVAL_DISABLE_PLUGINS takes)
PLUGIN_OF_DISTRIBUTION: dict[str, str] = {
    "coeval-core": "core",
    "coeval-providers": "providers",
    "coeval-hf": "hf",
    "coeval-benchmarks": "benchmarks",
    "coeval-analysis": "analysis",
}

#: commands that a shipped plugin adds -> its distribution
PLUGIN_COMMANDS: dict[str, str] = {
    "analyze": "coeval-analysis",
    "view": "coeval-analysis",
    "export": "coeval-analysis",
    "ingest": "coeval-benchmarks",
}


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def unavailable_reason(distribution: str) -> str:
    """The clause after "needs coeval-x, ": disabled by the environment variable when it
    names the installed plugin, else not installed, with the install command."""
    plugin = PLUGIN_OF_DISTRIBUTION.get(distribution)
    if plugin is not None and plugin in disabled_plugin_names() and _installed(distribution):
        return f"which is installed but disabled ({DISABLE_ENV} names '{plugin}')"
    return f"which is not installed: pip install {distribution}"


def missing_interface(interface: str) -> str:
    """Why ``interface`` has no implementation here, for any message about it."""
    dist = providing_distribution(interface)
    if dist is None:
        return f"interface {interface!r} is unknown (no installed plugin provides it)"
    return f"interface {interface!r} needs {dist}, {unavailable_reason(dist)}"
