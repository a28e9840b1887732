"""The rules about the ``experiment`` section: phase ids and modes, ``rubric: extend``,
batching, label attributes and sampling (V-08/09, V-13, V-17, V-21, V-23, V-26, V-30)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coeval.config._schema_check import did_you_mean
from coeval.config.model import PHASE_IDS
from coeval.config.rule_context import RuleContext
from coeval.phase_ids import MAPPING_PHASES
from coeval.shipped_interfaces import AUTO_INTERFACE, SHIPPED_INTERFACES

__all__ = ["ExperimentRules"]


class ExperimentRules(RuleContext):
    """The rules about the ``experiment`` section, one method each; the Validator runs them."""

    __slots__ = ()

    def _phase_modes(self) -> None:
        phases = self.experiment.get("phases")
        if not isinstance(phases, dict):
            return
        self._phase_ids_and_modes(phases)
        for phase in MAPPING_PHASES:
            if phases.get(phase) == "Model":
                self.add(
                    "V-08",
                    ("experiment", "phases", phase),
                    f"mode Model is only valid for phases 3-5, not {phase}",
                    "use New, Keep or Extend for phases 1-2",
                )

    def _phase_ids_and_modes(self, phases: Mapping[str, Any]) -> None:
        """Plugin phases: the id is a registered phase, the mode one that phase accepts (the
        standard phases' modes are checked by the schema and V-08)."""
        registered = dict(self.phases or {})
        known = list(dict.fromkeys([*PHASE_IDS, *registered]))
        for phase, mode in phases.items():
            path = ("experiment", "phases", phase)
            if phase not in known:
                self._add_unknown("V-21", path, f"unknown phase '{phase}'", str(phase), known)
            elif phase not in PHASE_IDS and isinstance(mode, str) and mode not in registered[phase]:
                accepted = list(registered[phase])
                self._add_unknown(
                    "V-21", path, f"phase {phase} does not accept mode '{mode}' (it accepts "
                    f"{', '.join(accepted)})", mode, accepted,
                )

    def _rubric_extend(self) -> None:
        if self.experiment.get("resume_from"):
            return
        for i, task in self.tasks:
            if task.get("rubric") == "extend":
                self.add(
                    "V-09",
                    ("tasks", i, "rubric"),
                    "rubric: extend adds to the rubric of an earlier run, but experiment.resume_from is not set",
                    "set experiment.resume_from to the earlier run, or use rubric: auto",
                )

    def _batchable(self) -> list[str]:
        """Interfaces with a registered batch runner, whichever plugin provides them."""
        return sorted(name for name, facts in self.interfaces.items() if facts.batches)

    def _batch_unknowable(self, iface: str) -> bool:
        """A shipped interface whose distribution is not loaded here: its batch runner is
        unknown until it is (running such a model fails anyway, naming the distribution)."""
        return iface not in self.interfaces and iface in SHIPPED_INTERFACES

    def _batch_fix(self) -> str:
        batchable = self._batchable()
        return f"batch works with: {', '.join(batchable)}" if batchable else "no installed plugin registers a batch runner"

    def _batch(self) -> None:
        batch = self.experiment.get("batch")
        batchable = self._batchable()
        if isinstance(batch, dict):
            for iface in batch:
                if iface in batchable or self._batch_unknowable(str(iface)):
                    continue
                if iface in self._known_interfaces():
                    message = f"interface '{iface}' has no batch API"
                    fix = f"remove '{iface}'; {self._batch_fix()}"
                    self.add("V-13", ("experiment", "batch", iface), message, fix)
                else:
                    self._add_unknown(
                        "V-13",
                        ("experiment", "batch", iface),
                        f"'{iface}' is not a batchable interface",
                        str(iface),
                        batchable,
                    )
        for i, model in self.models:
            iface = model.get("interface")
            if (
                model.get("batch_enabled") is True
                and isinstance(iface, str)
                and iface != AUTO_INTERFACE
                and iface not in batchable
                and not self._batch_unknowable(iface)
            ):
                self.add(
                    "V-26",
                    ("models", i, "batch_enabled"),
                    f"batch_enabled is true but interface '{iface}' has no batch API",
                    f"remove batch_enabled; {self._batch_fix()}",
                )

    def _label_attributes(self) -> None:
        for i, task in self.tasks:
            labels = task.get("label_attributes")
            target = task.get("target_attributes")
            if not isinstance(labels, list) or not isinstance(target, dict):
                continue
            for j, label in enumerate(labels):
                if isinstance(label, str) and label not in target:
                    guess = did_you_mean(label, [str(k) for k in target])
                    message = f"label attribute '{label}' is not one of the task's target_attributes ({', '.join(map(str, target))})"
                    fix = (
                        f"replace '{label}' with '{guess}'"
                        if guess
                        else f"add '{label}' to target_attributes or remove it here"
                    )
                    self.add("V-17", ("tasks", i, "label_attributes", j), message, fix)

    def _sampling_ranges(self) -> None:
        for i, task in self.tasks:
            sampling = task.get("sampling")
            if not isinstance(sampling, dict):
                continue
            for key, attrs_key in (("target", "target_attributes"), ("nuance", "nuanced_attributes")):
                value = sampling.get(key)
                if not (
                    isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value)
                ):
                    continue
                low, high = value
                if low > high:
                    self.add(
                        "V-23",
                        ("tasks", i, "sampling", key),
                        f"min {low} is greater than max {high}",
                        f"write it as [{high}, {low}]",
                    )
                    continue
                attributes = task.get(attrs_key, {} if key == "nuance" else None)
                if isinstance(attributes, dict) and low > len(attributes):
                    self.add(
                        "V-23",
                        ("tasks", i, "sampling", key),
                        f"asks for at least {low} {attrs_key} per item but the task defines {len(attributes)}",
                        f"lower the minimum to {len(attributes)} or add attributes",
                        severity="warning",
                    )
