"""The layout of coeval_analysis: a few entry points at its root, the rest in packages named
for what a reader looks for, each saying in its ``__init__`` what lives there, and no
private name shared between modules (what crosses a module boundary is public in the module
that owns it)."""

from __future__ import annotations

import ast
from pathlib import Path

import coeval_analysis

PACKAGE = Path(coeval_analysis.__file__).resolve().parent
MAX_ROOT_MODULES = 8


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["coeval_analysis", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def private_names_imported(source: str) -> list[str]:
    """``module.name`` for each private name (or private module) a module imports from
    another coeval_analysis module, at any depth, type-only imports included."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("coeval_analysis"):
            module = node.module or ""
            if any(part.startswith("_") for part in module.split(".")):
                found.append(module)
            found += [f"{module}.{a.name}" for a in node.names if a.name.startswith("_")]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("coeval_analysis")
                      and any(part.startswith("_") for part in a.name.split("."))]
    return found


def test_the_rule_sees_private_names_and_private_modules() -> None:
    source = (
        "from coeval_analysis.loading.columns import _cat, parse_score\n"
        "def f():\n"
        "    from coeval_analysis.stats._correlation import pearson\n"
        "import coeval_analysis._jsonl\n"
        "from coeval_analysis.reports.blocks import fmt as _fmt\n"
        "from numpy import _private\n"
    )
    assert private_names_imported(source) == [
        "coeval_analysis.loading.columns._cat", "coeval_analysis._jsonl", "coeval_analysis.stats._correlation"]


def test_the_root_holds_at_most_eight_modules() -> None:
    root = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, root
    assert {"__init__.py", "plugin.py", "cli.py", "analysis.py"} <= set(root)


def test_every_package_says_what_lives_there() -> None:
    packages = sorted(p.parent for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE)
    assert {p.name for p in packages} >= {"labels", "loading", "warnings", "leaderboard", "ranking", "stats"}
    for package in packages:
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8")))
        assert doc and len(doc.split()) >= 12, f"{package.name}/__init__.py says nothing of what lives there"


def test_no_module_imports_a_private_name_of_another() -> None:
    shared = {module: names for module, path in sorted(_modules().items())
              if (names := private_names_imported(path.read_text(encoding="utf-8")))}
    assert shared == {}


def test_the_library_paths_the_docs_name_still_import() -> None:
    from coeval_analysis import Analysis, AnalysisOptions, RunData, analyze, load_run
    from coeval_analysis.leaderboard import leaderboard
    from coeval_analysis.metrics import Bleu

    assert callable(analyze) and callable(load_run) and callable(leaderboard)
    assert {Analysis.__name__, AnalysisOptions.__name__, RunData.__name__, Bleu.__name__} == {
        "Analysis", "AnalysisOptions", "RunData", "Bleu"}
