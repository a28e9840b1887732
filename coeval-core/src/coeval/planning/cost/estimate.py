"""The cost estimate: calls x tokens per call x price, and how long it will take.

For every (task, phase, model) the call plan counts, one call's tokens come from the best
source available:

* **history**: the usage of calls of that (phase, model) already in the run folder
  (``--continue``, or a past run of the config: its folder holds ``meta.json``); the time
  of a phase is then the pace that run kept (``meta.json`` phase log: seconds per record);
* **samples**: live sample calls (``estimate_samples`` per model and phase): measured reply
  sizes, and input tokens calibrated against what the provider reported. A model whose
  calls are free (``Interface.free_samples``: the ``mock``) is always measured this way,
  even with ``samples=0``, so every estimate of a mock run agrees;
* **heuristics**: input tokens counted on the real rendered prompt; output tokens a typical
  size for the phase, capped by ``max_tokens``.

Cost uses the ``model_price`` hook (coeval-providers' pricing table), discounted for phases
that go through a batch API. Time assumes each provider connection runs at its starting
concurrency; batch phases are reported separately (providers return them within hours).
"""

from __future__ import annotations

import asyncio
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from coeval.config.model import Config, ModelConfig
from coeval.contract.manager import registries as installed
from coeval.planning import Plan, batch_phases, plan_experiment
from coeval.planning.cost.history import measured_history, seconds_per_record
from coeval.planning.cost.measure import Measured
from coeval.planning.cost.pricing import LOCAL_INTERFACES, Price, price_for
from coeval.planning.cost.remaining import forked_source, remaining_cells, surveyed_folder
from coeval.planning.cost.requests import KNOWN_PHASES, RequestBuilder, TaskTexts, expected_output_tokens
from coeval.planning.cost.samples import SampleResults, run_samples
from coeval.planning.cost.tokens import estimate_tokens
from coeval.storage.run_folder import RunFolder, utc_now

if TYPE_CHECKING:
    from coeval.contract.manager import Registries

__all__ = ["CellEstimate", "CostEstimate", "estimate_cost"]

#: Output tokens per second of an interface that declares no typical speed (``tokens_per_s``
#: of :class:`coeval.InterfaceFacts`), for time estimates.
_DEFAULT_TOKENS_PER_S = 60.0
_REQUEST_OVERHEAD_S = 0.8
_FREE_SAMPLES = 2  # sample calls per phase of a free model when the config asks for none
_MIN_HISTORY = 3  # records of a (phase, model) before their average is trusted


@attrs.frozen
class CellEstimate:
    """One (task, phase, model): its calls and what they cost."""

    task: str
    phase: str
    model: str
    calls: int
    input_tokens: float
    output_tokens: float
    cost_usd: float | None  # None when the model's price is unknown
    batch: bool
    seconds: float
    source: str  # history | samples | heuristics


