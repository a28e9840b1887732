"""``coeval view``: a local web app over a run folder, backed by DuckDB (see docs/analysis.md)."""
