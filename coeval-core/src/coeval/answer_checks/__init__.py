"""Deterministic answer checks (contains, regex, json_schema, python, ...): no model, no I/O."""
