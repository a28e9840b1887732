"""``coeval wizard``: build an experiment config by answering questions, or let a model draft it.

Interactive: models and roles, tasks with their attributes and rubric, sampling, phase
modes and a budget, each answer checked as it is given; the finished config is validated
before it is written. Non-interactive (``--objective``): a configured model drafts the
tasks, attributes and rubrics for a stated objective, and the result is validated the same
way. Either way the wizard writes nothing that ``coeval run`` would reject.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from coeval.authoring.describe import readable
from coeval.config.credentials import KeyStore, redact
from coeval.config.errors import ConfigError
from coeval.config.loader import structure_config
from coeval.config.model import PHASE_IDS, PHASE_MODES, ROLES
from coeval.config.yaml_out import dump_config_yaml
from coeval.contract.status import missing_interface
from coeval.interfaces.base import GenerateRequest
from coeval.plugins.config_loading import load_config
from coeval.plugins.manager import registries
from coeval.prompts.judging import extract_json
from coeval.shipped_interfaces import AUTO_INTERFACE, DEFAULT_INTERFACE, SHIPPED_INTERFACES
from coeval.storage.run_folder import atomic_write_text, utc_now

__all__ = [
    "DRAFT_SCHEMA",
    "WizardError",
    "build_interactively",
    "draft_config",
    "parse_attribute_spec",
    "parse_model_spec",
    "safe_name",
    "write_config",
]

_NAME = re.compile(r"^[A-Za-z0-9._-]+$")


class WizardError(RuntimeError):
    """The drafting model gave nothing usable, or the answers do not make a valid config."""


def safe_name(text: str, fallback: str = "item") -> str:
    """A name valid in a config: letters, digits, '-', '_' and '.', no '__'."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", str(text).strip()).strip("._-")
    name = re.sub(r"_{2,}", "_", name)
    return name or fallback


def parse_attribute_spec(text: str) -> dict[str, list[str]] | str:
    """``"tone: formal, casual; length: short, long"`` -> a map; ``auto`` / ``complete`` as is;
    blank -> ``{}``."""
    text = text.strip()
    if text in ("auto", "complete"):
        return text
    out: dict[str, list[str]] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        name, sep, values = part.partition(":")
        items = [v.strip() for v in values.split(",") if v.strip()]
        if not sep or not name.strip() or not items:
            raise click.BadParameter(f"{part!r}: write it as  name: value, value; other: value")
        out[safe_name(name)] = items
    return out


def _needs_model(interface: str) -> bool:
    """What the registered interface declared (an interface no plugin here registers needs one)."""
    facts = registries().interface_facts(interface)
    return facts is None or facts.requires_model


def parse_model_spec(spec: str) -> dict[str, Any]:
    """``interface:model-id`` (or ``interface``) -> a model entry with all three roles."""
    interface, _, model_id = spec.strip().partition(":")
    interface = interface.strip()
    if interface not in SHIPPED_INTERFACES and interface != AUTO_INTERFACE:
        raise WizardError(f"--models: unknown interface {interface!r} in {spec!r}; write INTERFACE:MODEL_ID")
    entry: dict[str, Any] = {"name": safe_name(model_id or interface), "interface": interface}
    if model_id:
        entry["parameters"] = {"model": model_id.strip()}
    elif _needs_model(interface):
        raise WizardError(f"--models: {interface} needs a model id: write {interface}:MODEL_ID")
    entry["roles"] = list(ROLES)
    return entry


def _unique(entries: list[dict[str, Any]]) -> None:
    seen: dict[str, int] = {}
    for entry in entries:
        base = entry["name"]
        if base in seen:
            seen[base] += 1
            entry["name"] = f"{base}-{seen[base]}"
        else:
            seen[base] = 1


# ---- interactive -------------------------------------------------------------------------------


def _name_prompt(label: str, default: str | None = None, taken: Sequence[str] = ()) -> str:
    while True:
        value = click.prompt(label, default=default).strip()
        if not _NAME.match(value) or "__" in value:
            click.echo("  use letters, digits, '-', '_' and '.' only, without '__'")
        elif value in taken:
            click.echo(f"  {value!r} is already used")
        else:
            return value


