"""Synthetic run folders with known truth, for tests and benchmarks of the analysis.

Students have a set quality, datapoints a difficulty, judges a set noise and leniency, and
any judge can be made to answer at random. A judge sees ``quality - difficulty + noise``
and answers Low / Medium / High by thresholds, so the true ranking of students is the
order of their quality. Records are written in the run-folder format of
docs/data-format.md (optionally the legacy format's: no ``student_model_id``, no
``status``), fast enough to write a million judge records in seconds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

__all__ = ["SyntheticSpec", "write_synthetic_run"]

_LEVELS = np.array(["Low", "Medium", "High"])


@dataclass
class SyntheticSpec:
    """What to generate. Defaults: 5 students, 4 judges plus one random judge."""

    students: Mapping[str, float] = field(
        default_factory=lambda: {"stu-a": 0.75, "stu-b": 0.65, "stu-c": 0.55, "stu-d": 0.45, "stu-e": 0.35}
    )
    #: judge -> noise standard deviation (on the 0..1 scale)
    judges: Mapping[str, float] = field(
        default_factory=lambda: {"judge-1": 0.08, "judge-2": 0.12, "judge-3": 0.16, "judge-4": 0.2}
    )
    #: judge -> leniency added before thresholds
    leniency: Mapping[str, float] = field(default_factory=dict)
    #: judges that answer uniformly at random
    random_judges: Sequence[str] = ("judge-random",)
    teachers: Sequence[str] = ("tea-x", "tea-y", "tea-z")
    #: task -> rubric factors
    tasks: Mapping[str, Sequence[str]] = field(
        default_factory=lambda: {"task-1": ("accuracy", "clarity", "depth"), "task-2": ("accuracy", "tone")}
    )
    attributes: Mapping[str, Sequence[str]] = field(
        default_factory=lambda: {"length": ("short", "long"), "level": ("basic", "expert", "mixed")}
    )
    datapoints_per_teacher: int = 20
    difficulty_sd: float = 0.15
    #: per-teacher multiplier of datapoint spread (how well its items separate students)
    teacher_spread: Mapping[str, float] = field(default_factory=dict)
    #: judge -> extra leniency on answers of the student with the judge's own name
    self_bias: Mapping[str, float] = field(default_factory=dict)
    #: judge -> score added per unit of standardised answer length (verbosity bias)
    length_bias: Mapping[str, float] = field(default_factory=dict)
    evaluation_mode: str = "single"  # or "per_factor": one record per factor
    #: add a rubric factor scored by this metric (``metric`` evaluator records, no judge)
    metric: str | None = None
    #: write benchmark gold records (``evaluator: gold``, 1.0 when the answer is right)
    gold: bool = False
    #: model -> ``models[].family`` written to config.yaml (others: inferred by the analysis)
    families: Mapping[str, str] = field(default_factory=dict)
    failure_rate: float = 0.0
    duplicate_rate: float = 0.0
    old_format: bool = False
    #: judge records carry what a real run keeps of each call: the rendered prompt
    #: (``request``), the ``raw`` reply, a ``rationale`` per factor, ``usage``,
    #: ``latency_ms`` and ``cost_usd`` (about 2 KB a record, as written by ``coeval run``)
    transcripts: bool = False
    seed: int = 0

    @property
    def all_judges(self) -> list[str]:
        return [*self.judges, *self.random_judges]

    def n_records(self) -> int:
        n_dp = len(self.tasks) * len(self.teachers) * self.datapoints_per_teacher
        return n_dp * len(self.students) * len(self.all_judges)

    @classmethod
    def for_records(cls, n_records: int, **kw: object) -> SyntheticSpec:
        """A spec of about ``n_records`` judge records (the default models and tasks)."""
        spec = cls(**kw)  # type: ignore[arg-type]
        per_dp = len(spec.students) * len(spec.all_judges) * len(spec.tasks) * len(spec.teachers)
        spec.datapoints_per_teacher = max(1, round(n_records / per_dp))
        return spec


def _dump(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False)


def write_synthetic_run(root: str | Path, spec: SyntheticSpec | None = None) -> Path:
    """Write a complete run folder (meta, config, phases 1-5) and return its path."""
    spec = spec or SyntheticSpec()
    rng = np.random.default_rng(spec.seed)
    root = Path(root)
    for sub in (
        "phase1_attributes",
        "phase2_rubric",
        "phase3_datapoints",
        "phase4_responses",
        "phase5_evaluations",
    ):
        (root / sub).mkdir(parents=True, exist_ok=True)
    _write_config(root, spec)
    students = list(spec.students)
    quality = np.array([spec.students[s] for s in students])
    attr_names = list(spec.attributes)
    for task, factors in spec.tasks.items():
        (root / "phase1_attributes" / f"{task}.target_attrs.json").write_text(
            _dump({a: list(v) for a, v in spec.attributes.items()}), encoding="utf-8"
        )
        (root / "phase1_attributes" / f"{task}.nuanced_attrs.json").write_text("{}", encoding="utf-8")
        rubric: dict[str, object] = {f: f"The answer is good on {f}." for f in factors}
        if spec.metric:
            rubric["overlap"] = {"metric": spec.metric, "description": "Overlap with the reference."}
        (root / "phase2_rubric" / f"{task}.rubric.json").write_text(_dump(rubric), encoding="utf-8")
        for teacher in spec.teachers:
            n = spec.datapoints_per_teacher
            spread = spec.teacher_spread.get(teacher, 1.0)
            difficulty = rng.normal(0.0, spec.difficulty_sd, n)
            dp_ids = [f"{task}__{teacher}__{i + 1:05d}" for i in range(n)]
            attr_values = [
                {
                    a: str(spec.attributes[a][(i + k) % len(spec.attributes[a])])
                    for k, a in enumerate(attr_names)
                }
                for i in range(n)
            ]
            with (root / "phase3_datapoints" / f"{task}.{teacher}.datapoints.jsonl").open(
                "w", encoding="utf-8"
            ) as fh:
                for dp, attrs in zip(dp_ids, attr_values, strict=True):
                    fh.write(
                        _dump(
                            {
                                "id": dp,
                                "task_id": task,
                                "teacher_model_id": teacher,
                                "sampled_target_attributes": attrs,
                                "prompt": f"Prompt {dp}",
                                "reference_response": "Reference.",
                                "generated_at": "2026-01-01T00:00:00Z",
                            }
                        )
                        + "\n"
                    )
            # latent score of (datapoint, student, factor)
            latent = (
                0.5
                + spread * (quality[None, :, None] - 0.55)
                - difficulty[:, None, None]
                + rng.normal(0.0, 0.04, (n, len(students), len(factors)))
            )
            lengths = rng.integers(20, 400, (n, len(students)))
            for si, student in enumerate(students):
                path = root / "phase4_responses" / f"{task}.{teacher}.{student}.responses.jsonl"
                with path.open("w", encoding="utf-8") as fh:
                    for i, dp in enumerate(dp_ids):
                        rec = {
                            "id": f"{dp}__{student}",
                            "datapoint_id": dp,
                            "task_id": task,
                            "teacher_model_id": teacher,
                            "student_model_id": student,
                            "input": f"Prompt {dp}",
                            "response": "w" * int(lengths[i, si]),
                            "generated_at": "2026-01-01T00:00:00Z",
                        }
                        if not spec.old_format:
                            rec["status"] = "ok"
                        fh.write(_dump(rec) + "\n")
            z_len = ((lengths - 210.0) / 110.0)[:, :, None]
            _write_judge_records(root, spec, rng, (task, teacher, factors), dp_ids, latent, z_len)
            truth = latent.mean(2)
            _write_reference_records(root, spec, rng, task, teacher, dp_ids, truth)
    return root



def _write_config(root: Path, spec: SyntheticSpec) -> None:
    """meta.json and config.yaml: every model with its roles (and family when given)."""
    roles: dict[str, set[str]] = {}
    for s in spec.students:
        roles.setdefault(s, set()).add("student")
    for j in spec.all_judges:
        roles.setdefault(j, set()).add("judge")
    for t in spec.teachers:
        roles.setdefault(t, set()).add("teacher")
    (root / "meta.json").write_text(
        _dump({"experiment_id": root.name, "status": "completed", "phases_completed": []}), encoding="utf-8"
    )
    config = {
        "experiment": {"id": root.name},
        "models": [
            {"name": m, "interface": "mock", "roles": sorted(r)}
            | ({"family": spec.families[m]} if m in spec.families else {})
            for m, r in roles.items()
        ],
        "tasks": [
            # the total the run made: a smaller one reads as a lowered sampling.total (left out)
            {"name": t, "description": t, "rubric": dict.fromkeys(fs, "criterion"),
             "sampling": {"total": spec.datapoints_per_teacher}}
            for t, fs in spec.tasks.items()
        ],
    }

    (root / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


_PROMPT = (
    "You are grading one answer to a task. Be strict and consistent. Task: {task}. "
    "A good answer is correct, clear and complete. Input given to the model: <input>{dp}: "
    + "explain the idea in the input and give one example; " * 8
    + "</input> Reference answer: <reference>"
    + "a worked reference answer that covers the main point and one example; " * 4
    + "</reference> Answer to grade: <answer>"
    + "the student's answer as it was given, a few sentences long; " * 4
    + "</answer> Score each factor as High, Medium or Low and give one sentence on why."
)


def _transcript(factors: Sequence[str], levels: Sequence[str], rid: str, latency_ms: int) -> str:
    """The fields a real judge record carries besides its scores (see ``transcripts``)."""
    reasons = {f: f"The answer's {f} is {w.lower()} compared with the reference for this item." for f, w in
               zip(factors, levels, strict=True)}
    reply = {"scores": dict(zip(factors, levels, strict=True)), "rationale": reasons}
    prompt = _PROMPT.format(task=rid.split("__")[0], dp=rid)
    return (
        f', "rationale": {_dump(reasons)}, "request": {{"prompt": {_dump(prompt)}, "max_tokens": 512}}, '
        f'"raw": {_dump(_dump(reply))}, "finish_reason": "stop", "latency_ms": {latency_ms}, '
        f'"usage": {{"input_tokens": {len(prompt) // 4}, "output_tokens": 60}}, "cost_usd": 0.000123'
    )


def _write_judge_records(
    root: Path,
    spec: SyntheticSpec,
    rng: np.random.Generator,
    where: tuple[str, str, Sequence[str]],
    dp_ids: list[str],
    latent: np.ndarray,
    z_len: np.ndarray,
) -> None:
    """Phase-5 records of every judge for one (task, teacher): levels by thresholds on
    what the judge sees; failures and duplicate lines as the spec asks."""
    task, teacher, factors = where
    students = list(spec.students)
    n = len(dp_ids)
    for judge in spec.all_judges:
        if judge in spec.random_judges:
            levels = rng.integers(0, 3, latent.shape)
        else:
            seen = (
                latent
                + spec.leniency.get(judge, 0.0)
                + rng.normal(0.0, spec.judges[judge], latent.shape)
                + spec.length_bias.get(judge, 0.0) * z_len
            )
            if judge in spec.self_bias and judge in students:
                seen[:, students.index(judge), :] += spec.self_bias[judge]
            levels = np.digitize(seen, [0.4, 0.6])
        words = _LEVELS[levels]
        failed = rng.random((n, len(students))) < spec.failure_rate
        dup = rng.random((n, len(students))) < spec.duplicate_rate
        lines = []
        for i, dp in enumerate(dp_ids):
            for si, student in enumerate(students):
                rid = f"{dp}__{student}"
                head = (
                    f'{{"id": "{rid}__{judge}", "response_id": "{rid}", "datapoint_id": "{dp}", '
                    f'"task_id": "{task}", "teacher_model_id": "{teacher}", '
                )
                if not spec.old_format:
                    head += f'"student_model_id": "{student}", "evaluator": "llm_judge", '
                head += f'"judge_model_id": "{judge}", '
                if failed[i, si]:
                    tail = '"scores": {}, "status": "failed", "error": "parse_error: no JSON object"'
                    if spec.old_format:
                        tail = '"scores": {}, "status": "failed"'
                else:
                    sc = ", ".join(
                        f'"{f}": "{w}"' for f, w in zip(factors, words[i, si], strict=True)
                    )
                    tail = f'"scores": {{{sc}}}'
                    if spec.transcripts and not spec.old_format:
                        tail += _transcript(factors, words[i, si], rid, int(rng.integers(300, 3000)))
                    if not spec.old_format:
                        tail += ', "status": "ok", "attempts": 1'
                line = head + tail + ', "evaluated_at": "2026-01-01T00:00:00Z"}\n'
                lines.append(line)
                if dup[i, si]:
                    lines.append(line)
        path = root / "phase5_evaluations" / f"{task}.{teacher}.{judge}.evaluations.jsonl"
        path.write_text("".join(lines), encoding="utf-8")


def _write_reference_records(
    root: Path,
    spec: SyntheticSpec,
    rng: np.random.Generator,
    task: str,
    teacher: str,
    dp_ids: list[str],
    truth: np.ndarray,
) -> None:
    """Metric and gold records of one (task, teacher), when the spec asks for them."""
    students = list(spec.students)
    for kind, name, make in (
        (
            "metric",
            "metric",
            (lambda v: {"overlap": round(float(np.clip(v, 0, 1)), 6)}) if spec.metric else None,
        ),
        ("gold", "gold", (lambda v: {"gold": 1.0 if v > 0.5 else 0.0}) if spec.gold else None),
    ):
        if make is None:
            continue
        lines = []
        for i, dp in enumerate(dp_ids):
            for si, student in enumerate(students):
                rid = f"{dp}__{student}"
                noisy = truth[i, si] + rng.normal(0.0, 0.05)
                extra: dict[str, object] = {
                    "id": f"{rid}__{name}",
                    "response_id": rid,
                    "datapoint_id": dp,
                    "task_id": task,
                    "teacher_model_id": teacher,
                    "student_model_id": student,
                    "judge_model_id": name,
                    "evaluator": kind,
                    "scores": make(noisy),
                    "status": "ok",
                }
                lines.append(_dump(extra) + "\n")
        path = root / "phase5_evaluations" / f"{task}.{teacher}.{name}.evaluations.jsonl"
        path.write_text("".join(lines), encoding="utf-8")
