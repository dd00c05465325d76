"""How every command prints: rich on a terminal; off one (a pipe, a file, CI's log) whole lines
that nothing wraps, so that a command, a path or a hash can be copied from the output (issue 41:
at 80 columns rich broke paths and hashes mid-word and lost the letter at each wrap of a caption);
and a reader that stops early (`| head`) changes nothing about the exit status."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import IO, Any

from rich.console import Console

#: Off a terminal, the width rich is given: wider than any line a command prints, so that rich
#: never wraps one; with `soft_wrap` it does not pad a line to it either. Tables take their
#: natural width (no table here is set to expand).
UNWRAPPED_WIDTH = 100_000


def is_terminal(stream: IO[str] | None = None) -> bool:
    """Whether `stream` (default: stdout) is a terminal."""
    stream = sys.stdout if stream is None else stream
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed or not a real stream
        return False


def console(*, stderr: bool = False) -> Console:
    """The console a command prints with (on stderr with `stderr`). On a terminal, rich's own
    (its width, wrapping and colours); off one, no wrapping and no colour codes, whatever
    COLUMNS says (a width set for a terminal is no reason to break a line in a log)."""
    if is_terminal(sys.stderr if stderr else sys.stdout):
        return Console(stderr=stderr)
    return Console(stderr=stderr, width=UNWRAPPED_WIDTH, soft_wrap=True, no_color=True, highlight=False)


class ReaderMayLeave:
    """A text stream (stdout or stderr) whose reader may stop reading early (`cmd | head`):
    the first write that finds the pipe closed points the stream's descriptor at /dev/null, and
    the command runs on to its own end and its own exit status. Without it, whether `cmd | head`
    exited 0 or 1 depended on whether the command had finished writing before `head` left."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self.reader_left = False

    def _left(self) -> None:
        self.reader_left = True
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._left()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._left()
            with contextlib.suppress(BrokenPipeError):
                self._stream.flush()  # what was left in the buffer goes to /dev/null now

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def readers_may_leave() -> Iterator[None]:
    """sys.stdout and sys.stderr as `ReaderMayLeave` streams while the block runs."""
    saved = sys.stdout, sys.stderr
    sys.stdout = ReaderMayLeave(saved[0])  # type: ignore[assignment]
    sys.stderr = ReaderMayLeave(saved[1])  # type: ignore[assignment]
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        sys.stdout, sys.stderr = saved
