"""A started sandbox seen from CoEval: the harness's pipes, fed and read without blocking.

Four pipes and a pidfd under one selector: the program goes in on stdin, stdout and stderr
come back through caps (:class:`~coeval_benchmarks.sandbox.capture.CappedStream`), and the
report pipe carries the harness's ``S`` (started) and ``D`` + nonce (the tests ran to the
end). Reading never waits on a pipe a leftover process may hold: the pidfd says when the
sandbox ended, and :meth:`SandboxChild.drain` gives the pipes a bounded time after that.
"""

from __future__ import annotations

import os
import secrets
import selectors
import subprocess
import time
from typing import IO, cast

from coeval_benchmarks.sandbox.bwrap import as_sandbox_user
from coeval_benchmarks.sandbox.capture import CappedStream

__all__ = ["SandboxChild"]


class SandboxChild:
    """One started harness: its pipes, read through caps until it ends or its time is up.

    ``argv`` ends with the harness's own arguments; the nonce pipe's and the report pipe's
    descriptors are added. ``cwd`` None: the sandbox (started as :func:`as_sandbox_user`).
    """

    def __init__(self, argv: list[str], program: bytes, cwd: str | None, env: dict[str, str]) -> None:
        self.nonce = secrets.token_hex(16).encode()
        nonce_r, nonce_w = os.pipe()
        report_r, report_w = os.pipe()
        os.write(nonce_w, self.nonce)
        os.close(nonce_w)
        argv = [*argv, str(nonce_r), str(report_w)]
        argv, as_user = as_sandbox_user(argv) if cwd is None else (argv, {})
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                pass_fds=(nonce_r, report_w), cwd=cwd, env=env, start_new_session=True, **as_user,
            )
        except BaseException:
            os.close(report_r)
            raise
        finally:
            os.close(nonce_r)
            os.close(report_w)
        self.report = bytearray()
        self.stdout, self.stderr = CappedStream(), CappedStream()
        self._pending = program
        self._sel = selectors.DefaultSelector()
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        for fh in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            os.set_blocking(fh.fileno(), False)
        self._sel.register(self.proc.stdin, selectors.EVENT_WRITE)
        self._sel.register(self.proc.stdout, selectors.EVENT_READ, self.stdout)
        self._sel.register(self.proc.stderr, selectors.EVENT_READ, self.stderr)
        self._sel.register(report_r, selectors.EVENT_READ, self.report)
        self._exit_fd = os.pidfd_open(self.proc.pid)
        self._sel.register(self._exit_fd, selectors.EVENT_READ)

    def pump(self, until: float) -> bool:
        """Feed stdin and read the pipes until the child exits (True) or ``until`` (False)."""
        while (left := until - time.monotonic()) > 0:
            for key, _ in self._sel.select(left):
                if key.fd == self._exit_fd:
                    self._sel.unregister(self._exit_fd)
                    return True
                if key.events & selectors.EVENT_WRITE:
                    self._write_stdin()
                else:
                    self._read(key)
        return False

    def drain(self, until: float) -> None:
        """Read what is left in the pipes once the sandbox is gone (every writer has ended)."""
        while len(self._sel.get_map()) and (left := until - time.monotonic()) > 0:
            for key, _ in self._sel.select(left):
                if key.fd == self._exit_fd:
                    self._sel.unregister(self._exit_fd)
                elif key.events & selectors.EVENT_WRITE:
                    self._close(key)
                else:
                    self._read(key)

    def _write_stdin(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            sent = os.write(stdin.fileno(), self._pending[:65536])
        except (BrokenPipeError, BlockingIOError) as exc:
            if isinstance(exc, BlockingIOError):
                return
            sent = len(self._pending)
        self._pending = self._pending[sent:]
        if not self._pending:
            self._sel.unregister(stdin)
            stdin.close()

    def _read(self, key: selectors.SelectorKey) -> None:
        try:
            chunk = os.read(key.fd, 65536)
        except BlockingIOError:
            return
        if not chunk:
            self._close(key)
        elif isinstance(key.data, CappedStream):
            key.data.feed(chunk)
        elif len(key.data) < 256:  # the report: "S", then "D" + nonce; anything longer is not ours
            key.data.extend(chunk[:256])

    def _close(self, key: selectors.SelectorKey) -> None:
        """Stop watching a pipe and close it (the report pipe is a bare fd; the rest are files)."""
        self._sel.unregister(key.fileobj)
        if isinstance(key.fileobj, int):
            os.close(key.fileobj)
        else:
            cast(IO[bytes], key.fileobj).close()

    def close(self) -> None:
        for key in list(self._sel.get_map().values()):
            if key.fd == self._exit_fd:
                self._sel.unregister(self._exit_fd)
            else:
                self._close(key)
        self._sel.close()
        os.close(self._exit_fd)
        for fh in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if fh is not None and not fh.closed:
                fh.close()

    @property
    def started(self) -> bool:
        return self.report.startswith(b"S")

    @property
    def completed(self) -> bool:
        return b"D" + self.nonce in self.report
