"""coeval-benchmarks: see plugin.py for what this distribution registers."""
