"""A started command's output and exit, followed from the event loop (`_Run`, `_Capture`), and
how its exit is reported (`exit_status`; see the package docstring's "Exit status")."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from typing import IO

#: The most one read of a command's output takes (asyncio's pipe transports read as much).
_READ_MAX = 1 << 18


def exit_status(returncode: int, *, sandboxed: bool) -> tuple[int | None, int | None]:
    """(exit_code, signal) from a returncode, the same with and without the sandbox (pure).
    Popen reports death by signal N as -N; bwrap exits 128+N when its child dies of signal N."""
    if returncode < 0:
        return None, -returncode
    if sandboxed and 128 < returncode < 128 + signal.NSIG:
        return None, returncode - 128
    return returncode, None


class _Capture:
    """Keeps the last `cap` bytes of a stream and counts all of them, and notes when each of
    `watch` first appears (across chunk boundaries)."""

    def __init__(self, cap: int, watch: Sequence[bytes] = ()) -> None:
        self.cap = cap
        self.buf = bytearray()
        self.total = 0
        self.watch = [w for w in dict.fromkeys(watch) if w]
        self.seen: dict[bytes, float] = {}
        self._carry = b""

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if len(self.seen) < len(self.watch):
            window = self._carry + chunk
            now = time.monotonic()
            for w in self.watch:
                if w not in self.seen and w in window:
                    self.seen[w] = now
            keep = max(len(w) for w in self.watch) - 1
            self._carry = window[-keep:] if keep else b""
        self.buf += chunk
        if len(self.buf) > 2 * self.cap:  # trim in bulk, amortised
            del self.buf[: len(self.buf) - self.cap]

    def text(self) -> str:
        return bytes(self.buf[-self.cap :]).decode("utf-8", errors="replace")

    @property
    def truncated(self) -> bool:
        return self.total > self.cap


def _output_pipe(proc: subprocess.Popen[bytes]) -> IO[bytes]:
    """The pipe the grader reads: stdout and stderr together, or stderr alone when stdout goes
    to a file (`run_command`'s `stdout_fd`)."""
    pipe = proc.stdout if proc.stdout is not None else proc.stderr
    assert pipe is not None
    return pipe


def _exit_code(proc: subprocess.Popen[bytes]) -> int | None:
    """`proc`'s exit code once it has exited (-N when a signal N ended it, as Popen says), else
    None; without reaping it (`waitid` with WNOWAIT). Popen's own answer when it cannot be
    asked (the child was reaped elsewhere)."""
    try:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return proc.poll()
    if info is None:
        return None
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


class _Run:
    """One started command's output and exit, followed from the event loop by callbacks only: a
    reader on its stdout pipe and one on a pidfd (a 10 ms poll where there is no pidfd). Nothing
    here awaits, so no cancellation can land between starting the command and following it, and
    nothing waits on the pipe's writers: the grader reaps the command itself (not asyncio's child
    watcher, whose `wait()` also waits for the pipe to close), and only at the end (`close`)."""

    def __init__(self, proc: subprocess.Popen[bytes], capture: _Capture, loop: asyncio.AbstractEventLoop):
        self.proc = proc
        self.capture = capture
        self.loop = loop
        self.exited: asyncio.Future[int] = loop.create_future()
        self.eof: asyncio.Future[None] = loop.create_future()
        self._out = _output_pipe(proc).fileno()
        os.set_blocking(self._out, False)
        loop.add_reader(self._out, self._on_output)
        self._pidfd: int | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._started = False
        try:
            self._pidfd = os.pidfd_open(proc.pid)  # ours until we reap it: no pid reuse
        except (AttributeError, OSError):
            self._timer = loop.call_later(0.01, self._poll_exit)
        else:
            loop.add_reader(self._pidfd, self._on_exit)
        self._on_exit()  # it may be over already
        self._started = True

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def _on_output(self) -> None:
        try:
            chunk = os.read(self._out, _READ_MAX)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""  # a read error ends the capture
        if chunk:
            self.capture.feed(chunk)
        else:
            self._stop_reading()

    def _stop_reading(self) -> None:
        if not self.eof.done():
            self.loop.remove_reader(self._out)
            self.eof.set_result(None)

    def _on_exit(self) -> None:
        if self.exited.done():
            return
        code = _exit_code(self.proc)  # not reaped yet: see `close`
        if code is None:
            if self._pidfd is not None and self._timer is None and self._started:
                # Readable yet not reapable (an old kernel's view of a leader whose threads
                # live on): poll instead of spinning on a level-triggered reader.
                self.loop.remove_reader(self._pidfd)
                os.close(self._pidfd)
                self._pidfd = None
                self._timer = self.loop.call_later(0.01, self._poll_exit)
            return
        if self._pidfd is not None:
            self.loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        self.exited.set_result(code)

    def _poll_exit(self) -> None:
        self._on_exit()
        if not self.exited.done():
            self._timer = self.loop.call_later(0.01, self._poll_exit)

    def close(self) -> None:
        """Reap the command (it has exited: `exited`), stop reading, and release the pipe and
        the pidfd. Until it is reaped, its zombie keeps its pid, and so its process group id,
        from being taken by a new process: a kill of the group after the command's exit reaches
        only what is left of its own group, never another command's (the review of 2026-12-06,
        finding 7: every command leads a group of its own, under the pid it was given)."""
        self.proc.wait()
        self._stop_reading()
        if self._timer is not None:
            self._timer.cancel()
        if self._pidfd is not None:
            self.loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        _output_pipe(self.proc).close()
