"""The monotone link that puts the measurement model's judged score on its factors' scale.

The model reports a student as the score an average judge that tells answers apart would
give. That is a latent quantity: where the judges' scores saturate it can pass 1 (or 0).
:func:`to_unit` maps it back into (0, 1): the identity between ``EDGE`` and ``1 - EDGE``,
and beyond them an exponential approach to the bound that meets the identity with the same
slope. It is strictly increasing, so no two students tie that did not, and it is applied
to the estimate and to every bootstrap resample alike: percentile intervals and rank
ranges, which depend only on the order of the resamples, are those of the latent score.
"""

from __future__ import annotations

import numpy as np

__all__ = ["EDGE", "to_unit"]

#: inside [EDGE, 1 - EDGE] the judged score is the model's score unchanged
EDGE = 0.1


def to_unit(x: np.ndarray) -> np.ndarray:
    """``x`` mapped into (0, 1) by the link above; NaN stays NaN."""
    x = np.asarray(x, np.float64)
    hi = 1.0 - EDGE
    with np.errstate(over="ignore", invalid="ignore"):
        above = 1.0 - EDGE * np.exp(-(x - hi) / EDGE)
        below = EDGE * np.exp((x - EDGE) / EDGE)
    out: np.ndarray = np.where(x > hi, above, np.where(x < EDGE, below, x))
    return out