@attrs.frozen
class CostEstimate:
    plan: Plan
    cells: tuple[CellEstimate, ...]
    prices: Mapping[str, Price | None]
    remaining_only: bool = False
    samples_per_model: int = 0
    sample_calls: int = 0
    notes: tuple[str, ...] = ()
    phase_seconds: Mapping[str, float] = attrs.field(factory=dict)
    generated_at: str = attrs.field(factory=utc_now)

    # ---- totals -------------------------------------------------------------------------------
    def _sum(self, cells: Sequence[CellEstimate]) -> dict[str, Any]:
        costs = [c.cost_usd for c in cells if c.calls]
        known = [c for c in costs if c is not None]
        return {
            "calls": sum(c.calls for c in cells),
            "input_tokens": round(sum(c.input_tokens for c in cells)),
            "output_tokens": round(sum(c.output_tokens for c in cells)),
            "cost_usd": round(sum(known), 6),
            "cost_complete": len(known) == len(costs),
            "batch_calls": sum(c.calls for c in cells if c.batch),
        }

    def by_phase(self) -> dict[str, dict[str, Any]]:
        out = {}
        for phase in (p.phase for p in self.plan.phases):
            totals = self._sum([c for c in self.cells if c.phase == phase])
            totals["seconds"] = round(self.phase_seconds.get(phase, 0.0), 1)
            out[phase] = totals
        return out

    def by_model(self) -> dict[str, dict[str, Any]]:
        out = {}
        for m in self.plan.models:
            totals = self._sum([c for c in self.cells if c.model == m.name])
            price = self.prices.get(m.name)
            totals.update(
                interface=m.interface,
                requested_interface=m.requested_interface,
                batch_phases=list(m.batch),
                price_per_1m=price.to_dict() if price is not None else None,
                sources=sorted({c.source for c in self.cells if c.model == m.name and c.calls}),
            )
            out[m.name] = totals
        return out

    def by_task(self) -> dict[str, dict[str, Any]]:
        return {t.name: self._sum([c for c in self.cells if c.task == t.name]) for t in self.plan.tasks}

    @property
    def total(self) -> dict[str, Any]:
        return self._sum(list(self.cells))

    @property
    def total_calls(self) -> int:
        return int(self.total["calls"])

    @property
    def total_cost_usd(self) -> float:
        return float(self.total["cost_usd"])

    @property
    def seconds(self) -> float:
        return sum(self.phase_seconds.values())

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``coeval plan --json`` and ``cost_estimate.json``)."""
        total = self.total
        return {
            "experiment_id": self.plan.experiment_id,
            "generated_at": self.generated_at,
            "remaining_only": self.remaining_only,
            "total_calls": total["calls"],
            "total_input_tokens": total["input_tokens"],
            "total_output_tokens": total["output_tokens"],
            "total_cost_usd": total["cost_usd"],
            "cost_complete": total["cost_complete"],
            "estimated_seconds": round(self.seconds, 1),
            "phases": self.by_phase(),
            "models": self.by_model(),
            "tasks": self.by_task(),
            "samples": {"per_model_and_phase": self.samples_per_model, "calls_made": self.sample_calls},
            "notes": list(self.notes),
        }


def _heuristic_latency(model: ModelConfig, output_tokens: float, registries: Registries) -> float:
    if model.interface == "mock":
        latency = model.parameters.get("latency_ms", 0)
        if isinstance(latency, list | tuple) and latency:
            latency = sum(latency) / len(latency)
        return float(latency or 0) / 1000
    overhead = 0.05 if model.interface in LOCAL_INTERFACES else _REQUEST_OVERHEAD_S
    facts = registries.interface_facts(model.interface)
    speed = facts.tokens_per_s if facts is not None and facts.tokens_per_s else _DEFAULT_TOKENS_PER_S
    return overhead + output_tokens / speed


def _concurrency(model: ModelConfig, samples: SampleResults, registries: Registries) -> int:
    iface = samples.interfaces.get(model.name)
    if iface is not None:
        return max(1, int(getattr(iface, "default_concurrency", 8)))
    if model.interface in registries.interfaces:
        factory = registries.interfaces.get(model.interface)
        value = getattr(factory, "default_concurrency", None)
        if isinstance(value, int) and value > 0:
            return value
    return 8


def estimate_cost(
    config: Config,
    *,
    samples: int | None = None,
    continue_run: bool = False,
    keys_file: str | None = None,
    only_models: Sequence[str] = (),
    registries: Registries | None = None,
) -> CostEstimate:
    """Estimate calls, tokens, dollars and time of a config (``coeval plan``).

    ``samples`` live calls per model and phase (default ``experiment.estimate_samples``;
    0 = heuristics only, no call). ``continue_run`` estimates only the work the run folder
    does not hold yet. ``registries`` are the plugins' phases and interfaces (those of the
    installed plugins when None: this is an entry point of the Python API).
    """
    if registries is None:
        registries = installed()
    n_samples = config.experiment.estimate_samples if samples is None else samples
    run = RunFolder.for_experiment(config.experiment.storage_folder, config.experiment.id)
    notes: list[str] = []
    history: dict[tuple[str, str], Measured] = {}
    if continue_run or forked_source(config, run) is not None:
        # what the run will really call: the phases' own item lists on the folder's state
        with surveyed_folder(config, run, registries) as surveyed:
            config, cells = remaining_cells(config, surveyed, registries, continue_run=continue_run,
                                            only_models=only_models)
        plan = plan_experiment(config, only_models=only_models, registries=registries)
    else:
        plan = plan_experiment(config, only_models=only_models, registries=registries)
        cells = dict(plan.cells)
    pace: dict[str, float] = {}
    if continue_run or run.meta_path.is_file():  # a past run of this config: sizes and pace measured
        history = measured_history(run, config, phases={phase for (_, phase, _), n in cells.items() if n})
        pace = seconds_per_record(run)
    if continue_run:
        notes.append("remaining work only: calls whose records already exist are not counted")
    builder = RequestBuilder(config, run, registries=registries)
    # free models (the mock) are measured alike with or without sample calls, so that
    # `run`'s estimate, `plan --estimate-samples 0` and `describe` agree
    n_free = max(n_samples, config.experiment.estimate_samples or _FREE_SAMPLES)
    sampled = (
        asyncio.run(
            run_samples(config, cells, builder, samples=n_samples, free_samples=n_free, keys_file=keys_file,
                        registries=registries)
        )
        if any(cells.values())
        else SampleResults()
    )
    notes.extend(sampled.notes)
    texts = {t.name: sampled.texts.get(t.name) or builder.default_texts(t) for t in config.tasks}
    prices = {m.name: price_for(m) for m in config.models}
    for m in config.models:
        if prices[m.name] is None and any(n for (_, _, name), n in cells.items() if name == m.name):
            notes.append(
                f"{m.name}: no price known for {(m.interface + ' ' + str(m.parameters.get('model') or '')).strip()}; "
                "its cost is left out of the total"
            )
    estimates = _cells(config, cells, builder, texts, sampled, history, prices, registries)
    phase_seconds = _phase_seconds(config, plan, estimates, sampled, registries)
    learned = [phase for phase in phase_seconds if phase in pace and _learn_time(phase, estimates, pace, phase_seconds)]
    if learned:
        notes.append(f"time of {', '.join(learned)}: at the pace of the past run in {run.root} (meta.json phase log)")
    if any(c.batch and c.calls for c in estimates):
        notes.append(
            "batch phases are not in the time estimate: providers return batches within hours (up to 24 h)"
        )
    notes.extend(plan.notes)
    notes.extend(
        f"phase {p.phase}: its requests are unknown before it runs, so its tokens and cost are a rough guess"
        for p in plan.phases
        if p.phase not in KNOWN_PHASES and p.calls
    )
    return CostEstimate(
        plan=plan,
        cells=tuple(estimates),
        prices=prices,
        remaining_only=continue_run,
        samples_per_model=n_samples,
        sample_calls=sampled.calls,
        notes=tuple(dict.fromkeys(notes)),
        phase_seconds=phase_seconds,
    )


def _cells(
    config: Config,
    cells: Mapping[tuple[str, str, str], int],
    builder: RequestBuilder,
    texts: Mapping[str, TaskTexts],
    sampled: SampleResults,
    history: Mapping[tuple[str, str], Measured],
    prices: Mapping[str, Price | None],
    registries: Registries,
) -> list[CellEstimate]:
    tasks = {t.name: t for t in config.tasks}
    models = {m.name: m for m in config.models}
    out = []
    for (task_name, phase, model_name), calls in sorted(cells.items()):
        task, model = tasks[task_name], models[model_name]
        past = history.get((phase, model_name))
        latency = sampled.latency(phase, model_name)
        if past is not None and past.calls >= _MIN_HISTORY:
            source, per_in, per_out = "history", past.avg_input, past.avg_output
        else:
            requests = builder.requests(phase, task, model, texts[task_name])
            rendered = statistics.fmean(estimate_tokens(r.prompt) for r in requests) if requests else 0.0
            per_in = rendered * (sampled.ratio(model_name) or 1.0)
            heuristic = expected_output_tokens(phase, task, model)
            same_task = sampled.of(phase, model_name, task_name)
            carried = sampled.output_ratio(phase, model_name)
            if same_task is not None:
                source, per_out = "samples", same_task.avg_output
            elif carried is not None:
                source, per_out = "samples", heuristic * carried
            else:
                source, per_out = "heuristics", heuristic
        batch = phase in batch_phases(config, model)
        price = prices.get(model_name)
        tokens_in, tokens_out = per_in * calls, per_out * calls
        cost = price.cost(tokens_in, tokens_out, batch=batch, calls=calls) if price is not None else None
        per_call_s = latency if latency is not None else _heuristic_latency(model, per_out, registries)
        out.append(
            CellEstimate(
                task=task_name,
                phase=phase,
                model=model_name,
                calls=calls,
                input_tokens=tokens_in,
                output_tokens=tokens_out,
                cost_usd=cost,
                batch=batch,
                seconds=0.0 if batch else per_call_s * calls,
                source=source,
            )
        )
    return out


def _learn_time(
    phase: str, cells: Sequence[CellEstimate], pace: Mapping[str, float], phase_seconds: dict[str, float]
) -> bool:
    """Time ``phase``'s real-time calls at the seconds per record a past run kept."""
    calls = sum(c.calls for c in cells if c.phase == phase and not c.batch)
    if not calls:
        return False
    phase_seconds[phase] = pace[phase] * calls
    return True


def _phase_seconds(
    config: Config, plan: Plan, cells: Sequence[CellEstimate], sampled: SampleResults, registries: Registries
) -> dict[str, float]:
    """Per phase: models on one lane share its concurrency; lanes run in parallel. A lane is
    the interface, or for a free model (the mock, always built) its ``connection_key``, as
    the scheduler forms them (every mock model is its own lane)."""
    models = {m.name: m for m in config.models}
    out: dict[str, float] = {}
    for phase in (p.phase for p in plan.phases):
        busy: dict[str, float] = defaultdict(float)  # lane -> call-seconds / concurrency
        for c in cells:
            if c.phase == phase and c.calls and not c.batch:
                m = models[c.model]
                iface = sampled.interfaces.get(m.name) if m.name in sampled.free else None
                lane = iface.connection_key() if iface is not None else m.interface
                busy[lane] += c.seconds / _concurrency(m, sampled, registries)
        out[phase] = max(busy.values(), default=0.0)
    return out
