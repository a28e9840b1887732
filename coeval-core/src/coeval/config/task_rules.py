"""The rules about what tasks name: prompt-library templates and their variables, item
checks, metrics and a factor's evaluator (V-28, V-29, V-38, V-47)."""

from __future__ import annotations

from coeval.config._schema_check import did_you_mean
from coeval.config.rule_context import KNOWN_METRICS, Path_, RuleContext
from coeval.prompts import TEMPLATE_VARIABLES, template_fields

__all__ = ["TaskRules"]


class TaskRules(RuleContext):
    """The rules about what tasks name, one method each; the Validator runs them."""

    __slots__ = ()

    def _prompt_library(self) -> None:
        names = self.model_names
        for i, task in self.tasks:
            library = task.get("prompt_library")
            if not isinstance(library, dict):
                continue
            for key, text in library.items():
                path = ("tasks", i, "prompt_library", key)
                template_id, _, model = str(key).partition(".")
                if template_id not in TEMPLATE_VARIABLES:
                    guess = did_you_mean(template_id, TEMPLATE_VARIABLES)
                    self.add(
                        "V-28",
                        path,
                        f"unknown template id '{template_id}'"
                        + (f" (did you mean '{guess}'?)" if guess else ""),
                        f"use one of: {', '.join(TEMPLATE_VARIABLES)}, optionally followed by .<model name>",
                    )
                    continue
                if model and model not in names:
                    guess = did_you_mean(model, names)
                    self.add(
                        "V-28",
                        path,
                        f"override for model '{model}', which is not a model of this config"
                        + (f" (did you mean '{guess}'?)" if guess else ""),
                        f"write it as {template_id}.<model name> with one of: {', '.join(names)}",
                    )
                if isinstance(text, str):
                    self._template_variables(path, template_id, text)

    def _template_variables(self, path: Path_, template_id: str, text: str) -> None:
        allowed = TEMPLATE_VARIABLES[template_id]
        for name in template_fields(text):
            if name in allowed:
                continue
            guess = did_you_mean(name, allowed)
            self.add(
                "V-28",
                path,
                f"template uses unknown variable {{{name}}}"
                + (f" (did you mean {{{guess}}}?)" if guess else ""),
                f"{template_id} may use {', '.join('{' + v + '}' for v in sorted(allowed))}; "
                "write {{ and }} for literal braces",
            )

    def _item_checks(self) -> None:
        experiment = self.raw.get("experiment")
        settings = experiment.get("item_checks") if isinstance(experiment, dict) else None
        if self.item_checks is None or not isinstance(settings, dict):
            return
        known = sorted(self.item_checks)
        for rule in settings:
            if str(rule) not in known:
                self._add_unknown("V-38", ("experiment", "item_checks", rule), f"unknown item check '{rule}'",
                                  str(rule), known)

    def _metrics(self) -> None:
        known = sorted(set(KNOWN_METRICS) | set(self.metrics))
        for i, task in self.tasks:
            rubric = task.get("rubric")
            if not isinstance(rubric, dict):
                continue
            for factor, spec in rubric.items():
                if not isinstance(spec, dict) or not isinstance(spec.get("metric"), str):
                    continue
                metric = spec["metric"]
                if metric in known:
                    continue
                guess = did_you_mean(metric, known)
                self.add(
                    "V-29",
                    ("tasks", i, "rubric", factor, "metric"),
                    f"unknown metric '{metric}'" + (f" (did you mean '{guess}'?)" if guess else ""),
                    f"use one of: {', '.join(known)}",
                )

    def _factor_evaluators(self) -> None:
        """V-47: ``{evaluator: NAME}`` in a rubric factor names an installed evaluator."""
        known = sorted(set(self.evaluators))
        for i, task in self.tasks:
            rubric = task.get("rubric")
            for factor, spec in rubric.items() if isinstance(rubric, dict) else ():
                name = spec.get("evaluator") if isinstance(spec, dict) else None
                if isinstance(name, str) and name not in known:
                    self._add_unknown("V-47", ("tasks", i, "rubric", factor, "evaluator"),
                                      f"unknown evaluator '{name}' (no installed plugin registers it)", name, known)