def _range_prompt(label: str, default: str) -> list[int]:
    while True:
        text = click.prompt(label, default=default)
        parts = [p for p in re.split(r"[,\s-]+", text.strip()) if p]
        if 1 <= len(parts) <= 2 and all(p.isdigit() for p in parts):
            low, high = int(parts[0]), int(parts[-1])
            if low <= high:
                return [low, high]
        click.echo("  write min,max with whole numbers, min <= max (e.g. 1,2)")


def _model_interactively(taken: Sequence[str]) -> dict[str, Any]:
    interfaces = [*sorted(SHIPPED_INTERFACES), AUTO_INTERFACE]
    interface = click.prompt(
        "  interface", type=click.Choice(interfaces), default=DEFAULT_INTERFACE, show_choices=False
    )
    model: dict[str, Any] = {}
    if _needs_model(interface):
        model_id = click.prompt("  provider model id (e.g. gpt-4o-mini)").strip()
        model = {"model": model_id}
    default_name = safe_name(model.get("model", interface))
    name = _name_prompt(
        "  name in this experiment", default=default_name if default_name not in taken else None, taken=taken
    )
    while True:
        roles = [
            r.strip()
            for r in click.prompt("  roles (teacher, student, judge)", default="teacher,student,judge").split(
                ","
            )
            if r.strip()
        ]
        if roles and all(r in ROLES for r in roles):
            break
        click.echo("  roles are teacher, student and judge, separated by commas")
    entry: dict[str, Any] = {"name": name, "interface": interface}
    if model:
        entry["parameters"] = model
    entry["roles"] = list(dict.fromkeys(roles))
    if "judge" in roles and click.confirm("  judge at temperature 0 (recommended)?", default=True):
        entry["role_parameters"] = {"judge": {"temperature": 0.0}}
    return entry


def _rubric_interactively() -> dict[str, str] | str:
    choice = click.prompt(
        "  rubric: 'auto' (teachers write it) or 'enter' (type the factors)",
        type=click.Choice(["auto", "enter"]),
        default="auto",
    )
    if choice == "auto":
        return "auto"
    rubric: dict[str, str] = {}
    click.echo("  one factor per line as  name: criterion ; an empty line ends the list")
    while True:
        line = click.prompt("  factor", default="", show_default=False).strip()
        if not line:
            if rubric:
                return rubric
            click.echo("  give at least one factor")
            continue
        name, sep, criterion = line.partition(":")
        if not sep or not criterion.strip():
            click.echo("  write it as  name: criterion")
            continue
        rubric[safe_name(name)] = criterion.strip()


def _task_interactively(taken: Sequence[str]) -> dict[str, Any]:
    name = _name_prompt("  task name", taken=taken)
    task: dict[str, Any] = {
        "name": name,
        "description": click.prompt("  what the task asks for").strip(),
        "output_description": click.prompt("  what a good answer looks like").strip(),
    }
    task["target_attributes"] = click.prompt(
        "  target attributes ('auto', or  name: v1, v2; name2: v3)",
        default="auto",
        value_proc=parse_attribute_spec,
    )
    nuanced = click.prompt(
        "  nuanced attributes ('auto', blank for none, or  name: v1, v2)",
        default="",
        show_default=False,
        value_proc=parse_attribute_spec,
    )
    if nuanced == "complete":
        nuanced = "auto"
    if nuanced:
        task["nuanced_attributes"] = nuanced
    total = click.prompt("  datapoints per teacher", type=click.IntRange(min=1), default=10)
    sampling: dict[str, Any] = {
        "target": _range_prompt("  target values per datapoint (min,max)", "1,2"),
        "total": total,
    }
    if nuanced:
        sampling["nuance"] = _range_prompt("  nuanced values per datapoint (min,max)", "1,1")
    task["sampling"] = sampling
    task["rubric"] = _rubric_interactively()
    task["evaluation_mode"] = click.prompt(
        "  evaluation mode", type=click.Choice(["single", "per_factor"]), default="single"
    )
    return task


def _standard_phase_modes() -> dict[str, tuple[str, ...]]:
    """The five standard phases' modes (Model is for phases 3-5 only)."""
    return {
        phase: tuple(m for m in PHASE_MODES if not (m == "Model" and phase in PHASE_IDS[:2])) for phase in PHASE_IDS
    }


