"""Label exact-match: read labels out of answers, score them, and per-label precision/recall/F1.

Three modes, for three kinds of label task:

* ``multiclass``: the answer *is* one label ("positive"); it matches when, normalised
  (case, surrounding whitespace, quotes, markdown emphasis and punctuation ignored; ``_``,
  ``-`` and spaces alike), it equals the gold label. This is the rule of the core's
  ``label`` evaluator, so precision and recall computed here agree with its scores.
* ``multilabel``: the answer lists labels ("sports, politics"); it matches when the set of
  labels equals the gold set. Per-label counts credit each label found.
* ``extraction``: the answer is free text that names a label somewhere ("... so the
  sentiment is positive."). An explicit ``answer:`` / ``label:`` line wins; otherwise the
  last allowed label mentioned as a whole word is the prediction (a model's final verdict
  comes last), or every one mentioned for multi-label gold.

Nothing is guessed: an answer naming no allowed label predicts nothing, which is wrong for
every gold label (a false negative), never a match.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
from coeval.answer_checks.labels import normalise_label

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "LabelReport",
    "LabelScorer",
    "Mode",
    "extract_labels",
    "match_score",
    "normalise_label",
    "precision_recall_f1",
    "split_labels",
]

Mode = Literal["multiclass", "multilabel", "extraction"]
MODES: tuple[str, ...] = ("multiclass", "multilabel", "extraction")

_SPLIT = re.compile(r"\s*(?:[,;|\n]|\band\b|&)\s*", re.IGNORECASE)
_EXPLICIT = re.compile(
    r"(?:^|\n)\s*(?:final\s+)?(?:answer|label|labels|category|class)\s*[:=]\s*(.+)", re.IGNORECASE
)


def split_labels(text: str) -> list[str]:
    """The labels of a list answer ("a, b and c" -> [a, b, c]), normalised, in order."""
    parts = (normalise_label(p) for p in _SPLIT.split(str(text)))
    return list(dict.fromkeys(p for p in parts if p))


def extract_labels(answer: str, allowed: Sequence[str] | None = None, *, multi: bool = False) -> list[str]:
    """Labels a free-form ``answer`` names, normalised (see the module docstring).

    ``allowed``: the label set of the task (None accepts any text as a label, which only
    the exact and list forms can use). ``multi``: the gold is a set of labels.
    """
    text = str(answer or "")
    allowed_norm = {normalise_label(a): normalise_label(a) for a in allowed or ()}
    explicit = _EXPLICIT.findall(text)
    candidates = [explicit[-1]] if explicit else []
    candidates.append(text)
    for cand in candidates:
        whole = normalise_label(cand)
        if whole and (not allowed_norm or whole in allowed_norm):
            return [whole]
        parts = split_labels(cand)
        if multi and parts and (not allowed_norm or all(p in allowed_norm for p in parts)):
            return parts
    if not allowed_norm:
        return []
    found: list[tuple[int, str]] = []
    folded = text.casefold()
    for label in allowed_norm:
        for m in re.finditer(r"(?<!\w)" + re.escape(label) + r"(?!\w)", folded):
            found.append((m.start(), label))
    if not found:
        return []
    found.sort()
    if multi:
        return list(dict.fromkeys(label for _, label in found))
    return [found[-1][1]]


def match_score(gold: Iterable[str], predicted: Iterable[str]) -> float:
    """1.0 when the normalised label sets are equal, else 0.0 (empty gold never matches)."""
    g = {normalise_label(x) for x in gold}
    p = {normalise_label(x) for x in predicted}
    return float(bool(g) and g == p)


@dataclass
class LabelScorer:
    """Scores answers against gold labels in one mode; also usable as a metric
    (``score(candidates, references)``: references hold one label, or a list for
    multi-label spelled "a, b")."""

    mode: Mode = "multiclass"
    allowed: Sequence[str] | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"label mode must be one of {', '.join(MODES)}, not {self.mode!r}")

    def predict(self, answer: str, *, multi: bool = False) -> list[str]:
        if self.mode == "multiclass":
            label = normalise_label(answer)
            return [label] if label else []
        if self.mode == "multilabel":
            return split_labels(answer)
        return extract_labels(answer, self.allowed, multi=multi)

    def gold(self, reference: str | Sequence[str]) -> list[str]:
        if isinstance(reference, str):
            return split_labels(reference) if self.mode == "multilabel" else [normalise_label(reference)]
        return [normalise_label(r) for r in reference]

    def score(self, candidates: list[str], references: list[str | Sequence[str]]) -> list[float]:
        if len(candidates) != len(references):
            raise ValueError(f"{len(candidates)} candidates but {len(references)} references")
        out = []
        for cand, ref in zip(candidates, references, strict=True):
            gold = self.gold(ref)
            out.append(match_score(gold, self.predict(cand, multi=len(gold) > 1)))
        return out


@dataclass
class LabelReport:
    """Per-label counts and scores, plus micro/macro averages and exact-match accuracy."""

    per_label: pd.DataFrame  #: label, support, tp, fp, fn, precision, recall, f1
    micro: dict[str, float]
    macro: dict[str, float]
    accuracy: float
    n_items: int

    def as_dict(self) -> dict[str, object]:
        return {
            "n_items": self.n_items,
            "accuracy": self.accuracy,
            "micro": self.micro,
            "macro": self.macro,
            "per_label": self.per_label.to_dict(orient="records"),
        }


def _prf(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(tp + fp > 0, tp / np.maximum(tp + fp, 1), 0.0)
        r = np.where(tp + fn > 0, tp / np.maximum(tp + fn, 1), 0.0)
        f = np.where(p + r > 0, 2 * p * r / np.where(p + r > 0, p + r, 1), 0.0)
    return p, r, f


def precision_recall_f1(
    gold: Sequence[Iterable[str]], predicted: Sequence[Iterable[str]], labels: Sequence[str] | None = None
) -> LabelReport:
    """Per-label precision, recall and F1 of predicted label sets against gold sets.

    Works for multiclass (one label per item) and multi-label alike. A label never
    predicted has precision 0; a label never in gold has recall 0 (sklearn's
    ``zero_division=0``). ``labels`` fixes the label list (default: every label seen).
    """
    import pandas as pd

    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold items but {len(predicted)} predictions")
    g_items = [sorted({normalise_label(x) for x in g}) for g in gold]
    p_items = [sorted({normalise_label(x) for x in p}) for p in predicted]
    names = (
        [normalise_label(x) for x in labels]
        if labels is not None
        else sorted({x for s in g_items for x in s} | {x for s in p_items for x in s})
    )
    index = {name: i for i, name in enumerate(names)}
    n_lab = len(names)

    def keys(items: list[list[str]]) -> np.ndarray:
        flat = [(i, index[x]) for i, s in enumerate(items) for x in s if x in index]
        if not flat:
            return np.zeros(0, np.int64)
        arr = np.asarray(flat, np.int64)
        return arr[:, 0] * max(n_lab, 1) + arr[:, 1]

    gk, pk = keys(g_items), keys(p_items)
    hit = np.isin(pk, gk)
    tp = np.bincount(pk[hit] % max(n_lab, 1), minlength=n_lab).astype(float)
    fp = np.bincount(pk[~hit] % max(n_lab, 1), minlength=n_lab).astype(float)
    support = np.bincount(gk % max(n_lab, 1), minlength=n_lab).astype(float)
    fn = support - tp
    p, r, f = _prf(tp, fp, fn)
    per_label = pd.DataFrame(
        {
            "label": names,
            "support": support.astype(int),
            "tp": tp.astype(int),
            "fp": fp.astype(int),
            "fn": fn.astype(int),
            "precision": p,
            "recall": r,
            "f1": f,
        }
    )
    mp, mr, mf = _prf(np.array([tp.sum()]), np.array([fp.sum()]), np.array([fn.sum()]))
    macro = {  # over every label listed, as sklearn's average="macro"
        "precision": float(p.mean()) if n_lab else 0.0,
        "recall": float(r.mean()) if n_lab else 0.0,
        "f1": float(f.mean()) if n_lab else 0.0,
    }
    acc = (
        float(np.mean([bool(g) and g == q for g, q in zip(g_items, p_items, strict=True)]))
        if g_items
        else 0.0
    )
    return LabelReport(
        per_label=per_label,
        micro={"precision": float(mp[0]), "recall": float(mr[0]), "f1": float(mf[0])},
        macro=macro,
        accuracy=acc,
        n_items=len(g_items),
    )
