"""The plugins, loaded: the plugin manager (:mod:`coeval.plugins.manager`) and the core's own
plugin (:mod:`coeval.plugins.core`: the ``mock`` interface, the standard phases, evaluators
and item checks). The composition root of the plugin layer: it sits above every package a
plugin registers from, and the contract it builds on sits below them."""
