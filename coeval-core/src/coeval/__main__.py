"""``python -m coeval``: the same command line as ``coeval``, for environments without the script."""

from __future__ import annotations

import sys

from coeval.cli.main import main

if __name__ == "__main__":
    main(sys.argv[1:])
