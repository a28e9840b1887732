"""The one error of reading a model's reply: it came back, but it cannot be used.

It sits with the prompts and the schemas of the replies they ask for, below everything that
parses a reply (the judge, the item checks, the phases) and the scheduler that retries it.
"""

from __future__ import annotations

__all__ = ["OutputParseError"]


class OutputParseError(ValueError):
    """The model answered but the reply cannot be used (unparseable JSON, missing factor).

    Raised by ``WorkItem.parse``. Retried up to ``experiment.generation_retries`` times, then
    the item fails with kind ``unparseable``; never turned into a guessed value.
    """
