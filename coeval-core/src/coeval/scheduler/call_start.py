"""A call's start line in the call journal, written exactly once, and as late as is safe.

For an interface that announces its sends (:mod:`coeval.interfaces.sending`) the line is
written when the request goes out; for any other, before the call. Either way it is written
before the call can cost money, so a kill never hides a paid call; announced, it rarely
counts one that was never sent.
"""

from __future__ import annotations

from coeval.scheduler.admission import CallJournal

__all__ = ["CallStart"]


class CallStart:
    """The start of one call of ``model``: :meth:`write` puts its line in the journal once.

    ``call`` is the journal's id for it once written (None: not written, so not sent);
    ``error`` the ``OSError`` that kept the line out (a full disk), after which the request
    must not go out."""

    def __init__(self, journal: CallJournal, model: str, phase: str, item: str, estimate_usd: float) -> None:
        self.journal = journal
        self.model = model
        self.phase = phase
        self.item = item
        self.estimate_usd = estimate_usd
        self.call: str | None = None
        self.error: OSError | None = None

    def write(self) -> None:
        """Write the start line, unless written already (a redirect announces again).
        Raises ``OSError`` when it cannot be written: the caller must not send."""
        if self.call is not None:
            return
        try:
            self.call = self.journal.started(self.model, self.phase, self.item, self.estimate_usd)
        except OSError as exc:
            self.error = exc
            raise

    @property
    def sent(self) -> bool:
        return self.call is not None

    def ended(self, cost_usd: float | None) -> None:
        """The call returned (``cost_usd`` None: failed, cost unknown)."""
        assert self.call is not None
        self.journal.ended(self.call, self.model, cost_usd)

    def not_sent(self) -> None:
        """The server never saw it (a refused connection, a call given back): if its start
        was written, the journal takes it back."""
        if self.call is not None:
            self.journal.not_sent(self.call, self.model)
