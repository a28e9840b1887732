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
that go through a batch API; batch phases are left out of the time (providers return them
within hours).

Time, per phase, is the longest of three bounds (:func:`_phase_seconds`):

* **each lane's round trips**: a lane (one provider connection) starts at its interface's
  starting concurrency and its limiter adds one call per answer up to its maximum (slow
  start), carried from one phase to the next as the run's limiter is; a call takes the
  sampled latency, a past run's, or the interface's typical speed;
* **calls that run one at a time** (``one_at_a_time`` local engines, e.g. llama.cpp): added
  up, each at the interface's ``seconds_per_token`` for the prompt tokens its engine reads
  (an engine that keeps its last prompt reads only what a prompt does not share with it:
  :mod:`coeval.planning.cost.prompt_reads`) and for its reply tokens;
* **the run's own CPU**: every call costs the orchestrator, and a provider SDK's client
  more (figures of ``nox -s bench``), and the first call through an SDK starts its client.
"""

from __future__ import annotations

import asyncio
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import attrs

from coeval.config.model import Config, ModelConfig, TaskConfig
from coeval.contract.types import TokenSeconds
from coeval.phase_ids import EVALUATION
from coeval.phases.run_selection import PIPELINED_MODES, PIPELINED_PHASES
from coeval.planning import Plan, batch_phases, plan_experiment
from coeval.planning.cost.history import measured_history, overlap_share, seconds_per_record
from coeval.planning.cost.machine_speed import load_share, speed_factor
from coeval.planning.cost.measure import Measured
from coeval.planning.cost.pricing import LOCAL_INTERFACES, Price, price_for
from coeval.planning.cost.program_time import PROGRAM_S, ProgramWork, program_work
from coeval.planning.cost.prompt_reads import read_share
from coeval.planning.cost.remaining import forked_source, remaining_cells, surveyed_folder
from coeval.planning.cost.requests import KNOWN_PHASES, RequestBuilder, TaskTexts, expected_output_tokens
from coeval.planning.cost.samples import SampleResults, run_samples
from coeval.planning.cost.time_basis import TimeBasis, time_basis
from coeval.planning.cost.tokens import estimate_tokens
from coeval.plugins.manager import registries as installed
from coeval.storage.run_folder import RunFolder, utc_now

if TYPE_CHECKING:
    from coeval.plugins.manager import Registries

__all__ = ["CellEstimate", "CostEstimate", "estimate_cost"]

#: Output tokens per second of an interface that declares no typical speed (``tokens_per_s``
#: of :class:`coeval.InterfaceFacts`), for time estimates.
_DEFAULT_TOKENS_PER_S = 60.0
_REQUEST_OVERHEAD_S = 0.8
_FREE_SAMPLES = 2  # sample calls per phase of a free model when the config asks for none
#: a phase's own start: the survey of the run folder, its files opened
_PHASE_START_S = 0.2
#: Seconds per call of a run bound by its own CPU: the run itself (scheduling, records,
#: progress: the mock's whole cost), and a provider SDK's client besides (request building,
#: HTTP, reply parsing; its event loop also waits on sockets, and the fake server shares the
#: machine). ``nox -s bench``'s figures on the two-core machine of
#: :data:`coeval.planning.cost.machine_speed.REFERENCE_S`, both scaled by how fast the
#: machine runs such work now (:func:`machine_speed.speed_factor`). Since runs raise the
#: garbage collector's threshold (:mod:`coeval.run.collector`): the mock shape at 0.30 ms a
#: call (4.5 to 4.9 s for its 12,400 calls, against 5.4 to 6.3 s before, interleaved: the
#: 0.37 ms it was, less a fifth); the same shape through the openai SDK against the fake
#: server, with limits left to the limiter, 13.6 to 18.2 s for 12,493 calls: 0.92 to 1.12 ms
#: a call in all at this machine's speed then (one run in five, which the machine slowed
#: after its speed was measured, 1.86), so about 0.67 ms for the SDK. (Before that change
#: 1 ms; before the latency limiter stopped cutting on the client's own stalls, that run was
#: held by the limiter, not by its CPU, at about 2.7 ms a call.)
_RUN_CPU_PER_CALL_S = 0.00030
_SDK_CPU_PER_CALL_S = 0.00067
#: CPU per call of a server on this machine (a loopback URL: the fake server, a local vLLM's
#: HTTP front): 0.6 to 0.7 ms on ``nox -s bench``'s fake server. On a quiet machine it runs
#: on a core of its own beside the run; on one busier than a process per core, the two take
#: turns on the same cores (the medium shape under a load average of 8 took twice the run's
#: CPU bound alone)
_LOCAL_SERVER_CPU_PER_CALL_S = 0.00065
#: a provider SDK's start in the run (its import, the first connection) when no sample call
#: measured it (1.35 s on the loopback fake server)
_CLIENT_START_S = 1.4
#: a local engine's own cost per call besides its tokens (template, sampler set-up)
_LOCAL_CALL_S = 0.05
_MIN_HISTORY = 3  # records of a (phase, model) before their average is trusted
#: the lane a code task's programs take in the time model
SANDBOX_LANE = "sandbox"


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
    #: where one call's latency came from: history | samples | setting | engine | heuristic
    latency_source: str = "heuristic"


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
    #: seconds phases 3-5 save by running at once (0 when the run takes them one by one)
    pipelined_overlap_s: float = 0.0
    #: what the time rests on, and the range it leaves (:mod:`coeval.planning.cost.time_basis`)
    basis: TimeBasis = attrs.field(factory=lambda: TimeBasis("no time to estimate"))
    #: programs a code task runs in the sandbox (no call, but time)
    programs: int = 0
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
        return max(0.0, sum(self.phase_seconds.values()) - self.pipelined_overlap_s)

    @property
    def seconds_range(self) -> tuple[float, float]:
        """The run's time, lowest to highest, that the estimate's basis leaves open."""
        return self.seconds * self.basis.low, self.seconds * self.basis.high

    @property
    def time_basis(self) -> str:
        """What the time rests on: "from 40 sampled calls", "heuristic: no latency known"."""
        return self.basis.text

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
            "estimated_seconds_range": [round(x, 1) for x in self.seconds_range],
            "time_basis": self.time_basis,
            "pipelined_overlap_seconds": round(self.pipelined_overlap_s, 1),
            "sandbox_programs": self.programs,
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
    facts = registries.interface_facts(model.interface)
    overhead = _LOCAL_CALL_S if model.interface in LOCAL_INTERFACES else _REQUEST_OVERHEAD_S
    speed = facts.tokens_per_s if facts is not None and facts.tokens_per_s else _DEFAULT_TOKENS_PER_S
    return overhead + output_tokens / speed


class _LocalSpeeds:
    """The token speeds of the models whose interface can tell them (a local engine:
    ``seconds_per_token``, asked once per model, when a call of its is timed without a
    measured latency), and the time of one call of theirs: its reply tokens, and the prompt
    tokens its engine reads (all of them, or what its last prompt does not share:
    :mod:`coeval.planning.cost.prompt_reads`)."""

    def __init__(self, config: Config, cells: Mapping[tuple[str, str, str], int], registries: Registries) -> None:
        self.cells = cells
        self.models = {m.name: m for m in config.models}
        self.students = len(config.students)
        self.registries = registries
        self.speeds: dict[str, TokenSeconds | None] = {}

    def speed(self, name: str) -> TokenSeconds | None:
        if name not in self.speeds:
            model = self.models[name]
            facts = self.registries.interface_facts(model.interface)
            told = facts.seconds_per_token(model) if facts is not None and facts.seconds_per_token else None
            self.speeds[name] = TokenSeconds(told, told) if isinstance(told, int | float) else told
        return self.speeds[name]

    def _same_engine(self, task: str, phase: str, engine: str) -> int:
        """Models sending calls of ``task`` and ``phase`` to ``engine``."""
        return sum(1 for (t, p, name), n in self.cells.items()
                   if n and t == task and p == phase and getattr(self.speed(name), "engine", None) == engine)

    def call_seconds(self, builder: RequestBuilder, phase: str, task: TaskConfig, model: ModelConfig,
                     texts: TaskTexts, input_tokens: float, output_tokens: float) -> float | None:
        speed = self.speed(model.name)
        if speed is None:
            return None
        share = 1.0
        if speed.engine is not None:
            share = read_share(builder, phase, task, model, texts, students=self.students,
                               same_engine=self._same_engine(task.name, phase, speed.engine))
        structured = any(r.json_schema for r in builder.requests(phase, task, model, texts))
        per_reply_token = speed.structured if structured and speed.structured is not None else speed.reply
        return _LOCAL_CALL_S + speed.prompt * input_tokens * share + per_reply_token * output_tokens


def _lane_bounds(model: ModelConfig, samples: SampleResults, registries: Registries) -> tuple[int, int]:
    """The concurrency a lane of ``model`` starts at and the most its limiter grows to, as
    the scheduler takes them: from the model's interface as built for the run (the sampled
    one, else one built here, without credentials), so the interface's own reading of
    ``concurrency``, ``max_concurrency`` or a self-hosted server applies; the base
    interface's 8 and 64 when it cannot be built here."""
    iface: Any = samples.interfaces.get(model.name)
    if iface is None and model.interface in registries.interfaces:
        try:
            iface = registries.interfaces.get(model.interface)(model, None)
        except Exception:  # not buildable here (settings, an SDK): the run will say why
            iface = None
    start, top = getattr(iface, "default_concurrency", 8), getattr(iface, "max_concurrency", 64)
    start = start if isinstance(start, int) and start > 0 else 8
    top = top if isinstance(top, int) and top > 0 else 64
    return start, max(top, start)


