"""The rules about the models: unique names, known interfaces, the roles the phases
need, quotas, ``parameters.model``, parameter keys and role parameters (V-02/03, V-05 to
V-07, V-25, V-27, V-33, V-37, V-45/46)."""

from __future__ import annotations

from coeval.config.data_rules import every_task_has_data
from coeval.config.model import ROLES
from coeval.config.names import close_name
from coeval.config.parameter_keys import TIMEOUT_KEYS, bad_timeout, known_keys
from coeval.config.rule_context import RuleContext, judged_factors, model_roles, section_items
from coeval.shipped_interfaces import AUTO_INTERFACE

__all__ = ["ModelRules"]


class ModelRules(RuleContext):
    """The rules about the models, one method each; :class:`~coeval.config.validate.Validator` runs them."""

    __slots__ = ()

    def _unique_names(self) -> None:
        for section, rule, what in (("models", "V-02", "model"), ("tasks", "V-03", "task")):
            first: dict[str, int] = {}
            for i, item in section_items(self.raw.get(section)):
                name = item.get("name")
                if not isinstance(name, str):
                    continue
                if name in first:
                    self.add(
                        rule,
                        (section, i, "name"),
                        f"{what} name '{name}' is already used by {section}[{first[name]}]",
                        f"give each {what} a unique name (e.g. '{name}-2')",
                    )
                else:
                    first[name] = i
        reserved = set(self.evaluators)
        for i, model in self.models:
            name = model.get("name")
            if isinstance(name, str) and name in reserved:
                self.add(
                    "V-37",
                    ("models", i, "name"),
                    f"model name '{name}' is the name of a phase-5 evaluator, whose records would be "
                    "mixed up with this model's judgements",
                    f"rename the model (e.g. '{name}-model')",
                )

    def _interfaces(self) -> None:
        known = self._known_interfaces()
        for i, model in self.models:
            iface = model.get("interface")
            if not isinstance(iface, str) or not iface or iface == AUTO_INTERFACE or iface in known:
                continue
            self._add_unknown(
                "V-06", ("models", i, "interface"), f"unknown interface '{iface}'", iface, sorted(known | {AUTO_INTERFACE})
            )

    def _needs_judge(self) -> bool:
        for _, task in self.tasks:
            factors = judged_factors(task)
            if factors is None or factors:
                return True
        return False

    def _roles_needed(self) -> None:
        models = self.models
        if not models:
            return  # V-01 already reported
        held = {r for _, m in models for r in model_roles(m)}
        needs = {
            "teacher": ("phases 1-3 need at least one teacher to write the evaluation set",
                        not every_task_has_data(self.tasks)),
            "student": ("phase 4 needs at least one student to answer it", True),
            "judge": ("phase 5 needs at least one judge to score the answers", self._needs_judge()),
        }
        for role, (why, required) in needs.items():
            if required and role not in held:
                self.add(
                    "V-07",
                    ("models",),
                    f"no model has the {role} role; {why}",
                    f"add {role} to the roles of a model, e.g. roles: [{role}]",
                )

    def _quota_models(self) -> None:
        quota = self.experiment.get("quota")
        if not isinstance(quota, dict):
            return
        names = self.model_names
        for name in quota:
            if name not in names:
                message = f"quota names '{name}', which is not a model of this config"
                guess = close_name(str(name), names)  # model names share prefixes: only a typo is offered
                if guess:
                    self.add("V-25", ("experiment", "quota", name), f"{message} (did you mean '{guess}'?)",
                             f"replace '{name}' with '{guess}'")
                else:
                    self.add("V-25", ("experiment", "quota", name), message, f"use one of: {', '.join(names)}")

    def _requires_model(self, interface: str) -> bool:
        """What the registered interface declared; a shipped interface whose distribution is
        not loaded here is not checked (its declaration is unknown until it is)."""
        if interface == AUTO_INTERFACE:
            return True
        facts = self.interfaces.get(interface)
        return facts is not None and facts.requires_model

    def _model_parameter(self) -> None:
        for i, model in self.models:
            iface = model.get("interface")
            if not isinstance(iface, str) or not self._requires_model(iface):
                continue
            if iface != AUTO_INTERFACE and iface not in self._known_interfaces():
                continue  # V-06 reported it
            params = model.get("parameters")
            if isinstance(params, dict) and params.get("model"):
                continue
            if params is not None and not isinstance(params, dict):
                continue  # the schema reported the shape
            what = "to pick a provider for" if iface == AUTO_INTERFACE else "to call on"
            self.add(
                "V-27",
                ("models", i, "parameters", "model"),
                f"interface '{iface}' needs parameters.model: the provider's model id {what}",
                "add  parameters: {model: <provider model id>}  to this model",
            )

    def _parameter_keys(self) -> None:
        """V-45 unknown sampling keys (outside ``extra_body``), V-46 nonsense timeouts."""
        for i, model in self.models:
            params = model.get("parameters")
            if not isinstance(params, dict):
                continue
            for key in TIMEOUT_KEYS:
                why = bad_timeout(params[key]) if key in params else None
                if why:
                    self.add("V-46", ("models", i, "parameters", key), f"{key} {why}; got {params[key]!r}",
                             f"set {key} to a number of seconds, e.g. 300")
            if "self_hosted" in params and not isinstance(params["self_hosted"], bool):
                self.add("V-20", ("models", i, "parameters", "self_hosted"),
                         f"self_hosted must be true or false; got {params['self_hosted']!r}",
                         "true: limit calls by latency (a server that queues); false: by 429s only")
            facts = self.interfaces.get(str(model.get("interface")))
            check = facts.parameter_problem if facts is not None else None
            problem = check(params, str(model.get("name"))) if check is not None else None
            if problem:
                self.add("V-20", ("models", i, "parameters"), problem,
                         "see the mock interface's parameters in docs/running.md" if model.get("interface") == "mock"
                         else f"see the parameters of interface '{model.get('interface')}' in its documentation")
            allowed = known_keys(facts)
            if allowed is None:
                continue
            for key in params:
                if key not in allowed:
                    why = (f"the mock interface has no parameter '{key}'" if model.get("interface") == "mock" else
                           f"interface '{model.get('interface')}' does not send parameter '{key}'; "
                           "put server-specific fields under extra_body")
                    self._add_unknown("V-45", ("models", i, "parameters", key), why, str(key), sorted(allowed))

    def _role_parameters(self) -> None:
        for i, model in self.models:
            overrides = model.get("role_parameters")
            if not isinstance(overrides, dict):
                continue
            held = set(model_roles(model))
            for role in overrides:
                if role in ROLES and role not in held:
                    self.add(
                        "V-33",
                        ("models", i, "role_parameters", role),
                        f"parameters for the {role} role, which this model does not have",
                        f"add {role} to roles, or remove role_parameters.{role}",
                        severity="warning",
                    )
