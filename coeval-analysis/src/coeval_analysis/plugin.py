"""Hook implementations of coeval-analysis (registered through the `coeval` entry point)."""

from __future__ import annotations

from coeval.hookspecs import hookimpl  # noqa: F401
