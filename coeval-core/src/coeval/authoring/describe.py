"""``coeval describe``: one self-contained HTML page that explains an experiment.

Models and roles, tasks with their attributes and rubric, previews of the prompts each
phase will send, the phase plan with call counts, a cost estimate from the pricing table
(heuristics, no call), batch settings and quotas. The page has no script and loads nothing
from the network, so it can be mailed or archived as is. ``--probe`` adds one live call per
model to show that it answers and how fast.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coeval.config.model import Config
from coeval.phase_ids import ROLES
from coeval.planning import Plan
from coeval.planning.cost import CostEstimate, estimate_cost, format_duration
from coeval.planning.cost.requests import RequestBuilder
from coeval.shipped_interfaces import BENCHMARK_INTERFACE
from coeval.storage.run_folder import atomic_write_text, utc_now

if TYPE_CHECKING:
    from coeval.plugins.manager import Registries

__all__ = ["describe_html", "write_description"]

_CSS = """
:root { --fg: #1d2330; --muted: #5b6478; --line: #d9dee8; --accent: #2f5fb3; --bg: #f6f8fb; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
       margin: 0; background: var(--bg); }
main { max-width: 1100px; margin: 0 auto; padding: 24px; }
h1 { font-size: 26px; margin: 0 0 4px; } h2 { font-size: 19px; margin: 32px 0 8px; }
h3 { font-size: 16px; margin: 20px 0 6px; }
.muted { color: var(--muted); }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 16px 20px; margin: 12px 0; }
table { border-collapse: collapse; width: 100%; margin: 8px 0; }
th, td { text-align: left; padding: 5px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 13px; color: var(--muted); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.chip { display: inline-block; padding: 1px 8px; margin: 1px 2px; border-radius: 10px; font-size: 12px;
        background: #e8eefb; color: var(--accent); }
.chip.teacher { background: #e6f4ea; color: #1e7b34; } .chip.student { background: #fff4e0; color: #9a5b00; }
.chip.judge { background: #f3e8fb; color: #7a2fb3; }
pre { white-space: pre-wrap; background: #f1f3f7; border-radius: 6px; padding: 10px; font-size: 12.5px; margin: 6px 0; }
details summary { cursor: pointer; color: var(--accent); margin: 4px 0; }
.bar { height: 12px; background: var(--accent); border-radius: 3px; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(180px, 1fr)); gap: 10px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; background: #fff; }
.card .value { font-size: 22px; font-weight: 600; } .card .label { color: var(--muted); font-size: 13px; }
.ok { color: #1e7b34; } .bad { color: #b3261e; }
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[int] = ()) -> str:
    head = "".join(
        f'<th class="num">{_e(h)}</th>' if i in numeric else f"<th>{_e(h)}</th>"
        for i, h in enumerate(headers)
    )
    thead = f"<thead><tr>{head}</tr></thead>" if any(headers) else ""
    body = "".join(
        "<tr>"
        + "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(row))
        + "</tr>"
        for row in rows
    )
    return f"<table>{thead}<tbody>{body}</tbody></table>"


def _chips(items: Iterable[str], cls: str = "") -> str:
    return "".join(f'<span class="chip {_e(cls or i)}">{_e(i)}</span>' for i in items)


def _attributes(value: Any) -> str:
    if isinstance(value, str):
        return (
            f"<em>{_e(value)}</em> (teachers propose them in phase 1)"
            if value != "complete"
            else "<em>complete</em> (teachers propose them; phase 3 covers the cross-product)"
        )
    if not value:
        return '<span class="muted">none</span>'
    return "<br>".join(f"<strong>{_e(k)}</strong>: {_chips(v, 'value')}" for k, v in value.items())


def _rubric(value: Any, labels: Sequence[str]) -> str:
    if isinstance(value, str):
        what = "teachers write it in phase 2" if value == "auto" else "teachers extend the inherited rubric"
        return f"<em>{_e(value)}</em> ({what})"
    rows = []
    for name, spec in value.items():
        if isinstance(spec, Mapping):
            kind = f"metric {spec.get('metric')}" if spec.get("metric") else "judge"
            text = spec.get("description", "")
        else:
            kind, text = ("label (exact match)" if name in labels else "judge"), spec
        rows.append([f"<strong>{_e(name)}</strong>", _e(text), _e(kind)])
    for label in labels:
        if label not in value:
            rows.append([f"<strong>{_e(label)}</strong>", "the datapoint's label", "label (exact match)"])
    return _table(["factor", "criterion", "scored by"], rows)


def _prompts(config: Config, plan: Plan, registries: Registries) -> dict[str, list[tuple[str, str]]]:
    """Per task: (phase, rendered prompt) previews with stand-in texts."""
    builder = RequestBuilder(config, registries=registries)
    out: dict[str, list[tuple[str, str]]] = {}
    roles = {
        phase: {"teacher": config.teachers, "student": config.students, "judge": config.judges}[role]
        for phase, role in ROLES.items()
    }
    calls = {t.name: t.calls for t in plan.tasks}
    for task in config.tasks:
        texts = builder.default_texts(task)
        previews = []
        for phase in (p.phase for p in plan.phases if p.phase in roles):
            models = [m for m in roles[phase] if m.interface != BENCHMARK_INTERFACE]
            if not models or not calls[task.name].get(phase):
                continue
            try:
                requests = builder.requests(phase, task, models[0], texts)
            except Exception:
                continue
            for r in requests[:2]:
                previews.append((phase, r.prompt))
        out[task.name] = previews
    return out


def describe_html(
    config: Config,
    *,
    registries: Registries,
    probe: Sequence[Any] | None = None,
    estimate: CostEstimate | None = None,
) -> str:
    """The page as a string. ``probe``: :class:`coeval.run.probe.ProbeResult` list (optional);
    ``registries``: the plugins' phases and interfaces the plan counts."""
    estimate = estimate or estimate_cost(config, samples=0, registries=registries)
    exp = config.experiment
    parts = [
        *_overview_section(config, estimate),
        *_models_section(config, estimate, probe),
        *_phase_plan_section(estimate),
        *_tasks_section(config, estimate.plan, registries),
        *_settings_section(config),
    ]
    body = "\n".join(p for p in parts if p)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{_e(exp.id)} · CoEval</title>'
        f"<style>{_CSS}</style></head><body><main>\n{body}\n</main></body></html>\n"
    )


def _overview_section(config: Config, estimate: CostEstimate) -> list[str]:
    """Title, where runs go, and the headline cards (models, tasks, calls, cost, time)."""
    plan: Plan = estimate.plan
    exp = config.experiment
    total = estimate.total
    cost = f"${total['cost_usd']:,.2f}" + ("" if total["cost_complete"] else "+")
    parts: list[str] = []
    parts.append(f"<h1>{_e(exp.id)}</h1>")
    source = f" from {_e(Path(config.source).name)}" if config.source else ""
    parts.append(
        f'<p class="muted">Experiment description{source}, generated {_e(utc_now())}. '
        f"Runs are written to <code>{_e(plan.run_folder)}</code>.</p>"
    )
    cards = [
        (f"{len(config.models)}", "models"),
        (f"{len(config.tasks)}", "tasks"),
        (f"{plan.total_calls:,}", "model calls"),
        (f"{total['input_tokens']:,} / {total['output_tokens']:,}", "estimated tokens in / out"),
        (cost, "estimated cost"),
        (format_duration(estimate.seconds), "estimated time (real-time phases)"),
    ]
    parts.append(
        '<div class="cards">'
        + "".join(
            f'<div class="card"><div class="value">{_e(v)}</div><div class="label">{_e(label)}</div></div>'
            for v, label in cards
        )
        + "</div>"
    )
    return parts


def _models_section(config: Config, estimate: CostEstimate, probe: Sequence[Any] | None) -> list[str]:
    """One row per model: interface, roles, batch phases, quota, calls, cost, probe result."""
    plan: Plan = estimate.plan
    parts: list[str] = []
    probed = {r.model: r for r in probe or []}
    model_rows = []
    by_model = estimate.by_model()
    for m in plan.models:
        cfg = config.model(m.name)
        row = [
            f"<strong>{_e(m.name)}</strong>",
            _e(m.interface_label),
            _e(cfg.parameters.get("model", "")),
            _chips(m.roles),
            _e(", ".join(plan.title(p) for p in m.batch) or "-"),
            _e(f"{m.max_calls:,}" if m.max_calls is not None else "-"),
            f"{m.total:,}",
            _e(f"${by_model[m.name]['cost_usd']:,.4f}" if by_model[m.name]["price_per_1m"] else "unknown"),
        ]
        if probe is not None:
            r = probed.get(m.name)
            if r is None or r.skipped:
                row.append('<span class="muted">skipped</span>')
            elif r.ok:
                row.append(f'<span class="ok">ok, {r.latency_s or 0:.2f} s</span>')
            else:
                row.append(f'<span class="bad">failed: {_e(r.error or "")}</span>')
        model_rows.append(row)
    headers = ["model", "interface", "model id", "roles", "batch", "quota", "calls", "est. cost"]
    if probe is not None:
        headers.append("probe")
    parts.append("<h2>Models</h2><section>" + _table(headers, model_rows, numeric=(5, 6, 7)) + "</section>")
    return parts


def _phase_plan_section(estimate: CostEstimate) -> list[str]:
    """Calls, tokens and cost per phase, with a bar for each phase's share."""
    plan: Plan = estimate.plan
    parts: list[str] = []
    most = max((p.calls for p in plan.phases), default=0) or 1
    by_phase = estimate.by_phase()
    phase_rows = []
    for p in plan.phases:
        width = int(100 * p.calls / most)
        note = {
            "reused": "reused from resume_from",
            "upper_bound": "at most (existing records are skipped)",
        }.get(p.basis, "")
        totals = by_phase[p.phase]
        phase_rows.append(
            [
                _e(p.label),
                _e(p.mode),
                f"{p.calls:,}",
                f"{totals['input_tokens']:,} / {totals['output_tokens']:,}",
                _e(f"${totals['cost_usd']:,.4f}"),
                f'<div class="bar" style="width:{width}%"></div>' if p.calls else "",
                _e(note),
            ]
        )
    parts.append(
        "<h2>Phase plan</h2><section>"
        + _table(
            ["phase", "mode", "calls", "tokens in / out", "cost", "share", "note"],
            phase_rows,
            numeric=(2, 3, 4),
        )
    )
    if estimate.notes:
        parts.append("<ul>" + "".join(f'<li class="muted">{_e(n)}</li>' for n in estimate.notes) + "</ul>")
    parts.append("</section>")
    return parts


def _tasks_section(config: Config, plan: Plan, registries: Registries) -> list[str]:
    """Per task: description, attributes, sampling, calls, rubric and prompt previews."""
    parts: list[str] = []
    previews = _prompts(config, plan, registries)
    parts.append("<h2>Tasks</h2>")
    for t, tp in zip(config.tasks, plan.tasks, strict=True):
        sampling = f"target {tp.target} · nuance {tp.nuance} · {tp.total} datapoints per teacher"
        block = [
            f"<section><h3>{_e(t.name)}</h3>",
            f"<p>{_e(t.description)}</p>",
            f'<p class="muted">A good answer: {_e(t.output_description or "-")}</p>'
            if t.output_description
            else "",
            f"<p>{_chips([t.category], 'value')}</p>" if t.category else "",
            _table(
                ["", ""],
                [
                    ["target attributes", _attributes(t.target_attributes)],
                    ["nuanced attributes", _attributes(t.nuanced_attributes)],
                    ["sampling", _e(sampling)],
                    ["evaluation mode", _e(t.evaluation_mode)],
                    [
                        "calls",
                        _e(
                            ", ".join(f"{plan.title(p)}: {n:,}" for p, n in tp.calls.items() if n) or "none"
                        ),
                    ],
                ],
            ),
            "<h3>Rubric</h3>",
            _rubric(t.rubric, t.label_attributes),
        ]
        if previews.get(t.name):
            block.append("<h3>Prompt previews</h3>")
            for phase, prompt in previews[t.name]:
                block.append(
                    f"<details><summary>{_e(plan.title(phase))}</summary><pre>{_e(prompt)}</pre></details>"
                )
        block.append("</section>")
        parts.append("".join(block))
    return parts


def _settings_section(config: Config) -> list[str]:
    """The experiment settings a reader checks before paying for a run."""
    exp = config.experiment
    parts: list[str] = []
    settings = [
        ["storage folder", _e(exp.storage_folder)],
        ["phase modes", _e(", ".join(f"{k}: {v}" for k, v in exp.phases.as_dict().items()))],
        ["resume from", _e(exp.resume_from or "-")],
        ["batch", f"<code>{_e(json.dumps(dict(exp.batch)) if exp.batch else '-')}</code>"],
        ["quota", _e(", ".join(f"{k}: {q.max_calls}" for k, q in exp.quota.items()) or "-")],
        ["budget", _e(f"${exp.budget_usd:,.2f}" if exp.budget_usd is not None else "-")],
        ["probe", _e(f"{exp.probe_mode} (on failure: {exp.probe_on_fail})")],
        ["retries of unparseable output", _e(exp.generation_retries)],
        ["seed", _e(exp.seed)],
    ]
    parts.append("<h2>Settings</h2><section>" + _table(["", ""], settings) + "</section>")
    return parts


def write_description(
    config: Config, out: str | Path, *, registries: Registries, probe: Sequence[Any] | None = None
) -> Path:
    target = Path(out)
    atomic_write_text(target, describe_html(config, registries=registries, probe=probe))
    readable(target)
    return target


def readable(path: Path) -> None:
    """Give a written file the usual permissions (temp files are created private)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)
