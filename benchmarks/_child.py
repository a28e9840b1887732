"""``python -m benchmarks._child MODULE:FUNCTION ARGS_JSON OUT``: run one measurement.

The function runs in this fresh process and returns a dict; the peak resident memory and
the CPU time of the whole process are added, and the dict is written to ``OUT`` as JSON.
"""

from __future__ import annotations

import importlib
import json
import resource
import sys


def main() -> None:
    target, args_json, out = sys.argv[1], sys.argv[2], sys.argv[3]
    module_name, _, function = target.partition(":")
    module = importlib.import_module(f"benchmarks.{module_name}")
    result = getattr(module, function)(**json.loads(args_json))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result.setdefault("process_peak_mb", round(usage.ru_maxrss / 1024.0, 1))  # KiB on Linux
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(result, fh)


if __name__ == "__main__":
    main()
