"""coeval-hf: see plugin.py for what this distribution registers."""
