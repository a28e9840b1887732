"""``label``: exact-match scoring of ``label_attributes``, no judge call.

For a task with ``label_attributes: [sentiment]``, every datapoint carries its gold value
(phase 3 always draws label attributes, benchmark datapoints carry ``labels``), and the
student's answer scores 1.0 when it *is* that value and 0.0 otherwise. "Is" is decided by
:func:`coeval.answer_checks.labels.normalise_label`, the rule the analysis uses too (case, surrounding
punctuation, quotes and emphasis ignored; ``_``, ``-`` and spaces alike: ``Positive.``
matches ``positive``); an answer that says more than the label does not match. The judge then scores only the rubric factors that are not
label attributes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coeval.answer_checks.labels import normalise_label
from coeval.config.model import TaskConfig
from coeval.evaluators.base import ModelFreeEvaluator
from coeval.record_schema import LABEL, LABELS, RESPONSE, SAMPLED_TARGET_ATTRIBUTES

__all__ = ["LabelEvaluator", "gold_label", "normalize_label"]

#: Kept for code written against the earlier name; the rule lives in :mod:`coeval.answer_checks.labels`.
normalize_label = normalise_label


def gold_label(datapoint: Mapping[str, Any], attribute: str) -> str | None:
    """The datapoint's gold value for ``attribute``: its sampled target value, or a
    benchmark datapoint's ``labels[attribute]`` (or ``label`` when it has only one)."""
    sampled = datapoint.get(SAMPLED_TARGET_ATTRIBUTES)
    if isinstance(sampled, Mapping) and isinstance(sampled.get(attribute), str | int | float):
        return str(sampled[attribute])
    labels = datapoint.get(LABELS)
    if isinstance(labels, Mapping) and isinstance(labels.get(attribute), str | int | float):
        return str(labels[attribute])
    label = datapoint.get(LABEL)
    if isinstance(label, str | int | float) and not isinstance(labels, Mapping):
        return str(label)
    return None


class LabelEvaluator(ModelFreeEvaluator):
    name = "label"
    kind = "label"

    def applies(self, task: TaskConfig, rubric: Mapping[str, Any]) -> bool:
        """Whether the task names label attributes (else no datapoint has factors here)."""
        return bool(task.label_attributes)

    def factors(self, task: TaskConfig, rubric: Mapping[str, Any], datapoint: Mapping[str, Any]) -> list[str]:
        return [a for a in task.label_attributes if gold_label(datapoint, a) is not None]

    def score(
        self,
        task: TaskConfig,
        rubric: Mapping[str, Any],
        datapoint: Mapping[str, Any],
        responses: list[Mapping[str, Any]],
    ) -> list[dict[str, float]]:
        golds = {a: normalise_label(g) for a in self.factors(task, rubric, datapoint) if (g := gold_label(datapoint, a))}
        out = []
        for resp in responses:
            answer = normalise_label(str(resp.get(RESPONSE) or ""))
            out.append({a: 1.0 if answer == gold and gold else 0.0 for a, gold in golds.items()})
        return out
