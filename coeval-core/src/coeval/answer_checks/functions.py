"""The deterministic checks a rubric factor can name (``contains``, ``regex``, ...): each
answer passes (1.0) or fails (0.0). :mod:`coeval.evaluators.checks` runs them in phase 5;
config rule V-60 uses :func:`param_problem` before a run. docs/configuration.md, "Checks
without a judge", describes each one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from coeval.answer_checks.labels import normalise_label
from coeval.answer_checks.user_code import load_function
from coeval.record_schema import REFERENCE_RESPONSE

__all__ = ["CHECK_NAMES", "check_params", "param_problem", "run_check"]

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n(.*)\n```\s*$", re.S)


def check_params(spec: Any) -> Mapping[str, Any]:
    """The ``params`` of a rubric factor's spec (empty when it has none)."""
    params = spec.get("params") if isinstance(spec, Mapping) else None
    return params if isinstance(params, Mapping) else {}


def _text(params: Mapping[str, Any], key: str, answer: str) -> tuple[str, str]:
    """(needle, haystack), both case-folded unless ``case_sensitive: true``."""
    needle = str(params[key])
    if params.get("case_sensitive") is True:
        return needle, answer
    return needle.casefold(), answer.casefold()


def _json_text(answer: str) -> str:
    """The answer without one surrounding Markdown code fence (```json ... ```)."""
    stripped = answer.strip()
    match = _FENCE.match(stripped)
    return match.group(1) if match else stripped


def _parse_json(answer: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(_json_text(answer))
    except ValueError:
        return False, None


def _contains(answer: str, params: Mapping[str, Any], datapoint: Mapping[str, Any]) -> float:
    needle, hay = _text(params, "value", answer)
    return float(needle in hay)


def _not_contains(answer: str, params: Mapping[str, Any], datapoint: Mapping[str, Any]) -> float:
    return 1.0 - _contains(answer, params, datapoint)


def _regex(answer: str, params: Mapping[str, Any], datapoint: Mapping[str, Any]) -> float:
    flags = re.IGNORECASE if params.get("ignore_case") is True else 0
    return float(re.search(str(params["pattern"]), answer, flags) is not None)


def _equals(answer: str, params: Mapping[str, Any], datapoint: Mapping[str, Any]) -> float:
    expected = params["value"] if "value" in params else datapoint.get(REFERENCE_RESPONSE)
    if expected is None:
        raise ValueError("equals has no value to compare with: give params.value or a reference answer")
    return float(normalise_label(answer) == normalise_label(str(expected)))


def _json_valid(answer: str, params: Mapping[str, Any], datapoint: Mapping[str, Any]) -> float:
    return float(_parse_json(answer)[0])


def _json_schema(answer: str, params: Mapping[str, Any], datapoint: Mapping[str, Any]) -> float:
    import jsonschema

    ok, doc = _parse_json(answer)
    if not ok:
        return 0.0
    validator_class = jsonschema.validators.validator_for(params["schema"])
    return float(validator_class(params["schema"]).is_valid(doc))


def _max_words(answer: str, params: Mapping[str, Any], datapoint: Mapping[str, Any]) -> float:
    return float(len(answer.split()) <= int(params["limit"]))


def _python(answer: str, params: Mapping[str, Any], datapoint: Mapping[str, Any]) -> float:
    function = load_function(str(params["function"]))
    value = function(answer, dict(datapoint))
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and 0.0 <= float(value) <= 1.0:
        return float(value)
    raise ValueError(f"{params['function']} returned {value!r}; it must return a bool or a number in [0, 1]")


Check = Callable[[str, Mapping[str, Any], Mapping[str, Any]], float]

#: check name -> (function, required params, optional params)
_CHECKS: dict[str, tuple[Check, tuple[str, ...], tuple[str, ...]]] = {
    "contains": (_contains, ("value",), ("case_sensitive",)),
    "not_contains": (_not_contains, ("value",), ("case_sensitive",)),
    "regex": (_regex, ("pattern",), ("ignore_case",)),
    "equals": (_equals, (), ("value",)),
    "json_valid": (_json_valid, (), ()),
    "json_schema": (_json_schema, ("schema",), ()),
    "max_words": (_max_words, ("limit",), ()),
    "python": (_python, ("function",), ()),
}
CHECK_NAMES = tuple(_CHECKS)


def run_check(name: str, answer: str, params: Mapping[str, Any], datapoint: Mapping[str, Any]) -> float:
    """1.0 when ``answer`` passes check ``name`` with ``params``, else 0.0 (``python``:
    the function's value)."""
    return _CHECKS[name][0](answer, params, datapoint)


def param_problem(name: str, params: Any, config_folder: str | None = None) -> str | None:
    """Why ``params`` cannot drive check ``name`` (None when they can): unknown or missing
    keys, wrong types, a regex or JSON schema that does not compile, a function that cannot
    be imported from ``config_folder``."""
    if name not in _CHECKS:
        return None
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        return f"params of {name} must be a mapping, got {type(params).__name__}"
    _fn, required, optional = _CHECKS[name]
    unknown = [str(k) for k in params if k not in (*required, *optional)]
    if unknown:
        allowed = ", ".join((*required, *optional)) or "none"
        return f"{name} does not take {', '.join(unknown)} (it takes: {allowed})"
    missing = [k for k in required if k not in params]
    if missing:
        return f"{name} needs params.{missing[0]}"
    return _value_problem(name, params, config_folder)


def _value_problem(name: str, params: Mapping[str, Any], config_folder: str | None) -> str | None:
    for flag in ("case_sensitive", "ignore_case"):
        if flag in params and not isinstance(params[flag], bool):
            return f"{flag} must be true or false, got {params[flag]!r}"
    if name in ("contains", "not_contains") and (not isinstance(params["value"], str) or not params["value"]):
        return f"{name} needs a non-empty text value, got {params['value']!r}"
    if name == "equals" and "value" in params and not isinstance(params["value"], str | int | float):
        return f"equals compares with text or a number, got {type(params['value']).__name__}"
    if name == "regex":
        try:
            re.compile(str(params["pattern"]))
        except re.error as exc:
            return f"pattern {params['pattern']!r} is not a valid regular expression ({exc})"
    if name == "max_words":
        limit = params["limit"]
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            return f"limit must be a whole number >= 1, got {limit!r}"
    if name == "json_schema":
        return _schema_problem(params["schema"])
    if name == "python":
        try:
            load_function(str(params["function"]), config_folder)
        except (ImportError, ValueError) as exc:
            return str(exc)
    return None


def _schema_problem(schema: Any) -> str | None:
    import jsonschema

    if not isinstance(schema, Mapping | bool):
        return f"schema must be a JSON Schema mapping, got {type(schema).__name__}"
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        return f"schema is not a valid JSON Schema ({exc.message})"
    return None