def _slow_start(calls: float, latency_s: float, limit: float, top: float) -> tuple[float, float]:
    """Seconds ``calls`` calls of ``latency_s`` each take on a lane whose limiter is at
    ``limit`` and adds one call per answer up to ``top`` (:mod:`coeval.scheduler.adaptive`),
    and the limit it ends at: a round trip per doubling, then ``top`` calls per round trip."""
    seconds, left = 0.0, calls
    while left > 0 and latency_s > 0:
        if limit >= top:
            return seconds + latency_s * left / top, top
        batch = min(left, limit)
        seconds += latency_s  # a round trip: the calls in flight answer together
        left -= batch
        limit = min(top, limit + batch)
    return seconds, min(top, limit + left)


def estimate_cost(
    config: Config,
    *,
    samples: int | None = None,
    continue_run: bool = False,
    keys_file: str | None = None,
    only_models: Sequence[str] = (),
    registries: Registries | None = None,
    pipeline: bool = True,
) -> CostEstimate:
    """Estimate calls, tokens, dollars and time of a config (``coeval plan``).

    ``samples`` live calls per model and phase (default ``experiment.estimate_samples``;
    0 = heuristics only, no call). ``continue_run`` estimates only the work the run folder
    does not hold yet. ``registries`` are the plugins' phases and interfaces (those of the
    installed plugins when None: this is an entry point of the Python API). ``pipeline``:
    the run will pipeline phases 3-5 (``coeval run``'s default), so their times overlap.
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
    programs = program_work(config, cells)
    times = _phase_seconds(config, plan, estimates, sampled, registries, programs)
    phase_seconds = {phase: t.seconds for phase, t in times.items()}
    learned = [phase for phase in phase_seconds if phase in pace and _learn_time(phase, estimates, pace, phase_seconds)]
    overlap = 0.0
    if learned:  # the past run's phases overlapped as much as this run's will
        overlap = overlap_share(run) * sum(phase_seconds[p] for p in learned) if pipeline else 0.0
        notes.append(f"time of {', '.join(learned)}: at the pace of the past run in {run.root} (meta.json phase log)")
    elif pipeline:
        overlap = _pipelined_overlap(config, times, estimates, only_models)
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
    if programs.total:
        notes.append(f"{programs.total:,} programs run in the sandbox "
                     f"({', '.join(f'{t}: {programs.workers[t]} at once' for t in programs.programs)})")
    sources = [("pace" if c.phase in learned else c.latency_source, c.seconds) for c in estimates if not c.batch]
    sources.append(("programs", times[EVALUATION].lanes.get(SANDBOX_LANE, 0.0) if EVALUATION in times else 0.0))
    basis = time_basis(sources, sampled_calls=sampled.timed_calls, continuing=continue_run)
    return CostEstimate(
        plan=plan,
        cells=tuple(estimates),
        prices=prices,
        remaining_only=continue_run,
        samples_per_model=n_samples,
        sample_calls=sampled.calls,
        notes=tuple(dict.fromkeys(notes)),
        phase_seconds=phase_seconds,
        pipelined_overlap_s=overlap,
        basis=basis,
        programs=programs.total,
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
    local_speeds = _LocalSpeeds(config, cells, registries)
    out = []
    for (task_name, phase, model_name), calls in sorted(cells.items()):
        task, model = tasks[task_name], models[model_name]
        past = history.get((phase, model_name))
        latency = sampled.latency(phase, model_name)
        latency_source = "samples"
        # a call's latency on an engine that runs one call at a time includes its wait
        # behind the others: not the engine's speed
        if past is not None and past.timed >= _MIN_HISTORY and not registries.runs_one_at_a_time(model.interface):
            latency, latency_source = past.avg_latency, "history"
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
        if latency is None:
            local = local_speeds.call_seconds(builder, phase, task, model, texts[task_name], per_in, per_out)
            latency_source = "engine" if local is not None else "setting" if model.interface == "mock" else "heuristic"
            latency = local if local is not None else _heuristic_latency(model, per_out, registries)
        per_call_s = latency
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
                latency_source=latency_source,
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


@attrs.define
class _PhaseTime:
    """One phase's time and its parts: each lane's round trips, the calls run one at a
    time, the run's CPU, and the mean latency of one call (what the phase adds after its
    upstream's last record when phases are pipelined)."""

    lanes: dict[str, float] = attrs.field(factory=dict)
    serial: float = 0.0
    cpu: float = 0.0
    start: float = 0.0
    call_s: float = 0.0

    @property
    def busy(self) -> float:
        return max(max(self.lanes.values(), default=0.0), self.serial, self.cpu)

    @property
    def seconds(self) -> float:
        return self.busy + self.start if self.busy else 0.0


