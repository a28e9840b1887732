"""Per-call measurements: what sample calls or a run's history say one call costs."""

from __future__ import annotations

import attrs

__all__ = ["Measured"]


@attrs.define
class Measured:
    """Sums over calls of one (phase, model); averages on demand."""

    calls: int = 0
    input_tokens: float = 0.0
    output_tokens: float = 0.0
    estimated_input: float = 0.0  # our own estimate of the same prompts (for calibration)
    expected_output: float = 0.0  # the heuristic reply size of the same calls (for calibration)
    latency_s: float = 0.0
    timed: int = 0  # calls with a latency
    failures: int = 0

    def add(
        self,
        input_tokens: float,
        output_tokens: float,
        estimated_input: float = 0.0,
        latency_s: float | None = None,
        expected_output: float = 0.0,
    ) -> None:
        self.calls += 1
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.estimated_input += estimated_input
        self.expected_output += expected_output
        if latency_s is not None:
            self.latency_s += latency_s
            self.timed += 1

    def merge(self, other: Measured) -> None:
        self.calls += other.calls
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.estimated_input += other.estimated_input
        self.expected_output += other.expected_output
        self.latency_s += other.latency_s
        self.timed += other.timed
        self.failures += other.failures

    @property
    def avg_input(self) -> float:
        return self.input_tokens / self.calls if self.calls else 0.0

    @property
    def avg_output(self) -> float:
        return self.output_tokens / self.calls if self.calls else 0.0

    @property
    def avg_latency(self) -> float | None:
        return self.latency_s / self.timed if self.timed else None

    @property
    def output_ratio(self) -> float | None:
        """Measured reply tokens per heuristic token (None without both)."""
        if self.calls and self.expected_output > 0:
            return self.output_tokens / self.expected_output
        return None

    @property
    def input_ratio(self) -> float | None:
        """Reported input tokens per estimated token (None without both)."""
        if self.calls and self.estimated_input > 0 and self.input_tokens > 0:
            return self.input_tokens / self.estimated_input
        return None
