"""Live sample calls: measure real reply sizes, token counts and latency per model.

For every model and every phase it has calls in, ``n`` sample requests are sent, built
exactly as the phases build them. Samples chain like the pipeline: teachers' sample
datapoints are what students answer, and students' sample answers are what judges score,
so later phases are measured on realistic inputs. A model that cannot be sampled (no
credentials, distribution missing, a failing call) falls back to heuristics, with a note.

A model whose interface has ``free_samples`` (the ``mock``: no cost, no network) is sampled
even when no sample call is asked for, without its ``latency_ms`` wait and injected faults:
its reply sizes are measured rather than guessed, and its time comes from its parameters.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from coeval.config.credentials import KeyStore, redact
from coeval.config.model import Config, ModelConfig
from coeval.contract.status import missing_interface
from coeval.interfaces.base import GenerateRequest, Interface
from coeval.phase_ids import ATTRIBUTE_MAPPING, DATA_GENERATION, RESPONSE_COLLECTION, RUBRIC_MAPPING
from coeval.phases.mapping import _snake, merge_attribute_maps, merge_rubrics
from coeval.phases.responses import parse_answer
from coeval.planning.cost.measure import Measured
from coeval.planning.cost.requests import RequestBuilder, TaskTexts, expected_output_tokens
from coeval.planning.cost.tokens import estimate_tokens, filler_text
from coeval.prompts.schemas import parse_attribute_map, parse_datapoint, parse_rubric
from coeval.shipped_interfaces import LOCAL_INTERFACES

if TYPE_CHECKING:
    from coeval.plugins.manager import Registries

__all__ = ["SampleResults", "in_estimate_sample", "run_samples"]

#: Set while an estimate's sample calls run: an interface (or a test's recording one) can
#: tell a call made to measure reply sizes from one a phase makes.
_SAMPLING: contextvars.ContextVar[bool] = contextvars.ContextVar("coeval_estimate_sample", default=False)


def in_estimate_sample() -> bool:
    """Whether the current call is one of the estimate's sample calls (not the run's)."""
    return _SAMPLING.get()

#: Interfaces that need no credentials to be called.
_NO_CREDENTIALS = LOCAL_INTERFACES


@attrs.define
class SampleResults:
    measured: dict[tuple[str, str, str], Measured] = attrs.field(factory=dict)  # (phase, model, task)
    texts: dict[str, TaskTexts] = attrs.field(factory=dict)  # task -> texts seen in samples
    notes: list[str] = attrs.field(factory=list)
    interfaces: dict[str, Interface] = attrs.field(factory=dict)
    free: set[str] = attrs.field(factory=set)  # models measured with free samples (no latency)
    #: how much longer a client's first call took than its others (the SDK's start); None: not seen
    client_start_s: float | None = None

    @property
    def calls(self) -> int:
        return sum(m.calls + m.failures for m in self.measured.values())

    @property
    def timed_calls(self) -> int:
        """Sample calls whose latency the estimate uses (not a client's first, not a free one)."""
        return sum(m.timed for m in self.measured.values())

    def _total(self, model: str, phase: str | None = None) -> Measured:
        total = Measured()
        for (p, name, _), m in self.measured.items():
            if name == model and (phase is None or p == phase):
                total.merge(m)
        return total

    def ratio(self, model: str) -> float | None:
        """Reported / estimated input tokens over all of a model's samples."""
        return self._total(model).input_ratio

    def of(self, phase: str, model: str, task: str) -> Measured | None:
        m = self.measured.get((phase, model, task))
        return m if m is not None and m.calls else None

    def output_ratio(self, phase: str, model: str) -> float | None:
        """Measured / heuristic reply size of a model's samples in a phase (carries the
        measurement over to tasks that were not sampled)."""
        return self._total(model, phase).output_ratio

    def through_sdk(self, model: ModelConfig) -> bool:
        """Whether ``model``'s calls go through a provider's SDK client (not free, not local):
        its first call starts the client, and each call costs the SDK's CPU."""
        return model.name not in self.free and model.interface not in LOCAL_INTERFACES

    def latency(self, phase: str, model: str) -> float | None:
        """A model's mean sampled latency in ``phase``; where none of its calls there was
        timed (its only sample started the client), over its other phases."""
        measured = self._total(model, phase)
        if measured.calls and not measured.timed:
            return self._total(model).avg_latency
        return measured.avg_latency


def is_free(model: ModelConfig, registries: Registries) -> bool:
    """Whether calls of ``model`` cost nothing and stay on this machine (``free_samples``)."""
    if model.interface not in registries.interfaces:
        return False
    return getattr(registries.interfaces.get(model.interface), "free_samples", False) is True


#: Mock parameters a free sample leaves out: it measures reply sizes, not time or faults.
_NOT_SAMPLED = frozenset({"latency_ms", "failure_rate", "rate_limit_rate", "malformed_rate"})


def _sampled(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` without the mock's simulated latency and faults."""
    return {k: v for k, v in params.items() if k not in _NOT_SAMPLED}


def _without_wait(model: ModelConfig) -> ModelConfig:
    """``model`` without its simulated latency and faults."""
    return attrs.evolve(
        model,
        parameters=_sampled(model.parameters),
        role_parameters={role: _sampled(params) for role, params in model.role_parameters.items()},
    )


def _unsimulated(request: GenerateRequest) -> GenerateRequest:
    """``request`` without the simulated latency and faults in its parameters: a request
    carries its model's parameters for its role, which the mock reads before its own."""
    if not _NOT_SAMPLED & set(request.params):
        return request
    return attrs.evolve(request, params=_sampled(request.params))


def _build_interfaces(
    config: Config, models: list[ModelConfig], keys: KeyStore, registries: Registries, notes: list[str]
) -> dict[str, Interface]:
    out: dict[str, Interface] = {}
    for m in models:
        if is_free(m, registries):
            m = _without_wait(m)
        if m.interface not in registries.interfaces:
            notes.append(
                f"{m.name}: {missing_interface(m.interface)}; no sample calls (heuristics used)"
            )
            continue
        creds = keys.for_provider(m.interface, m.access_key)
        if not creds.present and m.interface not in _NO_CREDENTIALS:
            notes.append(f"{m.name}: no credentials for {m.interface}; no sample calls (heuristics used)")
            continue
        try:
            out[m.name] = registries.interfaces.get(m.interface)(m, creds)
        except Exception as exc:
            notes.append(
                f"{m.name}: cannot create the {m.interface} client ({redact(str(exc)) or type(exc).__name__}); "
                "heuristics used"
            )
    return out


async def _call(iface: Interface, request: GenerateRequest, timeout: float) -> tuple[Any, float]:
    _SAMPLING.set(True)  # in this call's own task context only
    start = time.perf_counter()
    result = await asyncio.wait_for(iface.generate(request), timeout)
    return result, time.perf_counter() - start


async def _gather_warm(
    jobs: Sequence[tuple[str, str, GenerateRequest]],
    interfaces: Mapping[str, Interface],
    warm: set[str],
    timeout_s: float,
    serial: Collection[str] = (),
) -> tuple[list[Any], list[bool]]:
    """Run ``jobs`` concurrently, but the first call of a model not yet ``warm`` first and
    alone with the other models' first calls: it also starts the model's client (the SDK's
    import, the connection), so its time is no measure of a call (on a loopback server 1.5 s
    against 0.2 s). The calls of models in ``serial`` (engines that run one call at a time,
    such as llama.cpp on this machine's cores) go one after another beside the others: sent
    together, each would be timed with its wait behind the others, and the run, which also
    takes them one at a time, would be estimated several times too long. Returns each job's
    outcome and whether it was such a cold call."""
    first = {name: i for i, (name, _, _) in reversed(list(enumerate(jobs))) if name not in warm}
    cold = [first.get(name) == i for i, (name, _, _) in enumerate(jobs)]
    order = [i for i in range(len(jobs)) if cold[i]], [i for i in range(len(jobs)) if not cold[i]]
    outcomes: list[Any] = [None] * len(jobs)

    async def one(i: int) -> None:
        try:
            outcomes[i] = await _call(interfaces[jobs[i][0]], jobs[i][2], timeout_s)
        except Exception as exc:
            outcomes[i] = exc

    async def in_turn(indices: list[int]) -> None:
        for i in indices:
            await one(i)

    for group in order:
        together = [one(i) for i in group if jobs[i][0] not in serial]
        await asyncio.gather(*together, in_turn([i for i in group if jobs[i][0] in serial]))
    warm.update(first)
    return outcomes, cold


async def run_samples(
    config: Config,
    cells: dict[tuple[str, str, str], int],
    builder: RequestBuilder,
    *,
    samples: int,
    free_samples: int = 0,
    keys_file: str | None = None,
    registries: Registries,
    timeout_s: float = 90.0,
) -> SampleResults:
    """Make ``samples`` calls per (model, phase with planned calls), in phase order;
    ``free_samples`` for a model whose interface has ``free_samples``."""
    results = SampleResults()
    wanted = {model for (_, _, model), n in cells.items() if n > 0}
    free = {m.name for m in config.models if m.name in wanted and is_free(m, registries)}
    count = {name: free_samples if name in free else samples for name in wanted}
    models = [m for m in config.models if m.name in wanted and count[m.name] > 0]
    if not models:
        return results
    results.free = free
    keys = KeyStore.load(keys_file)
    results.interfaces = _build_interfaces(config, models, keys, registries, results.notes)
    texts = {t.name: builder.default_texts(t) for t in config.tasks}
    tasks = {t.name: t for t in config.tasks}
    models_by_name = {m.name: m for m in config.models}
    failed_models: set[str] = set()
    warm: set[str] = set()  # models whose client has made a call
    serial = {m.name for m in models if registries.runs_one_at_a_time(m.interface)}
    first_latency: dict[str, float] = {}
    try:
        for phase in dict.fromkeys(p for (_, p, _) in cells):
            jobs: list[tuple[str, str, GenerateRequest]] = []
            for m in models:
                if m.name not in results.interfaces or m.name in failed_models:
                    continue
                task_names = [
                    t for (t, p, name), n in cells.items() if p == phase and name == m.name and n > 0
                ]
                for i in range(count[m.name] if task_names else 0):
                    task = tasks[task_names[i % len(task_names)]]
                    requests = builder.requests(phase, task, m, texts[task.name], seq=i + 1)
                    if requests:
                        request = requests[i % len(requests)]
                        jobs.append((m.name, task.name, _unsimulated(request) if m.name in free else request))
            if not jobs:
                continue
            outcomes, cold = await _gather_warm(jobs, results.interfaces, warm, timeout_s, serial)
            seen: dict[str, list[Any]] = defaultdict(list)
            for index, ((name, task_name, req), outcome) in enumerate(zip(jobs, outcomes, strict=True)):
                measured = results.measured.setdefault((phase, name, task_name), Measured())
                if isinstance(outcome, BaseException):
                    measured.failures += 1
                    if name not in failed_models:
                        failed_models.add(name)
                        kind = getattr(outcome, "kind", type(outcome).__name__)
                        results.notes.append(
                            f"{name}: sample call failed ({kind}: {redact(str(outcome))[:120]}); "
                            "heuristics used"
                        )
                    continue
                result, latency = outcome
                est_in = estimate_tokens(req.prompt)
                in_tok = result.usage.input_tokens or est_in
                out_tok = result.usage.output_tokens or estimate_tokens(result.text)
                expected = expected_output_tokens(phase, tasks[task_name], models_by_name[name])
                timed = name not in free and not cold[index]  # a client's first call also starts it
                if cold[index] and results.through_sdk(models_by_name[name]):
                    first_latency[name] = latency  # a provider SDK's start (a local model's load is not one)
                measured.add(in_tok, out_tok, est_in, latency if timed else None, expected)
                if phase in (ATTRIBUTE_MAPPING, RUBRIC_MAPPING):
                    _collect_proposal(req, result, task_name, seen)
                elif phase == DATA_GENERATION:
                    with contextlib.suppress(Exception):
                        seen[task_name].append(parse_datapoint(result.text))
                elif phase == RESPONSE_COLLECTION:
                    with contextlib.suppress(Exception):
                        seen[task_name].append(parse_answer(result))
            _absorb(phase, seen, texts)
            _anticipate(phase, seen, builder, tasks)
    finally:
        for iface in results.interfaces.values():
            with contextlib.suppress(Exception):
                await iface.aclose()
    results.texts = texts
    starts = [t - avg for name, t in first_latency.items() if (avg := results._total(name).avg_latency) is not None]
    results.client_start_s = max(0.0, max(starts)) if starts else None
    return results


def _absorb(phase: str, seen: dict[str, list[Any]], texts: dict[str, TaskTexts]) -> None:
    """Put what samples wrote in place of the stand-ins; tasks without a sample get stand-ins
    of the sampled average length."""
    if not seen:
        return
    if phase == DATA_GENERATION:
        prompts = [dp["prompt"] for items in seen.values() for dp in items]
        refs = [dp["response"] for items in seen.values() for dp in items]
        for name, t in texts.items():
            if seen.get(name):
                dp = seen[name][-1]
                t.datapoint_prompt, t.reference, t.from_samples = dp["prompt"], dp["response"], True
            elif prompts:
                t.datapoint_prompt = filler_text(sum(map(estimate_tokens, prompts)) // len(prompts))
                t.reference = filler_text(sum(map(estimate_tokens, refs)) // len(refs))
    elif phase == RESPONSE_COLLECTION:
        answers = [a for items in seen.values() for a in items]
        for name, t in texts.items():
            if seen.get(name):
                t.response = seen[name][-1]
            elif answers:
                t.response = filler_text(sum(map(estimate_tokens, answers)) // len(answers))


def _collect_proposal(request: GenerateRequest, result: Any, task: str, seen: dict[str, list[Any]]) -> None:
    """Keep a phase 1-2 sample's proposal (parsed as the phase parses it)."""
    try:
        if request.schema_name == "rubric":
            seen[task].append(("rubric", _snake(parse_rubric(result.text))))
        elif request.schema_name == "nuanced_attributes":
            seen[task].append(("nuanced", _snake(parse_attribute_map(result.text))))
        else:
            seen[task].append(("target", _snake(parse_attribute_map(result.text))))
    except Exception:
        pass


def _anticipate(
    phase: str, seen: dict[str, list[Any]], builder: RequestBuilder, tasks: dict[str, Any]
) -> None:
    """Merge phase 1-2 sample proposals per task, seeds first, as the phases do."""
    if phase not in (ATTRIBUTE_MAPPING, RUBRIC_MAPPING):
        return
    for task_name, items in seen.items():
        task = tasks[task_name]
        for kind in ("target", "nuanced", "rubric"):
            parts = [value for k, value in items if k == kind]
            if not parts:
                continue
            if kind == "rubric":
                builder.anticipate(kind, task_name, merge_rubrics(parts))
            else:
                seed = task.target_attributes_seed if kind == "target" else task.nuanced_attributes_seed
                builder.anticipate(kind, task_name, merge_attribute_maps([*([seed] if seed else []), *parts]))
