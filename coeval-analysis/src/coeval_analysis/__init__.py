"""coeval-analysis: see plugin.py for what this distribution registers."""