def _phase_seconds(
    config: Config, plan: Plan, cells: Sequence[CellEstimate], sampled: SampleResults, registries: Registries,
    programs: ProgramWork | None = None,
) -> dict[str, _PhaseTime]:
    """Per phase, the longest of its lanes' round trips, its one-at-a-time calls added up,
    and the run's CPU for its calls (see the module docstring), plus the phase's start. A
    lane is the interface, or for a free model (the mock, always built) its
    ``connection_key``, as the scheduler forms them (every mock model is its own lane). The
    sandbox is a lane of the evaluation phase: its ``programs``, ``workers`` at a time."""
    models = {m.name: m for m in config.models}
    factor = speed_factor()
    run_cpu_s, sdk_cpu_s = _RUN_CPU_PER_CALL_S * factor, _SDK_CPU_PER_CALL_S * factor
    server_cpu_s = _LOCAL_SERVER_CPU_PER_CALL_S * factor if load_share() > 1.0 else 0.0
    reached: dict[str, float] = {}  # lane -> its limiter's limit so far (carried across phases)
    bounds: dict[str, tuple[int, int]] = {}  # lane -> (starting concurrency, maximum)
    started_sdk = False
    out: dict[str, _PhaseTime] = {}
    for phase in (p.phase for p in plan.phases):
        lanes: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])  # lane -> [calls, call-seconds]
        serial = cpu = client_start = 0.0
        for c in cells:
            if c.phase != phase or not c.calls or c.batch:
                continue
            m = models[c.model]
            if registries.runs_one_at_a_time(m.interface):
                serial += c.seconds
                continue
            iface = sampled.interfaces.get(m.name) if m.name in sampled.free else None
            lane = iface.connection_key() if iface is not None else m.interface
            lanes[lane][0] += c.calls
            lanes[lane][1] += c.seconds
            if lane not in bounds:
                bounds[lane] = _lane_bounds(m, sampled, registries)
            through_sdk = sampled.through_sdk(m)
            cpu += c.calls * (run_cpu_s + (sdk_cpu_s if through_sdk else 0.0)
                              + (server_cpu_s if through_sdk and _on_this_machine(m) else 0.0))
            if through_sdk and not started_sdk:  # the first call through a provider SDK starts its client
                started_sdk, client_start = True, sampled.client_start_s or _CLIENT_START_S
        time = out[phase] = _PhaseTime(serial=serial, cpu=cpu, start=_PHASE_START_S + client_start)
        for lane, (calls, seconds) in lanes.items():
            first, top = bounds[lane]
            time.lanes[lane], reached[lane] = _slow_start(calls, seconds / calls, reached.get(lane, first), top)
        calls_made = sum(calls for calls, _ in lanes.values())
        time.call_s = sum(seconds for _, seconds in lanes.values()) / calls_made if calls_made else 0.0
        if phase == EVALUATION and programs is not None and programs.total:
            time.lanes[SANDBOX_LANE] = programs.seconds(PROGRAM_S * factor)
    return out


