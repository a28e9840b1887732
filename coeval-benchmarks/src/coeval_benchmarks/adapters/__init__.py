"""The benchmark adapters this distribution ships (registered through ``register_benchmarks``)."""

from __future__ import annotations

from coeval_benchmarks.adapters.arc import ARCChallenge
from coeval_benchmarks.adapters.gsm8k import GSM8K
from coeval_benchmarks.adapters.hellaswag import HellaSwag
from coeval_benchmarks.adapters.humaneval import HumanEval
from coeval_benchmarks.adapters.medqa import MedQA
from coeval_benchmarks.adapters.mmlu import MMLU
from coeval_benchmarks.adapters.race import RACE
from coeval_benchmarks.adapters.sciq import SciQ
from coeval_benchmarks.adapters.truthfulqa import TruthfulQA
from coeval_benchmarks.adapters.xsum import XSum
from coeval_benchmarks.base import BenchmarkAdapter

__all__ = ["builtin_adapters"]


def builtin_adapters() -> list[BenchmarkAdapter]:
    return [
        MMLU(),
        HumanEval(),
        TruthfulQA(),
        HellaSwag(),
        MedQA(),
        GSM8K(),
        ARCChallenge(),
        XSum(),
        RACE(),
        SciQ(),
    ]
