"""The ``mock`` interface (first version; see the scheduler/pipeline work for the full one)."""

from __future__ import annotations

from coeval.interfaces.base import GenerateRequest, GenerateResult, Interface, Usage


class MockInterface(Interface):
    name = "mock"

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        text = "mock reply"
        return GenerateResult(text=text, usage=Usage(len(request.prompt) // 4, 2))
