"""Read YAML while remembering where every value came from.

Validation messages point at lines, so the loader keeps, for every YAML path
(``("models", 1, "roles", 0)``), the line it was written on. It also catches what PyYAML
lets through silently: a key written twice in one mapping keeps only the last value.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import yaml

__all__ = ["LineMap", "UnreadableYaml", "YamlProblem", "load_yaml_guarded", "read_yaml"]

Path = tuple[str | int, ...]


@attrs.frozen
class YamlProblem:
    """The text is not a usable YAML document (syntax error, duplicate key...)."""

    message: str
    fix: str
    line: int | None
    path: Path = ()


@attrs.define
class LineMap:
    """YAML path -> 1-based line. Paths that do not exist map to their nearest ancestor."""

    lines: dict[Path, int] = attrs.field(factory=dict)

    def line(self, path: Sequence[str | int]) -> int | None:
        p = tuple(path)
        while True:
            if p in self.lines:
                return self.lines[p]
            if not p:
                return None
            p = p[:-1]


class _TrackingLoader(yaml.SafeLoader):
    """SafeLoader that records the line of each mapping key and sequence item."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.key_lines: dict[int, dict[Any, int]] = {}
        self.item_lines: dict[int, list[int]] = {}
        self.duplicates: list[tuple[int, int, str]] = []  # (id of mapping, line, key)
        self._alive: list[Any] = []  # keep constructed objects alive so their ids stay unique

    def construct_tracked_map(self, node: yaml.MappingNode) -> Iterator[dict[Any, Any]]:
        data: dict[Any, Any] = {}
        yield data
        seen: dict[str, int] = {}
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                line = key_node.start_mark.line + 1
                if key_node.value in seen:
                    self.duplicates.append((id(data), line, key_node.value))
                seen[key_node.value] = line
        data.update(self.construct_mapping(node))
        lines: dict[Any, int] = {}
        for key_node, _ in node.value:
            try:
                key = self.construct_object(key_node)
                lines[key] = key_node.start_mark.line + 1
            except (TypeError, yaml.YAMLError):  # unhashable keys are reported by validation
                continue
        self.key_lines[id(data)] = lines
        self._alive.append(data)

    def construct_tracked_seq(self, node: yaml.SequenceNode) -> Iterator[list[Any]]:
        data: list[Any] = []
        yield data
        data.extend(self.construct_sequence(node))
        self.item_lines[id(data)] = [n.start_mark.line + 1 for n in node.value]
        self._alive.append(data)


_TrackingLoader.add_constructor("tag:yaml.org,2002:map", _TrackingLoader.construct_tracked_map)
_TrackingLoader.add_constructor("tag:yaml.org,2002:seq", _TrackingLoader.construct_tracked_seq)


#: A config is a few levels deep and holds a few thousand values. Far beyond that is a
#: mistake or a "billion laughs" of nested aliases (a few lines that expand to millions of
#: values): refused before anything walks the data, which would otherwise take minutes.
MAX_DEPTH = 100
MAX_VALUES = 100_000


class _TooDeep(Exception):
    pass


def _expanded_size(obj: Any, depth: int, memo: dict[int, int]) -> int:
    """Values in ``obj`` counted as if every alias were written out (stops past MAX_VALUES)."""
    if not isinstance(obj, dict | list):
        return 1
    if depth > MAX_DEPTH:
        raise _TooDeep
    key = id(obj)
    if key in memo:
        return memo[key]
    memo[key] = 1  # a recursive alias counts once
    total = 1
    for child in obj.values() if isinstance(obj, dict) else obj:
        total += _expanded_size(child, depth + 1, memo)
        if total > MAX_VALUES:
            break
    memo[key] = total
    return total


def _too_deep() -> YamlProblem:
    return YamlProblem(
        f"the document is nested more than {MAX_DEPTH} levels deep",
        "a config is a few levels deep; check for unbalanced brackets",
        None,
    )


def _shape_problem(data: Any) -> YamlProblem | None:
    try:
        size = _expanded_size(data, 0, {})
    except _TooDeep:
        return _too_deep()
    if size > MAX_VALUES:
        return YamlProblem(
            f"the document expands to more than {MAX_VALUES:,} values (through &anchors and *aliases)",
            "write the config out plainly; no experiment needs that many values",
            None,
        )
    return None


def _not_yaml(exc: yaml.YAMLError) -> YamlProblem:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = mark.line + 1 if mark is not None else None
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return YamlProblem(
        f"not valid YAML: {problem}",
        "check indentation, colons and quotes on that line (a value containing ': ' or '#' needs quotes)",
        line,
    )


