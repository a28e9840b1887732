"""Developer sessions. `nox -s tests` is what CI runs (through scripts/test.sh).

Sessions reuse the project's .venv when it exists (`nox --no-venv` is implied by
`python=False`), because the full dependency set is large and slow to install twice.
"""

from __future__ import annotations

from pathlib import Path

import nox

nox.options.sessions = ["tests"]
nox.options.default_venv_backend = "none"

PACKAGES = ["coeval-core", "coeval-providers", "coeval-hf", "coeval-analysis", "coeval-benchmarks"]
VENV_PYTHON = Path(".venv/bin/python")


def _python(session: nox.Session) -> str:
    """The project's interpreter: .venv (made by scripts/test.sh) or whatever `python` is."""
    if not VENV_PYTHON.exists():
        session.log("no .venv yet: run `bash scripts/test.sh` once to install everything")
        return "python"
    return str(VENV_PYTHON)


@nox.session(python=False)
def tests(session: nox.Session) -> None:
    """The whole test suite (installs everything on first run)."""
    session.run("bash", "scripts/test.sh", *session.posargs, external=True)


@nox.session(python=False)
def fast(session: nox.Session) -> None:
    """The fast tier: every test not marked slow, in minutes (CI runs them all: `nox -s tests`).
    No install: it needs the .venv that `bash scripts/test.sh` made."""
    session.run(_python(session), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow", *session.posargs,
                external=True)


#: Pinned like mypy (requirements/dev.txt has the same pin).
RUFF = "ruff==0.17.6"


@nox.session(python=False)
def lint(session: nox.Session) -> None:
    """ruff over all distributions and tests."""
    py = _python(session)
    session.run(py, "-m", "pip", "install", "-q", RUFF, external=True)
    session.run(py, "-m", "ruff", "check", *[f"{p}/src" for p in [*PACKAGES, "coeval-testing"]], "examples/plugins",
                "tests", "benchmarks", external=True)


#: Pinned: a newer mypy can add errors (or crash) on unchanged code; bump on purpose.
MYPY = "mypy==2.4.1"


@nox.session(python=False)
def typecheck(session: nox.Session) -> None:
    """mypy --strict over all five distributions (files and options: pyproject's [tool.mypy])."""
    py = _python(session)
    session.run(py, "-m", "pip", "install", "-q", MYPY, "types-PyYAML", external=True)
    session.run(py, "-m", "mypy", "--strict", external=True)
    # the example plugin as its author checks it: against the types the core ships (py.typed)
    session.chdir("examples/plugins/coeval-example")
    session.run(py, "-m", "mypy", "--strict", "src/coeval_example", external=True)


@nox.session(python=False)
def bench(session: nox.Session) -> None:
    """Speed and memory benchmarks: prints figures beside targets, writes bench-results.json."""
    session.run(_python(session), "-m", "benchmarks.run", *session.posargs, external=True)


@nox.session(python=False)
def bench_gpu(session: nox.Session) -> None:
    """Batched vs one-at-a-time generation with transformers (GPU when present)."""
    session.run(_python(session), "-m", "benchmarks.gpu_generation", *session.posargs, external=True)


@nox.session(python=False)
def chaos(session: nox.Session) -> None:
    """Kill `coeval run`, `ingest`, `repair` and `analyze` at random moments: --continue (or the
    same command again) finishes with nothing lost or duplicated, no leftover, and meta.json's
    calls equal to those the fake server saw; a run with a quota and a budget, killed and
    continued many times: the server's calls equal the call ledger's per model, the quota
    holds on the server, the budget is overrun by at most one call's cost."""
    session.run(_python(session), "-m", "pytest", "-q", "-m", "slow", "tests/core/test_chaos.py",
                "tests/e2e/test_chaos_commands.py", "tests/e2e/test_chaos_spend.py", *session.posargs,
                external=True, env={"COEVAL_CHAOS": "1"})


@nox.session(python=False)
def mutants(session: nox.Session) -> None:
    """Apply deliberate faults to copies of the provider adapters; each must fail a provider test."""
    session.run(_python(session), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/providers/test_mutations.py",
                *session.posargs, external=True)
