"""One rule maps every provider's HTTP failures to the scheduler's error kinds."""

from __future__ import annotations

import pytest
from coeval.interfaces.base import FatalModelError, OverloadedError, RateLimitError, TransientModelError
from coeval_providers._errors import from_status


@pytest.mark.parametrize(("status", "kind"), [
    (429, RateLimitError), (503, OverloadedError), (529, OverloadedError), (500, TransientModelError),
    (502, TransientModelError), (408, TransientModelError), (401, FatalModelError), (400, FatalModelError),
])
def test_each_status_gets_its_kind(status: int, kind: type) -> None:
    error = from_status("openai", status, {"error": {"message": "no"}}, {"retry-after": "2"})
    assert type(error) is kind
    if error.retryable:
        assert error.retry_after == 2.0


def test_an_overloaded_server_is_retried_like_any_transient_failure() -> None:
    error = from_status("anthropic", 529, {"type": "error", "error": {"type": "overloaded_error"}})
    assert isinstance(error, TransientModelError) and error.retryable
    assert str(error).startswith("anthropic HTTP 529 server overloaded")
