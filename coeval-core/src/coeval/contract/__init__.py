"""The plugin contract: the hooks, their typed shapes and the registries they fill. The plugin
manager that loads the plugins, the core's own included, is :mod:`coeval.plugins`'s."""
