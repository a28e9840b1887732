"""Load an experiment config: YAML -> raw mapping with line numbers -> validation -> attrs.

:func:`load_config` is the one entry point (the CLI and the Python API use it). It reports
every problem of a file at once as a :class:`ConfigError`; only a config that passed every
rule is structured (with cattrs) into the classes of :mod:`coeval.config.model`, with the
defaults the seed's minimal examples rely on filled in.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import cattrs

from coeval import phase_ids as ids
from coeval.answer_checks.user_code import add_config_folder
from coeval.config._yaml import LineMap, read_yaml
from coeval.config.credentials import KeyStore
from coeval.config.data_readers import readers_of
from coeval.config.data_rules import with_data_facts
from coeval.config.errors import ConfigError, ValidationIssue, format_path
from coeval.config.evaluator_params import evaluator_param_checks
from coeval.config.model import PHASE_IDS, Config, ModelConfig, SamplingConfig, TaskConfig
from coeval.config.phase_modes import default_mode, registered_modes
from coeval.config.phase_order import ordered_phases
from coeval.config.secret_settings import register_setting_secrets
from coeval.config.validate import KNOWN_METRICS, Validator
from coeval.shipped_interfaces import AUTO_INTERFACE, SHIPPED_INTERFACES

if TYPE_CHECKING:
    from coeval.config.interface_facts import InterfaceFacts

__all__ = ["RESUME_DEFAULT_MODES", "load_config", "read_config_file", "structure_config", "validate_config"]

#: Modes of phases a config leaves out when it forks an earlier run with ``resume_from``.
RESUME_DEFAULT_MODES = {
    ids.ATTRIBUTE_MAPPING: "Keep",
    ids.RUBRIC_MAPPING: "Keep",
    ids.DATA_GENERATION: "Keep",
    ids.RESPONSE_COLLECTION: "Extend",
    ids.EVALUATION: "Extend",
}

ConfigSource = str | os.PathLike[str] | Mapping[str, Any]


def read_config_file(path: str | os.PathLike[str]) -> tuple[Any, LineMap, list[ValidationIssue]]:
    """Read a YAML config. Returns ``(raw, lines, problems)``; problems are V-00 issues."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, LineMap(), [_file_issue(source, "file not found", "check the path passed to --config")]
    except IsADirectoryError:
        return (
            None,
            LineMap(),
            [_file_issue(source, "is a directory, not a YAML file", "pass the YAML file itself")],
        )
    except (OSError, UnicodeDecodeError) as exc:
        return (
            None,
            LineMap(),
            [
                _file_issue(
                    source,
                    f"cannot be read ({exc.__class__.__name__})",
                    "check the file's permissions and that it is UTF-8 text",
                )
            ],
        )
    data, lines, problems = read_yaml(text)
    issues = [
        ValidationIssue("V-00", format_path(p.path), p.message, p.fix, line=p.line, source=source)
        for p in problems
    ]
    return data, lines, issues


def _file_issue(source: str, message: str, fix: str) -> ValidationIssue:
    return ValidationIssue("V-00", "(file)", message, fix, source=source)


class Contributions(Protocol):
    """What the loader reads of the plugins' registries
    (:class:`coeval.contract.registries.Registries` has it): the names a config may use."""

    interfaces: Any
    phases: Any
    evaluators: Any
    metrics: Any
    item_checks: Any
    task_data_readers: Any

    def interface_facts(self, name: str) -> InterfaceFacts | None: ...


#: ``interface: auto`` -> the interface a routing plugin picks for the model, given which
#: providers have credentials (None: none); None when no installed plugin routes ``auto``.
AutoResolver = Callable[[ModelConfig, Callable[[str], bool]], "str | None"]


def validate_config(
    path_or_mapping: ConfigSource,
    *,
    continue_run: bool = False,
    check_filesystem: bool = True,
    keys_file: str | os.PathLike[str] | None = None,
    resume_from: str | None = None,
    allow_existing_run: bool = False,
    environment_as_warnings: bool = False,
    registries: Contributions,
    resolve_auto: AutoResolver | None = None,
) -> list[ValidationIssue]:
    """Every problem of a config (errors and warnings), without raising.

    Same arguments as :func:`load_config`; an empty list means the config loads cleanly.
    """
    try:
        config = load_config(
            path_or_mapping,
            continue_run=continue_run,
            check_filesystem=check_filesystem,
            keys_file=keys_file,
            resume_from=resume_from,
            allow_existing_run=allow_existing_run,
            environment_as_warnings=environment_as_warnings,
            registries=registries,
            resolve_auto=resolve_auto,
        )
    except ConfigError as exc:
        return list(exc.issues)
    return list(config.warnings)