def _on_this_machine(model: ModelConfig) -> bool:
    """Whether the model's server runs on this machine (a loopback ``base_url``)."""
    urls = model.parameters.get("base_url")
    listed = urls if isinstance(urls, list | tuple) else [urls]
    hosts = [urlsplit(u).hostname for u in listed if isinstance(u, str)]
    return bool(hosts) and all(h in ("localhost", "::1") or (h or "").startswith("127.") for h in hosts)


def _pipelined_overlap(config: Config, times: Mapping[str, _PhaseTime], cells: Sequence[CellEstimate],
                       only_models: Sequence[str]) -> float:
    """Seconds that running phases 3-5 at once saves on their times added up, as ``coeval
    run`` pipelines them (:mod:`coeval.run.pipelining`): each lane's round trips, the calls
    run one at a time and the run's CPU add up over the three phases, which then take the
    longest of these, their starts, and one call of each downstream phase after its
    upstream's last record. None is saved for a shard, a batch phase or a phase in Keep or
    Model mode, which the run does not pipeline."""
    group = [p for p in PIPELINED_PHASES if p in times]
    if (len(group) < 2 or only_models or any(c.batch and c.calls for c in cells if c.phase in group)
            or any(config.experiment.phases.mode(p) not in PIPELINED_MODES for p in group)):
        return 0.0
    parts = [times[p] for p in group]
    lanes: dict[str, float] = defaultdict(float)
    for t in parts:
        for lane, seconds in t.lanes.items():
            lanes[lane] += seconds
    busy = max(max(lanes.values(), default=0.0), sum(t.serial for t in parts), sum(t.cpu for t in parts))
    together = busy + sum(t.start for t in parts if t.busy) + sum(t.call_s for t in parts[1:])
    return max(0.0, sum(t.seconds for t in parts) - together)
