"""``echo``: a model that answers every prompt with the prompt itself, with no network.

Useful as a baseline student (an answer that only repeats the question should score low)
and to try a configuration offline. Registered with ``requires_model=False``, so a model
entry needs no ``parameters.model``; its batch runner (:mod:`coeval_example.batch`) lets a
config batch it::

    - name: parrot
      interface: echo
      roles: [student]
"""

from __future__ import annotations

from coeval import GenerateRequest, GenerateResult, Interface, Usage

__all__ = ["EchoInterface", "echo"]


def echo(prompt: str) -> GenerateResult:
    """The answer to ``prompt``: the prompt itself (its batch runner answers the same)."""
    text = prompt.strip()
    # token counts estimated as the mock does: four characters a token
    tokens = max(1, len(text) // 4)
    return GenerateResult(text=text, usage=Usage(input_tokens=tokens, output_tokens=tokens), cost_usd=0.0,
                          model="echo", finish_reason="stop")


class EchoInterface(Interface):
    name = "echo"

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        return echo(request.prompt)