def _hostile_shape(text: str) -> YamlProblem | None:
    """A document too deep or too big, found first by libyaml's parser (milliseconds where
    the line-tracking pure-Python parser takes seconds); None when it is not, or when only
    the full parse below can say what is wrong (its messages name the line)."""
    if _GuardedLoader is yaml.SafeLoader:
        return None
    try:
        loader = _GuardedLoader(text)
        try:
            data = loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        return _too_deep() if "nesting depth" in str(exc) else None
    except RecursionError:
        return _too_deep()
    except (ValueError, OverflowError):
        return None
    return _shape_problem(data)


def read_yaml(text: str) -> tuple[Any, LineMap, list[YamlProblem]]:
    """Parse one YAML document. Returns the data, its line map and any problems found.

    A syntax error returns ``(None, LineMap(), [problem])``.
    """
    hostile = _hostile_shape(text)
    if hostile is not None:
        return None, LineMap(), [hostile]
    try:
        loader = _TrackingLoader(text)  # the reader refuses some characters at once
    except yaml.YAMLError as exc:
        return None, LineMap(), [_not_yaml(exc)]
    try:
        data = loader.get_single_data()
    except yaml.YAMLError as exc:
        return None, LineMap(), [_not_yaml(exc)]
    except (ValueError, OverflowError) as exc:  # a scalar PyYAML cannot build: 2001-02-30, a huge integer
        return None, LineMap(), [YamlProblem(f"not valid YAML: {exc}", "quote the value to keep it as text", None)]
    except RecursionError:
        return None, LineMap(), [_too_deep()]
    finally:
        loader.dispose()
    shape = _shape_problem(data)
    if shape is not None:
        return None, LineMap(), [shape]
    lines = LineMap()
    paths: dict[int, Path] = {}
    _collect_lines(data, (), loader, lines, set(), paths)
    problems = [
        YamlProblem(
            f"key {key!r} is written twice in the same mapping; YAML keeps only the last one",
            f"remove or merge the repeated {key!r} entries",
            line,
            (*paths.get(owner, ()), key),
        )
        for owner, line, key in loader.duplicates
    ]
    return data, lines, problems


def _collect_lines(
    obj: Any, path: Path, loader: _TrackingLoader, out: LineMap, active: set[int], paths: dict[int, Path]
) -> None:
    if id(obj) in active:  # a recursive alias
        return
    paths.setdefault(id(obj), path)
    if isinstance(obj, dict):
        active.add(id(obj))
        key_lines = loader.key_lines.get(id(obj), {})
        for key, value in obj.items():
            if not isinstance(key, str | int):
                key = str(key)
            child = (*path, key)
            if key in key_lines:
                out.lines[child] = key_lines[key]
            _collect_lines(value, child, loader, out, active, paths)
        active.discard(id(obj))
    elif isinstance(obj, list):
        active.add(id(obj))
        item_lines = loader.item_lines.get(id(obj), [])
        for i, value in enumerate(obj):
            child = (*path, i)
            if i < len(item_lines):
                out.lines[child] = item_lines[i]
            _collect_lines(value, child, loader, out, active, paths)
        active.discard(id(obj))


class UnreadableYaml(yaml.YAMLError):
    """A YAML file the tool will not read: a syntax error, or a shape no real file has
    (nested past MAX_DEPTH, or aliases expanding past MAX_VALUES). A ``yaml.YAMLError``,
    so callers that handled PyYAML's errors handle it too."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


#: libyaml's parser when PyYAML was built with it: a hundred times faster on hostile input
#: (deep or huge documents take seconds in the pure-Python one) and as safe
_GuardedLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml_guarded(text: str, source: str) -> Any:
    """Every YAML the tool reads (run-folder snapshots, key files, pricing tables...), read
    with the same guards as ``--config``: safe tags only, no alias bomb, no deep nesting.
    Raises :class:`UnreadableYaml` naming ``source``; a key written twice keeps the last
    value, as PyYAML does (only ``--config`` reports it, with lines)."""
    problem = None
    try:
        loader = _GuardedLoader(text)
        try:
            data = loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        problem = _not_yaml(exc)
    except (ValueError, OverflowError) as exc:  # 2001-02-30, a huge integer, text that is not UTF-8
        problem = YamlProblem(f"not valid YAML: {exc}", "quote the value to keep it as text", None)
    except RecursionError:
        problem = _too_deep()
    else:
        problem = _shape_problem(data)
    if problem is not None:
        where = f"{source} line {problem.line}" if problem.line else source
        raise UnreadableYaml(f"{where}: {problem.message}", problem.line)
    return data

