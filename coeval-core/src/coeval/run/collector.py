"""The garbage collector's young-generation threshold, raised for the length of a run.

A run keeps hundreds of calls in flight. With CPython's default threshold (a young
collection every 700 new container objects) each call's objects (the SDK's request, its
headers and reply, our prompt and record) outlive several young collections while the call
waits on the network, are promoted to the oldest generation, and die there; that makes full
collections frequent, each walking the whole heap. Measured through the ``openai`` SDK at 512
in flight (``python -m benchmarks.ceiling --interface sdk``): 3,900 young and 32 full
collections for 20,000 calls, about a quarter of the client's CPU. At
:data:`YOUNG_THRESHOLD` the same run makes 20 young collections and no full one; what a
cycle holds is freed a little later, which the peak memory does not show.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = ["YOUNG_THRESHOLD", "run_collector"]

#: new container objects between young collections during a run (CPython's default: 700)
YOUNG_THRESHOLD = 50_000

_runs = 0  #: runs under way in this process
_count_lock = threading.Lock()  #: runs of several threads start and end at once (shards)
_before: tuple[int, ...] = ()  #: the process's own thresholds, put back when the last run ends


@contextlib.contextmanager
def run_collector() -> Iterator[None]:
    """Raise the young generation's threshold to :data:`YOUNG_THRESHOLD` (never lower it)
    while any run of this process is under way, and put the process's own setting back when
    the last one ends, so that a program embedding runs (several at once, too) keeps its own."""
    global _runs, _before
    with _count_lock:
        if _runs == 0:
            _before = gc.get_threshold()
            gc.set_threshold(max(_before[0], YOUNG_THRESHOLD), *_before[1:])
        _runs += 1
    try:
        yield
    finally:
        with _count_lock:
            _runs -= 1
            if _runs == 0:
                gc.set_threshold(*_before)
