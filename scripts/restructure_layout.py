#!/usr/bin/env python3
"""Restructure the CoEval checkout into its concept sub-packages (a codemod).

    python scripts/restructure_layout.py REPO_ROOT [--dry-run]

Deterministic and idempotent: it moves modules with ``git mv`` (a move whose source is gone
and whose target exists counts as done) and rewrites every reference to a moved module by
module name, not by file list, in the sources, tests, benchmarks, examples, docs, scripts,
pyproject/requirements files and the noxfile. So it works on a tree holding modules and
tests it has never seen: a new module inside a moved package moves with it, and any
``coeval.old.name`` anywhere is rewritten. Loose modules left directly in ``coeval/`` that
it has no rule for are reported, never moved blindly.

Old names are never prefixes of new names, and no new name equals an old one, so running
it again on its own output changes nothing, and running it on a merge of old-layout
branches into the new layout rewrites only the old-layout references.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

#: old dotted module or package -> new dotted name. A package entry moves the whole folder.
MOVES: dict[str, str] = {
    # the plugin contract and its machinery: one package
    "coeval.hookspecs": "coeval.contract.hookspecs",
    "coeval.plugin_types": "coeval.contract.types",
    "coeval.plugin_errors": "coeval.contract.errors",
    "coeval.plugins": "coeval.plugins.manager",
    "coeval.plugin_status": "coeval.contract.status",
    "coeval.builtin_plugin": "coeval.plugins.core",  # private: only the manager loads it
    # phase logic lives in phases/
    "coeval.phase_info": "coeval.phases.info",
    "coeval.phase_modes": "coeval.phases.modes",
    "coeval.phase_order": "coeval.phases.order",
    "coeval.sampling": "coeval.phases._sampling",  # private: used inside phases only
    "coeval.judging": "coeval.phases.judging",
    "coeval.running.ordering": "coeval.phases.ordering",
    # console output in console/ (console.py becomes the package itself: same name; cli/verbosity
    # stays in cli: importing the console package loads rich, which `coeval --help` must not)
    "coeval.console_log": "coeval.console._log",  # private: used inside console only
    "coeval.logging": "coeval.console.logs",
    "coeval.progress": "coeval.console.progress",
    "coeval.progress_eta": "coeval.console.eta",
    "coeval.lane_figures": "coeval.console.lane_figures",
    # planning with its cost estimate and call figures (planning.py becomes the package)
    "coeval.cost": "coeval.planning.cost",
    "coeval.cli.call_figures": "coeval.planning.call_figures",
    # one run: the runner, its options and helpers (the package first, then what joins it)
    "coeval.running": "coeval.run",
    "coeval.runner": "coeval.run.runner",
    "coeval.run_options": "coeval.run.options",
    "coeval.probe": "coeval.run.probe",
    "coeval.drift": "coeval.run.drift",
    "coeval.limits": "coeval.run.limits",
    "coeval.selection": "coeval.run.selection",
    # scheduling with batching
    "coeval.batching": "coeval.scheduler.batching",
    # storage: records with the run folder
    "coeval.records": "coeval.storage.records",
    # key files and credentials with the config
    "coeval.credentials": "coeval.config.credentials",
    "coeval.keyfile": "coeval.config.keyfile",
    # the label rule with the answer checks, below the evaluators that use it
    "coeval.labels": "coeval.answer_checks.labels",
    # modules added beside the old layout
    "coeval.kept_artifacts": "coeval.run.kept_artifacts",
    "coeval.shrink": "coeval.run.shrink",
    "coeval.record_inputs": "coeval.storage.record_inputs",
    "coeval.secret_settings": "coeval.config.secret_settings",
    "coeval.console_text": "coeval.console.text",
    # test support out of the shipped wheels
    "coeval_providers.fake_server": "coeval_testing.fake_server",
    "coeval_analysis.synthetic": "coeval_testing.synthetic",
}

#: modules that become a package of the same dotted name (their text is the package's __init__)
BECOME_PACKAGES: tuple[str, ...] = ("coeval.console", "coeval.planning")

#: import package -> its source root, relative to the repository
SOURCE_ROOTS: dict[str, str] = {
    "coeval": "coeval-core/src",
    "coeval_providers": "coeval-providers/src",
    "coeval_hf": "coeval-hf/src",
    "coeval_analysis": "coeval-analysis/src",
    "coeval_benchmarks": "coeval-benchmarks/src",
    "coeval_testing": "coeval-testing/src",
}

#: what may stay directly in coeval/
ROOT_MODULES = {"__init__.py", "__main__.py", "py.typed"}

NEW_PACKAGE_DOCS: dict[str, str] = {
    "coeval.contract": "The plugin contract: the hooks, their typed shapes, the registries and the core plugin.",
    "coeval.console": "Console output: the output console, logs, progress, verbosity.",
    "coeval.run": "One run of the pipeline: the runner, its options, signals, probe and drift checks.",
    "coeval.scheduler.batching": "Provider batch APIs: the runner contract and the executor.",
    "coeval_testing": "Test support for CoEval: the fake provider server and the synthetic-run writer.",
}

TEXT_SUFFIXES = {".py", ".md", ".toml", ".txt", ".cfg", ".ini", ".sh", ".yaml", ".yml", ".json", ".pyi"}
TEXT_ROOTS = ("coeval-core", "coeval-providers", "coeval-hf", "coeval-analysis", "coeval-benchmarks",
              "coeval-testing", "tests", "benchmarks", "examples", "docs", "scripts", "requirements")
TEXT_FILES = ("noxfile.py", "pyproject.toml", "README.md")

TESTING_PYPROJECT = '''[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "coeval-testing"
version = "0.1.0"
description = "Test support for CoEval (not for production installs): the fake provider server and synthetic runs"
requires-python = ">=3.11"
license = { text = "Apache-2.0" }
dependencies = ["aiohttp", "attrs", "numpy", "pyyaml"]

[tool.hatch.build.targets.wheel]
packages = ["src/coeval_testing"]
'''


def file_of(module: str, root: Path) -> Path | None:
    """The file or folder of ``module`` in the tree, if it exists."""
    top = module.split(".")[0]
    base = root / SOURCE_ROOTS[top] / Path(*module.split("."))
    if base.is_dir():
        return base
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def target_path(new: str, root: Path, is_dir: bool) -> Path:
    base = root / SOURCE_ROOTS[new.split(".")[0]] / Path(*new.split("."))
    return base if is_dir else base.with_suffix(".py")


def git(root: Path, *args: str, dry: bool) -> None:
    print("git", *args)
    if not dry:
        subprocess.run(["git", "-C", str(root), *args], check=True)


def ensure_package(folder: Path, dotted: str, root: Path, dry: bool) -> None:
    """Every folder on the way to a moved module is a package with a docstring."""
    top = root / SOURCE_ROOTS[dotted.split(".")[0]]
    parts = dotted.split(".")
    for i in range(1, len(parts) + 1):
        pkg = top / Path(*parts[:i])
        init = pkg / "__init__.py"
        if not init.exists():
            name = ".".join(parts[:i])
            doc = NEW_PACKAGE_DOCS.get(name, f"The {parts[i - 1]} package.")
            print("create", init.relative_to(root))
            if not dry:
                pkg.mkdir(parents=True, exist_ok=True)
                init.write_text(f'"""{doc}"""\n', encoding="utf-8")
                subprocess.run(["git", "-C", str(root), "add", str(init)], check=True)


def make_testing_distribution(root: Path, dry: bool) -> None:
    dist = root / "coeval-testing"
    if not (dist / "pyproject.toml").exists():
        print("create coeval-testing/pyproject.toml")
        if not dry:
            dist.mkdir(exist_ok=True)
            (dist / "pyproject.toml").write_text(TESTING_PYPROJECT, encoding="utf-8")
            subprocess.run(["git", "-C", str(root), "add", str(dist / "pyproject.toml")], check=True)
    testing = root / "requirements" / "testing.txt"
    if not testing.exists():
        print("create requirements/testing.txt (test support: the test script installs it, the product does not)")
        if not dry:
            testing.write_text("# Test support, installed by scripts/test.sh only: never by a product install.\n"
                               "-e ./coeval-testing\n", encoding="utf-8")
            subprocess.run(["git", "-C", str(root), "add", str(testing)], check=True)
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    if "coeval-testing/src" not in text:
        text = text.replace('mypy_path = "coeval-core/src:', 'mypy_path = "coeval-testing/src:coeval-core/src:', 1)
        text = text.replace('    "coeval-benchmarks/src/coeval_benchmarks",\n',
                            '    "coeval-benchmarks/src/coeval_benchmarks",\n    "coeval-testing/src/coeval_testing",\n', 1)
        if not dry:
            pyproject.write_text(text, encoding="utf-8")


def move(root: Path, dry: bool) -> None:
    make_testing_distribution(root, dry)
    for module in BECOME_PACKAGES:
        src = file_of(module, root)
        if src is not None and src.is_file():
            dest = src.with_suffix("") / "__init__.py"
            if not dry:
                dest.parent.mkdir(parents=True, exist_ok=True)
            git(root, "mv", str(src.relative_to(root)), str(dest.relative_to(root)), dry=dry)
    for old, new in sorted(MOVES.items(), key=lambda kv: -kv[0].count(".")):  # inner moves first
        src = file_of(old, root)
        if src is None or (src.is_dir() and old in BECOME_PACKAGES):
            continue  # moved already (or never there)
        dest = target_path(new, root, src.is_dir())
        if src.is_dir() and dest.is_dir():
            # the target package exists (a run before, or the package is new): move file by file
            for item in sorted(src.iterdir()):
                if item.name == "__pycache__":
                    continue
                into = dest / item.name
                if into.exists():
                    print(f"conflict: {into.relative_to(root)} exists; {item.relative_to(root)} left in place")
                    continue
                git(root, "mv", str(item.relative_to(root)), str(into.relative_to(root)), dry=dry)
            continue
        if dest.exists():
            print(f"conflict: {dest.relative_to(root)} exists; {src.relative_to(root)} left in place")
            continue
        ensure_package(dest.parent, new.rpartition(".")[0], root, dry)
        git(root, "mv", str(src.relative_to(root)), str(dest.relative_to(root)), dry=dry)


# ---- references -------------------------------------------------------------------------------
_DOTTED = re.compile(r"(?<![\w.])((?:coeval|coeval_providers|coeval_analysis)(?:\.\w+)+)")
_FROM_IMPORT = re.compile(
    r"^(?P<indent>[ \t]*)from (?P<pkg>(?:coeval|coeval_providers|coeval_analysis)(?:\.\w+)*) import "
    r"(?P<names>\([^)]*\)|[^\n#]*)",
    re.M,
)


def _new_name(dotted: str) -> str:
    """``dotted`` (a module, or a name inside one) in the new layout; itself when unmoved."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        head = ".".join(parts[:i])
        if head in MOVES:
            return ".".join([MOVES[head], *parts[i:]])
    return dotted