def load_config(
    path_or_mapping: ConfigSource,
    *,
    continue_run: bool = False,
    check_filesystem: bool = True,
    keys_file: str | os.PathLike[str] | None = None,
    resume_from: str | None = None,
    allow_existing_run: bool = False,
    environment_as_warnings: bool = False,
    registries: Contributions,
    resolve_auto: AutoResolver | None = None,
) -> Config:
    """Load, validate and structure an experiment config.

    ``path_or_mapping`` is a YAML file or an already-parsed mapping (no line numbers then).
    ``continue_run`` checks the run can be resumed in place (V-14) instead of that it is new
    (V-11); ``check_filesystem=False`` skips the rules that look at the disk (V-10, V-11,
    V-14). ``keys_file`` is used to resolve ``interface: auto``. ``resume_from`` overrides
    ``experiment.resume_from`` (``coeval run --resume``). ``allow_existing_run`` lets a new
    run join an existing folder (``--only-models`` shards). ``environment_as_warnings``
    reports rules that depend on the disk, credentials and plugins as warnings rather than
    errors (``--dry-run``). ``registries`` are the plugins' contributions the config may
    name (interfaces, metrics, phases...) and ``resolve_auto`` the routing of
    ``interface: auto``: :func:`coeval.plugins.config_loading.load_config` hands in the
    installed plugins' (the loader sits below the plugin layer and cannot ask it).

    Raises :class:`ConfigError` listing every problem; warnings end up in ``config.warnings``.
    """
    if isinstance(path_or_mapping, Mapping):
        raw: Any = copy.deepcopy(dict(path_or_mapping))
        issues: list[ValidationIssue] = []
        lines, source = LineMap(), None
    else:
        source = str(path_or_mapping)
        raw, lines, issues = read_config_file(path_or_mapping)
        if raw is None and issues:
            raise ConfigError(issues, source=source)
    if resume_from is not None and isinstance(raw, dict):
        experiment = raw.get("experiment")
        if isinstance(experiment, dict):
            experiment["resume_from"] = resume_from

    regs = registries
    interfaces = {name: facts for name in regs.interfaces.names() if (facts := regs.interface_facts(name))}
    phases = registered_modes(ordered_phases(regs))
    validator = Validator(
        raw,
        lines=lines,
        source=source,
        continue_run=continue_run,
        check_filesystem=check_filesystem,
        allow_existing_run=allow_existing_run,
        environment_as_warnings=environment_as_warnings,
        interfaces=interfaces,
        metrics=[*regs.metrics.names(), *KNOWN_METRICS],
        evaluators=regs.evaluators.names(),
        evaluator_params=evaluator_param_checks(regs.evaluators),
        item_checks=regs.item_checks.names(),
        task_data_readers=readers_of(regs.task_data_readers),
        phases=phases,
    )
    issues += validator.run()
    if not any(i.is_error for i in issues):
        already = len(validator.issues)
        _resolve_auto_interfaces(raw, validator, keys_file, set(SHIPPED_INTERFACES) | set(interfaces), resolve_auto)
        issues += validator.issues[already:]
    if isinstance(raw, Mapping):  # header and URL credentials are masked wherever text is printed
        register_setting_secrets(raw.get("models"))
    if any(i.is_error for i in issues):
        raise ConfigError(issues, source=source)
    config = structure_config(with_data_facts(raw, source, readers_of(regs.task_data_readers)), source=source, phases=phases)
    if source is not None:  # `python: module:function` checks import from the config's folder
        add_config_folder(Path(source).resolve().parent)
    warnings = tuple(i for i in issues if not i.is_error)
    return _with_warnings(config, warnings)


def _with_warnings(config: Config, warnings: tuple[ValidationIssue, ...]) -> Config:
    return attrs.evolve(config, warnings=warnings)


def _resolve_auto_interfaces(
    raw: dict[str, Any], validator: Validator, keys_file: Any, valid: set[str], resolve: AutoResolver | None
) -> None:
    """Replace ``interface: auto`` by the provider the routing plugin picks (V-35).

    The original value is kept under ``requested_interface`` so plans can show the choice.
    """
    autos = [(i, m) for i, m in enumerate(raw.get("models", [])) if m.get("interface") == AUTO_INTERFACE]
    if not autos:
        return
    keys = KeyStore.load(keys_file)
    for i, model in autos:
        has_credentials: Callable[[str], bool] = keys.has_provider
        chosen = resolve(structure_model(model), has_credentials) if resolve is not None else None
        wanted = (model.get("parameters") or {}).get("model", "?")
        if not chosen:
            routing = "" if resolve is not None else " (no installed plugin routes auto; install coeval-providers)"
            validator.add(
                "V-35",
                ("models", i, "interface"),
                f"interface auto found no provider with credentials that serves '{wanted}'{routing}",
                "add a key for one of the providers serving this model to keys.yaml, or name the interface",
            )
            continue
        if chosen not in valid:
            validator.add(
                "V-35",
                ("models", i, "interface"),
                f"interface auto resolved '{wanted}' to unknown interface '{chosen}'",
                "name the interface explicitly",
            )
            continue
        model["interface"] = chosen
        model["requested_interface"] = AUTO_INTERFACE


# ---- structuring ---------------------------------------------------------------------------