def build_interactively(phases: Mapping[str, Sequence[str]] | None = None) -> dict[str, Any]:
    """Ask for everything a config needs; returns the raw mapping (not yet validated).

    ``phases``: the registered phases (id -> accepted modes) whose modes may be set; the
    five standard ones when None.
    """
    click.echo("CoEval config wizard. Press Enter to accept a [default].")
    experiment_id = _name_prompt("Experiment id", default="my-experiment-v1")
    storage = click.prompt("Storage folder for runs", default="./eval_runs")
    models: list[dict[str, Any]] = []
    click.echo("\nModels: each can be a teacher (writes the test set), a student (answers it) and a judge.")
    while True:
        click.echo(f"Model {len(models) + 1}:")
        models.append(_model_interactively([m["name"] for m in models]))
        if not click.confirm("Add another model?", default=False):
            break
    tasks: list[dict[str, Any]] = []
    click.echo("\nTasks: what the students are evaluated on.")
    while True:
        click.echo(f"Task {len(tasks) + 1}:")
        tasks.append(_task_interactively([t["name"] for t in tasks]))
        if not click.confirm("Add another task?", default=False):
            break
    experiment: dict[str, Any] = {"id": experiment_id, "storage_folder": storage}
    if click.confirm("\nChange phase modes (default: New for every phase)?", default=False):
        chosen = {}
        for phase, modes in (phases or _standard_phase_modes()).items():
            default = "New" if "New" in modes else modes[0]
            chosen[phase] = click.prompt(f"  {phase}", type=click.Choice(list(modes)), default=default)
        experiment["phases"] = chosen
    budget = click.prompt("Budget in US dollars (blank for none)", default="", show_default=False).strip()
    if budget:
        try:
            experiment["budget_usd"] = max(0.0, float(budget))
        except ValueError:
            click.echo("  not a number; no budget set")
    return {"models": models, "tasks": tasks, "experiment": experiment}


# ---- drafted by a model -------------------------------------------------------------------------

DRAFT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tasks": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "description": {"type": "string"},
                    "output_description": {"type": "string"},
                    "target_attributes": {
                        "type": "object",
                        "additionalProperties": {"type": "array", "items": {"type": "string"}},
                    },
                    "nuanced_attributes": {
                        "type": "object",
                        "additionalProperties": {"type": "array", "items": {"type": "string"}},
                    },
                    "rubric": {"type": "object", "additionalProperties": {"type": "string"}},
                },
                "required": ["name", "description", "output_description", "target_attributes", "rubric"],
            },
        }
    },
    "required": ["tasks"],
}

_DRAFT_PROMPT = """\
You are helping design a benchmark that compares language models on one objective.

Objective: {objective}

Propose between 1 and {max_tasks} evaluation tasks for this objective. For each task give:
- name: a short snake_case identifier
- description: what the task asks a model to do, in one or two sentences
- output_description: what a good answer looks like
- target_attributes: 2 to 4 dimensions along which test items should vary, each with 2 to 5
  short snake_case values (for example difficulty: [easy, medium, hard])
- nuanced_attributes: 1 to 3 dimensions of surface variety (style, register), same form
- rubric: 3 to 5 scoring factors, each a short snake_case name mapped to one sentence a judge
  can apply

Reply with JSON only, in this form:
{{"tasks": [{{"name": "...", "description": "...", "output_description": "...",
  "target_attributes": {{"dimension": ["value", "value"]}},
  "nuanced_attributes": {{"dimension": ["value", "value"]}},
  "rubric": {{"factor": "criterion"}}}}]}}
"""


