"""``echo``: a model that answers every prompt with the prompt itself, with no network.

Useful as a baseline student (an answer that only repeats the question should score low)
and to try a configuration offline. Registered with ``requires_model=False``, so a model
entry needs no ``parameters.model``::

    - name: parrot
      interface: echo
      roles: [student]
"""

from __future__ import annotations

from coeval.interfaces.base import GenerateRequest, GenerateResult, Interface, Usage

__all__ = ["EchoInterface"]


class EchoInterface(Interface):
    name = "echo"

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        text = request.prompt.strip()
        # token counts estimated as the mock does: four characters a token
        tokens = max(1, len(text) // 4)
        return GenerateResult(text=text, usage=Usage(input_tokens=tokens, output_tokens=tokens), cost_usd=0.0,
                              model="echo", finish_reason="stop")