def _pair(value: Any) -> tuple[int, int]:
    """``n``, ``[n]`` and ``[min, max]`` -> ``(min, max)``."""
    if isinstance(value, int | float):  # JSON Schema counts 2.0 as an integer
        return (int(value), int(value))
    values = list(value)
    return (int(values[0]), int(values[-1]))


def _attribute_map(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): tuple(str(v) for v in vals) for k, vals in value.items()}
    return value


def _normalise_task(task: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(task)
    for key in (
        "target_attributes",
        "nuanced_attributes",
        "target_attributes_seed",
        "nuanced_attributes_seed",
    ):
        if key in out and out[key] is not None:
            out[key] = _attribute_map(out[key])
    nuanced = out.get("nuanced_attributes", {})
    sampling = dict(out.get("sampling") or {})
    target = sampling.get("target", [1, 1])
    sampling["target"] = "all" if target == "all" else _pair(target)
    has_nuance = nuanced == "auto" or (isinstance(nuanced, Mapping) and len(nuanced) > 0)
    sampling["nuance"] = _pair(sampling.get("nuance", [1, 1] if has_nuance else [0, 0]))
    sampling["total"] = int(sampling.get("total", SamplingConfig().total))
    out["sampling"] = sampling
    if isinstance(out.get("rubric"), Mapping):
        out["rubric"] = {
            str(k): (dict(v) if isinstance(v, Mapping) else str(v)) for k, v in out["rubric"].items()
        }
    if out.get("output_description") is None:
        out.pop("output_description", None)
    return out


def _phase_modes(experiment: Mapping[str, Any], registered: Mapping[str, tuple[str, ...]]) -> dict[str, Any]:
    """Every phase's mode: as written, else its default (New; with ``resume_from`` the
    resume defaults). Plugin phases go under ``others``."""
    written = dict(experiment.get("phases") or {})
    resumed = bool(experiment.get("resume_from"))
    defaults = RESUME_DEFAULT_MODES if resumed else dict.fromkeys(PHASE_IDS, "New")
    modes: dict[str, Any] = {p: written.get(p, defaults[p]) for p in PHASE_IDS}
    others = {str(p): str(m) for p, m in written.items() if p not in PHASE_IDS}
    for phase, accepted in registered.items():
        if phase not in PHASE_IDS and phase not in others:
            others[phase] = default_mode(accepted, resumed=resumed)
    modes["others"] = others
    return modes


def _normalise_model(model: Mapping[str, Any]) -> dict[str, Any]:
    m = dict(model)
    m["roles"] = tuple(m.get("roles", ()))
    m["parameters"] = dict(m.get("parameters") or {})
    m["role_parameters"] = {r: dict(p or {}) for r, p in (m.get("role_parameters") or {}).items()}
    return m


def _normalise(raw: Mapping[str, Any], phases: Mapping[str, tuple[str, ...]]) -> dict[str, Any]:
    experiment = dict(raw["experiment"])
    experiment["phases"] = _phase_modes(experiment, phases)
    for key in ("storage_folder", "budget_usd", "resume_from"):
        if experiment.get(key) is None:
            experiment.pop(key, None)
    adaptive = experiment.pop("adaptive", None)  # true: the defaults; false or null: off
    if adaptive is True or isinstance(adaptive, Mapping):
        experiment["adaptive"] = {} if adaptive is True else dict(adaptive)
    return {
        "models": [_normalise_model(model) for model in raw["models"]],
        "tasks": [_normalise_task(t) for t in raw["tasks"]],
        "experiment": experiment,
    }


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter()
    tf = attrs_fields(TaskConfig)

    def passthrough(value: Any, _type: Any) -> Any:
        return value

    conv.register_structure_hook(tf["target_attributes"], passthrough)
    conv.register_structure_hook(tf["nuanced_attributes"], passthrough)
    conv.register_structure_hook(tf["rubric"], passthrough)
    conv.register_structure_hook(attrs_fields(SamplingConfig)["target"], passthrough)
    return conv


def attrs_fields(cls: type) -> dict[str, Any]:
    attrs.resolve_types(cls)
    return {f.name: f.type for f in attrs.fields(cls)}


_converter: cattrs.Converter | None = None


def structure_config(
    raw: Mapping[str, Any], *, source: str | None = None, phases: Mapping[str, tuple[str, ...]] | None = None
) -> Config:
    """Turn a *valid* raw mapping into :class:`Config`, filling in defaults.

    ``phases`` (registered phase id -> modes) gives plugin phases the config leaves out
    their default mode; without it only the modes written are kept for them.
    """
    config = _structurer().structure(_normalise(raw, phases or {}), Config)
    if source is not None:
        config = attrs.evolve(config, source=source)
    return config


def structure_model(model: Mapping[str, Any]) -> ModelConfig:
    """One *valid* raw model as its typed record (what the ``resolve_auto_interface`` hook
    takes before the whole config is structured)."""
    return _structurer().structure(_normalise_model(copy.deepcopy(dict(model))), ModelConfig)


def _structurer() -> cattrs.Converter:
    global _converter
    if _converter is None:
        _converter = _make_converter()
    return _converter
