"""The plugin contract: the hooks, their typed shapes, the registries they fill, and the run
order and modes of the registered phases read from those shapes. The plugin
manager that loads the plugins, the core's own included, is :mod:`coeval.plugins`'s."""
