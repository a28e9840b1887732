"""The plugin contract: the hooks, their typed shapes, the registries and the core plugin."""