def _clean_map(value: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    if isinstance(value, Mapping):
        for name, values in value.items():
            items = [
                str(v).strip() for v in (values if isinstance(values, list) else [values]) if str(v).strip()
            ]
            if items:
                out[safe_name(str(name), "attribute")] = list(dict.fromkeys(items))
    return out


def _tasks_from_draft(data: Any, items: int) -> list[dict[str, Any]]:
    obj = extract_json(data) if isinstance(data, str) else data
    drafted = obj.get("tasks") if isinstance(obj, Mapping) else None
    if not isinstance(drafted, list):
        raise WizardError("the drafting model did not return a JSON object with a 'tasks' list")
    tasks = []
    for i, raw in enumerate(drafted):
        if not isinstance(raw, Mapping):
            continue
        target = _clean_map(raw.get("target_attributes"))
        rubric = (
            {
                safe_name(str(k), "factor"): str(v).strip()
                for k, v in (raw.get("rubric") or {}).items()
                if str(v).strip()
            }
            if isinstance(raw.get("rubric"), Mapping)
            else {}
        )
        description = str(raw.get("description") or "").strip()
        if not description:
            continue
        task: dict[str, Any] = {
            "name": safe_name(str(raw.get("name") or f"task_{i + 1}"), f"task_{i + 1}"),
            "description": description,
            "output_description": str(raw.get("output_description") or "").strip(),
            "target_attributes": target or "auto",
        }
        nuanced = _clean_map(raw.get("nuanced_attributes"))
        if nuanced:
            task["nuanced_attributes"] = nuanced
        task["sampling"] = {"target": [1, min(2, len(target)) or 1], "total": items}
        if nuanced:
            task["sampling"]["nuance"] = [1, 1]
        task["rubric"] = rubric or "auto"
        task["evaluation_mode"] = "single"
        tasks.append(task)
    if not tasks:
        raise WizardError("the drafting model's reply held no usable task")
    _unique(tasks)
    return tasks


def draft_config(
    objective: str,
    model_specs: Sequence[str],
    *,
    drafter: str | None = None,
    items: int = 12,
    max_tasks: int = 3,
    experiment_id: str = "drafted-v1",
    storage_folder: str = "./eval_runs",
    keys_file: str | None = None,
    call: Callable[[dict[str, Any], str], str] | None = None,
) -> dict[str, Any]:
    """Ask a configured model to draft tasks, attributes and rubrics for ``objective``.

    ``model_specs`` are ``INTERFACE:MODEL_ID`` entries (they take part with all three roles);
    ``drafter`` (same form) writes the draft, by default the first of them. ``call`` replaces
    the model call (tests).
    """
    if not model_specs:
        raise WizardError("--models: list at least one INTERFACE:MODEL_ID")
    models = [parse_model_spec(spec) for spec in model_specs]
    _unique(models)
    drafting = parse_model_spec(drafter) if drafter else models[0]
    prompt = _DRAFT_PROMPT.format(objective=objective.strip(), max_tasks=max_tasks)
    text = call(drafting, prompt) if call is not None else _call_model(drafting, prompt, keys_file)
    tasks = _tasks_from_draft(text, items)
    return {
        "models": models,
        "tasks": tasks,
        "experiment": {"id": safe_name(experiment_id), "storage_folder": storage_folder},
    }


def _call_model(entry: dict[str, Any], prompt: str, keys_file: str | None = None) -> str:
    regs = registries()
    if entry["interface"] not in regs.interfaces:
        raise WizardError(missing_interface(entry["interface"]))
    skeleton = {
        "models": [entry],
        "tasks": [{"name": "draft", "description": "draft"}],
        "experiment": {"id": "draft"},
    }
    model = structure_config(skeleton).models[0]
    creds = KeyStore.load(keys_file).for_provider(model.interface, model.access_key)
    iface = regs.interfaces.get(model.interface)(model, creds)
    params = {**model.parameters, "temperature": 0.7}
    params.setdefault("max_tokens", 2048)

    async def go() -> str:
        try:
            result = await asyncio.wait_for(
                iface.generate(
                    GenerateRequest(
                        prompt=prompt,
                        params=params,
                        role="teacher",
                        json_schema=DRAFT_SCHEMA,
                        schema_name="draft",
                    )
                ),
                180,
            )
            return str(result.text)
        finally:
            await iface.aclose()

    try:
        return asyncio.run(go())
    except WizardError:
        raise
    except Exception as exc:
        raise WizardError(f"the drafting model failed: {redact(str(exc)) or type(exc).__name__}") from None


# ---- writing -----------------------------------------------------------------------------------


def write_config(raw: dict[str, Any], out: str | Path, *, source: str, keys_file: str | None = None) -> Path:
    """Validate (every rule except the disk ones) and write with a short header."""
    try:
        load_config(raw, check_filesystem=False, keys_file=keys_file, environment_as_warnings=True)
    except ConfigError as err:
        raise WizardError(
            "the answers do not make a valid config:\n" + "\n".join(i.format() for i in err.issues)
        ) from None
    header = (
        f"# Written by `coeval wizard` ({source}) on {utc_now()}.\n"
        "# Check it with:  coeval run --config THIS_FILE --dry-run\n"
    )
    body = dump_config_yaml(raw)
    target = Path(out)
    atomic_write_text(target, header + body)
    readable(target)
    return target