_LOGGER_CALL = re.compile(r"(getLogger|get_logger|logger=)\(?\s*[\"']$")


def rewrite_dotted(text: str) -> str:
    """Every dotted reference to a moved module, except logger names (``getLogger("coeval.probe")``
    names a log channel that users filter on, not a module)."""

    def one(m: re.Match[str]) -> str:
        if _LOGGER_CALL.search(text[max(0, m.start() - 20):m.start()]):
            return m.group(1)
        return _new_name(m.group(1))

    return _DOTTED.sub(one, text)


def rewrite_from_imports(text: str) -> str:
    """``from coeval import plugin_status`` -> ``from coeval.contract import status as plugin_status``:
    a from-import of a moved *module*, which the dotted rewrite cannot see."""

    def one(m: re.Match[str]) -> str:
        pkg, indent = m.group("pkg"), m.group("indent")
        raw = m.group("names")
        names = [n.strip() for n in raw.strip("()").replace("\n", " ").split(",") if n.strip()]
        moved, kept = [], []
        for entry in names:
            name, _, alias = entry.partition(" as ")
            full = f"{pkg}.{name.strip()}"
            if full in MOVES:
                moved.append((MOVES[full], alias.strip() or name.strip()))
            else:
                kept.append(entry)
        if not moved:
            return m.group(0)
        lines = []
        if kept:
            lines.append(f"{indent}from {pkg} import {', '.join(kept)}")
        for new, alias in moved:
            parent, _, leaf = new.rpartition(".")
            lines.append(f"{indent}from {parent} import {leaf}" + (f" as {alias}" if alias != leaf else ""))
        return "\n".join(lines)

    return _FROM_IMPORT.sub(one, text)


