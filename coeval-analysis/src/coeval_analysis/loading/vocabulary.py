"""Strings to shared integer codes, with the lookups done in Arrow's C++ kernels."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["Vocabulary", "encode"]


class Vocabulary:
    """The distinct strings of some columns, in order of first appearance, as an Arrow
    array (for C++ lookups) and a pandas Index (for people and DataFrames)."""

    def __init__(self, chunks: Iterable[pa.Array]) -> None:
        parts = [c for c in chunks if len(c) and not pa.types.is_null(c.type)]
        if parts:
            values = pc.unique(pa.chunked_array(parts, pa.string()))
            self.array = values.drop_null() if values.null_count else values
        else:
            self.array = pa.array([], pa.string())
        self._index: pd.Index | None = None

    @property
    def index(self) -> pd.Index:
        if self._index is None:
            self._index = pd.Index(self.array.to_numpy(zero_copy_only=False), dtype=object)
        return self._index

    def __len__(self) -> int:
        return len(self.array)


def encode(chunks: Sequence[pa.Array], vocab: Vocabulary) -> np.ndarray:
    """int32 codes of the strings in ``chunks`` in ``vocab`` (-1 for null or unknown),
    looked up in C++ (``pyarrow.compute.index_in``)."""
    parts = [c for c in chunks if len(c)]
    if not parts:
        return np.zeros(0, np.int32)
    arr = pa.chunked_array(
        [c if not pa.types.is_null(c.type) else pa.nulls(len(c), pa.string()) for c in parts], pa.string()
    )
    idx = pc.index_in(arr, value_set=vocab.array)
    return np.asarray(pc.fill_null(idx, -1).to_numpy().astype(np.int32, copy=False))
