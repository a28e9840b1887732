"""Phase 5 in rounds (``experiment.adaptive``): buy the judgments that can change the answer.

The datapoints are put in a seeded random order spread evenly over each task's teachers
(:func:`round_plan`, kept in the run folder as ``adaptive_rounds.json``). The first round is
the *calibration slice*: every student's answer to it is graded by every judge. After it and
after each later round, the evaluation controller a plugin registered
(:mod:`coeval.contract.adaptive`) looks at the judgments of the datapoints seen so far: after
the slice it stops the judges that tell answers apart too little; after every round it says
which students are still open and whether ``stop_when`` is answered. A later round buys only
the open students' judgments by the kept judges. Budget and quotas cap the rounds as they cap
any phase.

Every look's decision goes to ``meta.json`` (``adaptive``) as it is taken, so ``--continue``
of a killed run takes the recorded decisions again instead of deciding afresh, and buys only
the judgments of the current round that have no record: nothing is paid twice. Phases 3-4
stay full: every student answers every datapoint.
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
import random
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from coeval.config.model import AdaptiveConfig
from coeval.contract.adaptive import CONTROLLER, RoundDecision, RoundLook
from coeval.phases.base import PhaseContext, PhaseError, RunView
from coeval.phases.survey_memo import forget_surveys
from coeval.record_schema import DATAPOINT_ID, ID, STUDENT_MODEL_ID, TEACHER_MODEL_ID
from coeval.storage.run_folder import RunFolder, atomic_write_json

if TYPE_CHECKING:
    from coeval.evaluators.base import Scoring

    #: (evaluator index, scoring)
    Tagged = tuple[int, Scoring]

__all__ = [
    "ADAPTIVE_KEY",
    "MIN_CALIBRATION",
    "ROUNDS_FILE",
    "DesignScope",
    "adaptive_lines",
    "adaptive_settings",
    "design_scope",
    "look_sizes",
    "round_plan",
    "run_rounds",
]

#: the ``meta.json`` key of an adaptive run's decisions
ADAPTIVE_KEY = "adaptive"
#: the run folder's file of the rounds' datapoints
ROUNDS_FILE = "adaptive_rounds.json"
#: the calibration slice's floor, in datapoints
MIN_CALIBRATION = 8
#: the design's defaults, for settings recorded without one of them
_DEFAULT = AdaptiveConfig()


def adaptive_settings(view: RunView) -> dict[str, Any] | None:
    """The design of this run: the config's ``experiment.adaptive``, else the one an earlier
    process of the run recorded (a ``--continue`` keeps its run adaptive); None: full grid."""
    adaptive = getattr(view.config.experiment, "adaptive", None)
    if adaptive is not None:
        return dict(adaptive.as_dict())
    record = recorded(view.run)
    settings = record.get("settings") if record else None
    return dict(settings) if isinstance(settings, Mapping) else None


def recorded(run: RunFolder) -> dict[str, Any] | None:
    """The adaptive record of ``meta.json``; None when the run is not adaptive."""
    try:
        record = run.read_meta().get(ADAPTIVE_KEY)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def look_sizes(n: int, calibration: float, looks: int) -> list[int]:
    """Datapoints seen at each look: the calibration slice (a share of ``n``, at least
    :data:`MIN_CALIBRATION`), then equal rounds up to all ``n``."""
    if n <= 0:
        return []
    first = min(n, max(MIN_CALIBRATION, math.ceil(calibration * n)))
    if looks <= 1 or first >= n:
        return [n]
    steps = [round(first + (n - first) * k / (looks - 1)) for k in range(looks)]
    return sorted(set(steps))


def round_plan(datapoints: Iterable[tuple[str, str, str]], settings: Mapping[str, Any], seed: int) -> list[list[str]]:
    """The rounds' datapoint ids from (task, teacher, datapoint id) triples: a random order
    (seeded by ``seed``) in which each (task, teacher)'s datapoints come evenly spread."""
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for task, teacher, dp in sorted(set(datapoints)):
        groups[(task, teacher)].append(dp)
    rng = random.Random(f"coeval-adaptive-{seed}")
    key: dict[str, float] = {}
    for group in sorted(groups):
        ids = groups[group]
        places = list(range(len(ids)))
        rng.shuffle(places)
        for place, dp in zip(places, ids, strict=True):
            key.setdefault(dp, (place + rng.random()) / len(ids))
    order = sorted(key, key=lambda dp: (key[dp], dp))
    sizes = look_sizes(len(order), float(settings.get("calibration", _DEFAULT.calibration)),
                       int(settings.get("looks", _DEFAULT.looks)))
    return [order[a:b] for a, b in zip([0, *sizes[:-1]], sizes, strict=True)]


