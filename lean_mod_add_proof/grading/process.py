"""Running one untrusted command: its own process group, a shared deadline, OS limits, an output
cap, and a kill of the whole group whatever happens (deadline, cancellation, normal exit)."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import shutil
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lean_mod_add_proof.grading.result import CommandRecord, Stage

#: After the group is killed, how long to keep draining the pipe. A process that left our group
#: (setsid, only possible without the sandbox) could hold it open forever.
DRAIN_AFTER_KILL_S = 2.0
#: Added to the CPU-seconds backstop so it only fires when the wall-clock kill somehow did not.
CPU_SLACK_S = 5
_CHUNK = 1 << 16


@dataclass(frozen=True)
class CommandOutcome:
    record: CommandRecord
    text: str
    """The captured output (the last `output_cap_bytes` bytes, decoded with replacement)."""
    timed_out: bool
    started: bool = True


def prlimit_argv(prlimit: str, memory_mb: int, cpu_seconds: int, max_file_mb: int) -> list[str]:
    """`prlimit` sets the limits on itself and execs the command, so every descendant inherits
    them (rlimits survive exec and fork, and bwrap does not reset them). RLIMIT_FSIZE bounds each
    file written (an .olean of a huge term, a flood into a file); it does not apply to pipes."""
    mib = 1024 * 1024
    return [
        prlimit,
        f"--as={memory_mb * mib}",
        f"--cpu={cpu_seconds}",
        f"--fsize={max_file_mb * mib}",
        "--",
    ]


def cpu_backstop(remaining_s: float) -> int:
    return max(1, math.ceil(remaining_s)) + CPU_SLACK_S


def child_env(home: Path, toolchain_bin: Path | None) -> dict[str, str]:
    """The complete environment of every Lean process: nothing inherited from the grader (no API
    keys, no ELAN_*, no LEAN_PATH), one thread."""
    path = "/usr/bin:/bin"
    if toolchain_bin is not None:
        path = f"{toolchain_bin}:{path}"
    return {
        "PATH": path,
        "HOME": str(home),
        "LEAN_NUM_THREADS": "1",
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp",
    }


def find_prlimit() -> str | None:
    return shutil.which("prlimit", path="/usr/bin:/bin:/usr/sbin:/sbin")


class _Capture:
    """Keeps the last `cap` bytes of a stream and counts all of them."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.buf = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.buf += chunk
        if len(self.buf) > 2 * self.cap:  # trim in bulk, amortised
            del self.buf[: len(self.buf) - self.cap]

    def text(self) -> str:
        return bytes(self.buf[-self.cap :]).decode("utf-8", errors="replace")

    @property
    def truncated(self) -> bool:
        return self.total > self.cap


async def _drain(stream: asyncio.StreamReader, capture: _Capture) -> None:
    while chunk := await stream.read(_CHUNK):
        capture.feed(chunk)


def _killpg(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def _exited(proc: asyncio.subprocess.Process) -> int:
    """Wait for the command itself to exit. Not `proc.wait()`: in asyncio that also waits for the
    pipe to close, which a lingering grandchild holding stdout would delay until the deadline."""
    loop = asyncio.get_running_loop()
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        fd = None  # no pidfd (old kernel) or already reaped: poll below
    if fd is not None:
        ready = loop.create_future()
        loop.add_reader(fd, lambda: ready.done() or ready.set_result(None))
        try:
            await ready
        finally:
            loop.remove_reader(fd)
            os.close(fd)
    delay = 0.001
    while proc.returncode is None:  # the child watcher sets it just after reaping
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)
    return proc.returncode


async def _finish(proc: asyncio.subprocess.Process, drain: asyncio.Task[None]) -> None:
    """Kill the group (lingering grandchildren included), reap, and stop reading."""
    _killpg(proc.pid)
    cancelled = False
    while True:
        try:
            await _exited(proc)
            break
        except asyncio.CancelledError:  # a second cancel must not leave a zombie behind
            cancelled = True
            _killpg(proc.pid)
    try:
        await asyncio.wait_for(asyncio.shield(drain), DRAIN_AFTER_KILL_S)
    except (TimeoutError, asyncio.CancelledError) as exc:
        drain.cancel()
        if isinstance(exc, asyncio.CancelledError):
            cancelled = True
    except Exception:  # a read error just ends the capture
        pass
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()  # release the pipe even if something outside the group still holds it
    if cancelled:
        raise asyncio.CancelledError


async def run_command(
    argv: Sequence[str],
    *,
    stage: Stage,
    cwd: Path,
    env: Mapping[str, str],
    deadline: float,
    output_cap_bytes: int,
    tail_chars: int,
    memory_mb: int | None,
    prlimit: str | None,
    max_file_mb: int = 1024,
    record_argv: Sequence[str] | None = None,
) -> CommandOutcome:
    """Run `argv` until it exits or `deadline` (a `time.monotonic()` value) passes.

    With `memory_mb` the command runs under `prlimit` (address space, file size and a CPU-seconds
    backstop).
    The whole process group is SIGKILLed when the command ends, when the deadline passes, and on
    cancellation (which is re-raised after the group is reaped). `record_argv` is what goes on the
    record (the command without the sandbox/limit wrappers), default `argv`."""
    shown = list(record_argv if record_argv is not None else argv)
    start = time.monotonic()
    remaining = deadline - start
    if remaining <= 0:
        record = CommandRecord(
            stage=stage,
            argv=shown,
            exit_code=None,
            seconds=0.0,
            output_tail="",
            output_bytes=0,
            truncated=False,
        )
        return CommandOutcome(record, "", timed_out=True, started=False)
    full = list(argv)
    if memory_mb is not None:
        if prlimit is None:
            raise RuntimeError("prlimit not found; it is needed for the memory cap")
        full = prlimit_argv(prlimit, memory_mb, cpu_backstop(remaining), max_file_mb) + full
    capture = _Capture(output_cap_bytes)
    proc = await asyncio.create_subprocess_exec(
        *full,
        cwd=str(cwd),
        env=dict(env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        process_group=0,  # its own group, so killpg reaches every descendant that stays in it
    )
    assert proc.stdout is not None
    drain = asyncio.ensure_future(_drain(proc.stdout, capture))
    timed_out = False
    try:
        try:
            exit_code: int | None = await asyncio.wait_for(_exited(proc), timeout=remaining)
        except TimeoutError:
            timed_out = True
            exit_code = None
    finally:
        # Runs on normal exit, deadline and cancellation alike; re-raises cancellation.
        await _finish(proc, drain)
    text = capture.text()
    record = CommandRecord(
        stage=stage,
        argv=shown,
        exit_code=exit_code,
        seconds=round(time.monotonic() - start, 3),
        output_tail=text[-tail_chars:] if tail_chars else "",
        output_bytes=capture.total,
        truncated=capture.truncated,
    )
    return CommandOutcome(record, text, timed_out=timed_out)