def _path_moves() -> list[tuple[str, str]]:
    """Old path fragments -> new ones (``coeval/hookspecs.py``, ``coeval_providers/fake_server``),
    with the source root where the distribution changes; longest first."""
    out: list[tuple[str, str]] = []
    for old, new in MOVES.items():
        old_top, new_top = old.split(".")[0], new.split(".")[0]
        old_p, new_p = old.replace(".", "/"), new.replace(".", "/")
        if old_top != new_top:
            out.append((f"{SOURCE_ROOTS[old_top]}/{old_p}", f"{SOURCE_ROOTS[new_top]}/{new_p}"))
        out.append((old_p + ".py", new_p + ".py"))
        out.append((old_p + "/", new_p + "/"))
    return sorted(out, key=lambda kv: -len(kv[0]))


def rewrite_paths(text: str) -> str:
    for old, new in _path_moves():
        text = re.sub(rf"(?<![\w/]){re.escape(old)}", new, text)
    return text


def text_files(root: Path) -> list[Path]:
    files = [root / name for name in TEXT_FILES if (root / name).is_file()]
    for top in TEXT_ROOTS:
        base = root / top
        if base.is_dir():
            files += [p for p in base.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES
                      and ".venv" not in p.parts and "__pycache__" not in p.parts and ".egg-info" not in str(p)]
    this_script = Path(__file__).resolve()  # its table names the old modules on purpose
    return sorted(p for p in files if p.resolve() != this_script)


def rewrite(root: Path, dry: bool) -> int:
    changed = 0
    for path in text_files(root):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new = rewrite_paths(rewrite_dotted(rewrite_from_imports(text) if path.suffix == ".py" else text))
        if new != text:
            changed += 1
            print("rewrite", path.relative_to(root))
            if not dry:
                path.write_text(new, encoding="utf-8")
    return changed


def report_loose(root: Path) -> list[str]:
    """Modules left directly in coeval/ that no rule moves (another change added them)."""
    folder = root / SOURCE_ROOTS["coeval"] / "coeval"
    return sorted(p.name for p in folder.iterdir() if p.is_file() and p.name not in ROOT_MODULES
                  and p.suffix == ".py")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--dry-run", action="store_true", help="say what would change; change nothing")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    move(root, args.dry_run)
    changed = rewrite(root, args.dry_run)
    print(f"{changed} files rewritten")
    loose = report_loose(root)
    for name in loose:
        print(f"unknown loose module: coeval/{name} (no rule moves it; add one to MOVES)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