def _rounds_path(run: RunFolder) -> Path:
    return run.root / ROUNDS_FILE


def _read_rounds(run: RunFolder) -> list[list[str]] | None:
    try:
        data = json.loads(_rounds_path(run).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    rounds = data.get("rounds") if isinstance(data, dict) else None
    if not isinstance(rounds, list) or not all(isinstance(r, list) for r in rounds):
        return None
    return [[str(dp) for dp in r] for r in rounds]


@attrs.frozen
class DesignScope:
    """Which judgments a finished adaptive design asked for (the survey expects no others)."""

    round_of: Mapping[str, int]
    last_round: int  #: the round after whose look the design stopped
    stopped_judges: frozenset[str]
    open_after: tuple[frozenset[str], ...]  #: per look, the students still open

    def expects(self, datapoint: str, student: str, judge: str) -> bool:
        r = self.round_of.get(datapoint)
        if r is None:  # a datapoint the design never ordered (added since): the full grid's
            return True
        if r == 0:
            return True
        if r > self.last_round or judge in self.stopped_judges:
            return False
        return r - 1 < len(self.open_after) and student in self.open_after[r - 1]

    def wants(self, response: Mapping[str, Any], scorer: Any) -> bool:
        """Whether the design asked for ``scorer``'s record of ``response`` (model-free ones: always)."""
        if scorer.model is None:
            return True
        datapoint = str(response.get(DATAPOINT_ID))
        student = response.get(STUDENT_MODEL_ID)
        if student is None:  # a survey's brief: the id is ``{datapoint}__{student}[__sample{n}]``
            student = str(response.get(ID, ""))[len(datapoint) + 2:].split("__")[0]
        return self.expects(datapoint, str(student), scorer.model.name)

    def keep(self, pairs: list[tuple[Any, list[bytes]]], responses: Iterable[Mapping[str, Any]]
             ) -> list[tuple[Any, list[bytes]]]:
        """(scorer, response ids as bytes) pairs, each narrowed to the ids the design asked for."""
        about = {str(r["id"]).encode(): r for r in responses}
        return [(scorer, [i for i in ids if self.wants(about[i], scorer)]) for scorer, ids in pairs]


def design_scope(run: RunFolder) -> DesignScope | None:
    """The scope of the run's finished adaptive design; None while it is not finished (a
    killed run's phase 5 still expects the full grid, so ``--continue`` takes it up)."""
    record = recorded(run)
    if not record or not record.get("finished"):
        return None
    rounds = _read_rounds(run)
    looks = [look for look in record.get("looks") or [] if isinstance(look, dict)]
    if rounds is None or not looks:
        return None
    round_of = {dp: r for r, ids in enumerate(rounds) for dp in ids}
    stopped = frozenset(j["judge"] for j in record.get("screening") or [] if isinstance(j, dict) and j.get("stopped"))
    open_after = tuple(frozenset(look.get("open_students") or ()) for look in looks)
    return DesignScope(round_of, len(looks) - 1, stopped, open_after)


def _controller(ctx: PhaseContext) -> Any:
    registry = ctx.registries.evaluation_controllers
    if CONTROLLER not in registry:
        raise PhaseError("adaptive evaluation needs the evaluation controller of coeval-analysis, which is not "
                         "installed: pip install coeval-analysis (or remove experiment.adaptive)")
    return registry.get(CONTROLLER)()


def _as_entry(look: int, datapoints: int, judgments: int, decision: RoundDecision) -> dict[str, Any]:
    return {
        "look": look,
        "datapoints": datapoints,
        "judgments": judgments,
        "alpha": decision.alpha,
        "answered": decision.answered,
        "open_students": list(decision.open_students),
        "scores": {s: [round(v, 6) for v in triple] for s, triple in decision.scores.items()},
    }


class _Rounds:
    """One process's pass over the rounds of an adaptive phase 5."""

    def __init__(self, ctx: PhaseContext, settings: Mapping[str, Any], full: Sequence[Scoring],
                 indexes: Sequence[int], owed: Callable[[int], Iterable[Scoring]],
                 evaluate: Callable[[int, Sequence[Scoring]], Awaitable[None]]) -> None:
        self.ctx, self.settings, self.full = ctx, settings, full
        self.indexes, self.owed, self.evaluate = indexes, owed, evaluate
        self.seed = int(ctx.config.experiment.seed)
        self.judges = tuple(m.name for m in ctx.callable_models("judge"))
        self.students = tuple(m.name for m in ctx.config.students)

    def _record(self, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        out: dict[str, Any] = {}

        def update(meta: dict[str, Any]) -> None:
            record = meta.get(ADAPTIVE_KEY)
            if not isinstance(record, dict):
                record = meta[ADAPTIVE_KEY] = {}
            change(record)
            out.update(record)

        self.ctx.run.update_meta(update)
        return out

    def _rounds(self, all_scorings: Sequence[Scoring]) -> list[list[str]]:
        """The rounds kept in the run folder, else planned now and kept (their datapoints
        must be the ones the answers name: a changed phase 3-4 plans again)."""
        wanted = {(s.task.name, str(s.response.get(TEACHER_MODEL_ID)), str(s.response.get(DATAPOINT_ID)))
                  for s in all_scorings}
        kept = _read_rounds(self.ctx.run)
        if kept is not None and {dp for r in kept for dp in r} == {dp for _, _, dp in wanted}:
            return kept
        rounds = round_plan(wanted, self.settings, self.seed)
        atomic_write_json(_rounds_path(self.ctx.run), {"seed": self.seed, "rounds": rounds})
        self._record(lambda r: r.update({"looks": [], "screening": [], "finished": False}))
        return rounds

    async def run(self) -> None:
        ctx = self.ctx
        full = self.full
        rounds = self._rounds(full)
        planned = sum(1 for s in full if s.scorer.model is not None)
        # what is owed now (a --continue: what has no record yet)
        owed_at_start = sum(1 for _, s in self.scorings() if s.scorer.model is not None)
        record = self._record(lambda r: r.update({
            "settings": dict(self.settings), "seed": self.seed, "datapoints": sum(map(len, rounds)),
            "rounds_file": ROUNDS_FILE, "planned_calls": planned,
        }))
        looks: list[dict[str, Any]] = [dict(x) for x in record.get("looks") or [] if isinstance(x, dict)]
        screening = [dict(x) for x in record.get("screening") or [] if isinstance(x, dict)]
        stopped = {j["judge"] for j in screening if j.get("stopped")}
        open_students = set(self.students)
        result = ctx.result
        made_before = (result.written + result.failed) if result is not None else 0
        controller = None
        seen: set[str] = set()
        reason, finished = "", False
        for r, ids in enumerate(rounds):
            seen.update(ids)
            in_round = set(ids)
            if r > 0 and looks[r - 1]["answered"]:
                break
            wanted: dict[int, list[Scoring]] = defaultdict(list)
            for tag, s in self.scorings():
                if self._wanted(s, in_round, r, stopped, open_students):
                    wanted[tag].append(s)
            skipped_before = result.skipped if result is not None else 0
            for tag, subset in wanted.items():
                await self.evaluate(tag, subset)
            if result is not None and result.skipped > skipped_before:
                reason = "stopped before the question was answered (" + ", ".join(sorted(result.skip_causes)) + \
                    "); `coeval run --continue` takes the rounds up"
                break
            if r < len(looks):  # decided by an earlier process: taken again, not decided afresh
                decision = looks[r]
            else:
                controller = controller or _controller(ctx)
                look = RoundLook(
                    run_folder=ctx.run.root, look=r, fractions=_fractions(rounds),
                    calibration=frozenset(rounds[0]), seen=frozenset(seen), judges=self.judges,
                    students=self.students, settings=dict(self.settings), seed=self.seed,
                )
                made = planned - owed_at_start + self._made_since(made_before)
                decided: RoundDecision = await asyncio.to_thread(controller.look, look)
                decision = _as_entry(r, len(seen), made, decided)
                if r == 0:
                    screening = [_finite(attrs.asdict(j)) for j in decided.judges]
                    stopped = {j["judge"] for j in screening if j["stopped"]}
                self._record(functools.partial(_add_look, decision, screening, decided.question))
                looks.append(decision)
                ctx.log.info("adaptive look", look=r, datapoints=len(seen), answered=decision["answered"],
                             open_students=decision["open_students"], stopped_judges=sorted(stopped))
            open_students = set(decision["open_students"])
            if decision["answered"]:
                finished, reason = True, "answered"
                break
        else:
            finished = True
            reason = reason or "datapoints ran out before the question was answered"
        made = planned - owed_at_start + self._made_since(made_before)
        question = self._record(lambda rec: None).get("question", "")
        if finished and reason == "answered":
            reason = f"answered after {len(looks)} of {len(rounds)} looks: {question}"
        self._record(lambda rec: rec.update({
            "finished": finished, "stop_reason": reason, "made_calls": made,
            "saved_calls": max(0, planned - made), "stopped_judges": sorted(stopped),
        }))
        forget_surveys()  # a finished design expects less than the full grid a kept survey counted

    def scorings(self) -> Iterator[Tagged]:
        """What is owed now (no record yet), each with its evaluator's index."""
        for index in self.indexes:
            for scoring in self.owed(index):
                yield index, scoring

    def _made_since(self, before: int) -> int:
        result = self.ctx.result
        return ((result.written + result.failed) if result is not None else 0) - before

    def _wanted(self, s: Scoring, in_round: set[str], r: int, stopped: set[str], open_students: set[str]) -> bool:
        if str(s.response.get(DATAPOINT_ID)) not in in_round:
            return False
        if r == 0 or s.scorer.model is None:
            return True
        return s.scorer.model.name not in stopped and str(s.response.get(STUDENT_MODEL_ID)) in open_students


def _add_look(look: dict[str, Any], screening: list[dict[str, Any]], question: str, record: dict[str, Any]) -> None:
    """Record one look (replacing any of its number or later), with the screening and the question."""
    record.update({"looks": [*(record.get("looks") or [])[: look["look"]], look], "screening": screening,
                   "question": question})


def _finite(entry: dict[str, Any]) -> dict[str, Any]:
    """NaN (no evidence: screening was off) as null, which JSON readers all take."""
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in entry.items()}


def _fractions(rounds: Sequence[Sequence[str]]) -> tuple[float, ...]:
    total = sum(map(len, rounds))
    out, seen = [], 0
    for ids in rounds:
        seen += len(ids)
        out.append(seen / total)
    return tuple(out)


async def run_rounds(ctx: PhaseContext, settings: Mapping[str, Any], full: Sequence[Scoring], indexes: Sequence[int],
                     owed: Callable[[int], Iterable[Scoring]],
                     evaluate: Callable[[int, Sequence[Scoring]], Awaitable[None]]) -> None:
    """Run the scorings of the evaluators ``indexes`` (those that call models) in rounds:
    ``full`` is every scoring of the full grid (recorded or not: the rounds are drawn over it,
    the calls saved counted against it), ``owed(index)`` lists an evaluator's scorings that
    have no record yet, ``evaluate(index, subset)`` buys a subset of them."""
    await _Rounds(ctx, settings, full, indexes, owed, evaluate).run()


def adaptive_lines(record: Mapping[str, Any] | None) -> list[str]:
    """An adaptive run's decisions in a few console lines (the run's end, ``coeval status``)."""
    if not record:
        return []
    lines = []
    settings = record.get("settings") or {}
    looks = [x for x in record.get("looks") or [] if isinstance(x, dict)]
    lines.append(f"adaptive evaluation: {record.get('question') or settings.get('stop_when')}; "
                 f"{len(looks)} look(s) of {settings.get('looks', '?')}, alpha {settings.get('alpha', '?')} "
                 "spent over the looks")
    for j in record.get("screening") or []:
        if not isinstance(j, dict):
            continue
        verdict = "stopped after the calibration slice" if j.get("stopped") else "kept"
        evidence = f" (agreement {j['agreement']:.2f}, 95% bound {j['bound']:.2f})" \
            if isinstance(j.get("agreement"), int | float) and isinstance(j.get("bound"), int | float) else ""
        lines.append(f"  judge {j.get('judge')}: {verdict}{evidence}: {j.get('reason')}")
    for look in looks:
        lines.append(f"  look {look.get('look')}: {look.get('datapoints')} datapoints, "
                     f"{'answered' if look.get('answered') else 'open: ' + ', '.join(look.get('open_students') or [])}")
    if record.get("stop_reason"):
        lines.append(f"  stop: {record['stop_reason']}")
    planned, made = record.get("planned_calls"), record.get("made_calls")
    if isinstance(planned, int) and isinstance(made, int) and planned:
        saved = planned - made
        lines.append(f"  phase-5 calls: {made} made of {planned} planned, {saved} saved ({saved / planned:.0%}); "
                     "the screened-out judges' judgments are absent by design, not missing")
    return lines
