"""The Python examples of docs/plugins.md: each compiles, and the two complete ones (the
``acme`` interface and the ``length_ratio`` metric) register and behave as the text says."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from coeval.config.model import ModelConfig
from coeval.interfaces import FatalModelError, RateLimitError, TransientModelError

PLUGINS_DOC = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PLUGINS_DOC.read_text(encoding="utf-8"), re.S)


def _run(block: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(compile(block, str(PLUGINS_DOC), "exec"), namespace)
    return namespace


class _Status(Exception):
    def __init__(self, status: int, retry_after: float | None = None) -> None:
        super().__init__(f"status {status}")
        self.status = status
        self.retry_after = retry_after


def test_every_python_example_compiles() -> None:
    blocks = _blocks()
    assert len(blocks) == 4  # acme interface, typed metric hook, the example's plugin.py, evaluate
    for block in blocks:
        compile(block, str(PLUGINS_DOC), "exec")


def test_the_acme_interface_registers_and_maps_errors_as_documented() -> None:
    ns = _run(_blocks()[0])
    registered: list[tuple[str, Any]] = []
    ns["register_interfaces"](lambda name, factory, **_: registered.append((name, factory)))
    assert registered == [("acme", ns["AcmeInterface"])]
    iface = ns["AcmeInterface"](ModelConfig(name="a", interface="acme", roles=("student",),
                                            parameters={"model": "acme-1"}))
    limited = iface.classify_error(_Status(429, retry_after=3.0))
    assert isinstance(limited, RateLimitError) and limited.retry_after == 3.0
    assert isinstance(iface.classify_error(_Status(401)), FatalModelError)
    assert isinstance(iface.classify_error(_Status(503)), TransientModelError)


def test_the_typed_metric_example_registers_a_working_metric() -> None:
    ns = _run(_blocks()[1])
    registered: dict[str, Any] = {}
    ns["register_metrics"](lambda name, factory: registered.setdefault(name, factory))
    metric = registered["length_ratio"]()
    assert metric.score(["abcd", "ab", "abc"], ["ab", "abcd", "abc"]) == [0.5, 0.5, 1.0]
