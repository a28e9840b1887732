"""coeval-providers: see plugin.py for what this distribution registers."""
