"""The watcher: a thread per running command (`_Watcher`, on threads reused by
`_WatcherThreads`) that polls its tree's members, enforces the memory, process and disk caps,
and kills the whole tree at the end (see the package docstring's "How the tree is followed").
New members come from the shared look (discovery.py), which every watcher's poll asks for."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import threading
import time
from collections.abc import Mapping

from lean_mod_add_proof.grading.process.discovery import _discovery
from lean_mod_add_proof.grading.process.disk import _GradeDisk
from lean_mod_add_proof.grading.process.faults import HostFault
from lean_mod_add_proof.grading.process.limits import _MIB, Limits
from lean_mod_add_proof.grading.process.proc import _PAGE, _kill_exact, _killpg, _read_proc, _stat

#: How often each watcher polls: its tree's memory and process caps, and new members (through the
#: shared look, `_Discovery`). The regular polls of all watchers fall due on one grid of this period.
RSS_POLL_S = 0.05
#: The first look comes a little after the spawn, so a command that is over in a few milliseconds costs
#: one listing of /proc (the final sweep), not two. What it started meanwhile is found then.
FIRST_POLL_S = 0.01
#: How often the watcher adds up the disk use under `Limits.disk_paths` and the files its tree
#: holds with no name left (a work disk found under a mark of full is looked at sooner: disk.py).
DISK_POLL_S = 0.5
#: How long the final kill keeps looking for stragglers before giving up.
SWEEP_S = 1.0

#: How long a watcher thread waits, idle, for the next command before it ends.
WATCHER_IDLE_S = 0.2


class _WatcherThreads:
    """Threads that run watchers, reused from one command to the next: starting a thread per
    command (a clone and a GIL hand-off before the command is watched) was the largest cost of
    the grader's event-loop thread after the spawn itself (py-spy at concurrency 16). Never a
    queue: a watcher is handed only to a thread that is idle, else a new thread is started for
    it, so no command waits unwatched. An idle thread ends after `WATCHER_IDLE_S`, so none is
    left once grading stops. A running thread is named `lean-grader-watch-<pid>`, an idle one
    `lean-grader-watch-idle`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._handed: list[_Watcher] = []  # given to an idle thread, not yet taken
        self._wake = threading.Condition(self._lock)
        self._idle = 0  # threads waiting in `_worker` and not yet given a watcher

    def start(self, watcher: _Watcher) -> None:
        """Run `watcher.run` in an idle thread, or in a new one (RuntimeError if none can start)."""
        with self._lock:
            if self._idle > len(self._handed):
                self._handed.append(watcher)
                self._wake.notify()
                return
        threading.Thread(
            target=self._worker, args=(watcher,), name=f"lean-grader-watch-{watcher.root}", daemon=True
        ).start()

    def _worker(self, watcher: _Watcher) -> None:
        me = threading.current_thread()
        while True:
            me.name = f"lean-grader-watch-{watcher.root}"
            returned = False
            try:
                watcher.run()
                returned = True
            finally:
                me.name = "lean-grader-watch-idle"
                # Idle before `done` is set: a command started once this one is over finds this
                # thread idle, however long the host takes to run it again (it used to count
                # itself idle only after `finished`; a thread preempted between the two made the
                # next command start a thread of its own). Not if `run` raised: the thread ends.
                if returned:
                    with self._lock:
                        self._idle += 1
                watcher.finished()  # the last of this command here: nothing waits for more
            with self._lock:
                self._wake.wait_for(lambda: bool(self._handed), WATCHER_IDLE_S)
                self._idle -= 1
                if not self._handed:
                    return  # idle for WATCHER_IDLE_S: (start() hands out only what `_idle` covers)
                watcher = self._handed.pop()


_watcher_threads = _WatcherThreads()


def _new_watcher_threads_in_child() -> None:
    """A forked child has none of its parent's threads. Reset in place: commands.py holds
    `_watcher_threads` by name."""
    _watcher_threads.__init__()


os.register_at_fork(after_in_child=_new_watcher_threads_in_child)


class _Watcher:
    """Follows one command's process tree, enforces the caps, and kills the tree at the end.

    Made before the command is spawned (its tree is registered with `_discovery` then, so every
    look files what the command starts), given the command's first process by `attach`, and
    unregistered when `run` ends."""

    def __init__(
        self,
        token: str,
        spawned_ticks: int,
        limits: Limits | None,
        loop: asyncio.AbstractEventLoop,
        argv_marks: frozenset[bytes] = frozenset(),
    ) -> None:
        self.root = 0  # the command's first process (`attach`)
        self.token = token.encode()
        self.limits = limits
        self.argv_marks = argv_marks
        self.argv_seen_at: float | None = None  # when a tree process first had one of them in argv
        # Written under `_discovery.lock` (by any watcher's look); copied under it by this
        # watcher's polls and by `kill` (from this thread, or from the event loop's `kill_all`).
        self.ours: dict[int, int] = {}  # pid -> start time, every live process of the tree seen
        self.seen: set[int] = set()  # every pid ever in `ours`
        self.live: dict[int, tuple[int, bool]] = {}  # from the last poll: pid -> (ppid, zombie)
        self.not_before = spawned_ticks - 1  # nothing of the tree started earlier
        self.peak_rss = 0
        self.peak_cpu_ticks = 0
        """The most CPU time (clock ticks) any one process of the tree was seen to have used."""
        self.disk = _GradeDisk(limits) if limits is not None and limits.disk_paths else None
        """The disk and file caps and the work disk's low-water mark (None: no disk paths)."""
        self.reason: str | None = None
        self.error: BaseException | None = None
        self._halt = threading.Event()
        self._loop = loop
        self.done: asyncio.Future[None] = loop.create_future()
        self._next_poll = time.monotonic() + FIRST_POLL_S  # (set again by `attach`)
        self.spawned_at = -math.inf  # when `attach` was given the command's first process
        self._ending = False
        self.started = False  # handed to a thread (`_WatcherThreads.start`), whose `run` closes it
        _discovery.register(self)

    def attach(self, root: int) -> None:
        """The command is spawned: `root` is its first process (`_discovery.lock` held). Raises
        when its stat cannot be read (the host's fault): a tree without its root is not followed."""
        self.root = root
        st = _stat(root)
        if st is None:  # our own child, not reaped yet: /proc must show it
            raise HostFault(f"cannot read /proc/{root}/stat of the command just started")
        self.not_before = min(self.not_before, st[1])
        _discovery.adopt(self, root, st[1])
        # The first poll falls due after the spawn, not after this watcher was made: the spawn
        # may have waited for the lock (another watcher's look), and a look begun before it
        # must not serve that poll (reviews A10, B P-6: it found nothing of the command).
        self.spawned_at = time.monotonic()
        self._next_poll = self.spawned_at + FIRST_POLL_S

    def close(self) -> None:
        """Stop following the tree (its watcher is done, or never started)."""
        _discovery.unregister(self)

    # -- following the tree --
    def poll(self, asked_at: float | None = None) -> None:
        """One look at /proc: new members (found by the shared look), and the memory and process
        caps. `asked_at`: the time the poll was due (default now); a shared look that began
        after it serves this poll.

        The regular polls of every watcher fall due together, on one grid of `RSS_POLL_S` (the
        first, `FIRST_POLL_S` after the spawn, excepted): the first watcher to wake looks for
        all, so the looks per second stay the same however many commands run, and so does the
        grader's CPU per grade when the commands outnumber the cores and take longer."""
        if asked_at is None:
            asked_at = time.monotonic()
        asked_at = max(asked_at, self.spawned_at)  # (never served by a look begun before the spawn)
        self._next_poll = (math.floor(time.monotonic() / RSS_POLL_S) + 1) * RSS_POLL_S
        _discovery.look(asked_at)  # (takes the lock itself: not while reading an environment)
        with _discovery.lock:
            members = list(self.ours.items())
        rss = 0
        live: dict[int, tuple[int, bool]] = {}
        gone: list[tuple[int, int]] = []
        for pid, start in members:
            st = _stat(pid)
            if st is None or st[1] != start:
                gone.append((pid, start))
                continue
            live[pid] = (st[0], st[3])
            rss += st[2]
            self.peak_cpu_ticks = max(self.peak_cpu_ticks, st[4])
        if gone:
            with _discovery.lock:
                for pid, start in gone:
                    _discovery.forget(self, pid, start)
        self.live = live
        if self.argv_marks and self.argv_seen_at is None:
            self._look_for_argv(live)
        rss *= _PAGE
        self.peak_rss = max(self.peak_rss, rss)
        if self.disk is not None:
            # One statvfs (a few microseconds): a disk full while a build ran may have room
            # again by the time the build ends, as finished grades' directories are removed
            # (issue 39), so a failure is judged by the lowest seen (disk.py).
            self.disk.sample()
        lim = self.limits
        if lim is None or self.reason is not None or self._ending:
            return  # (while ending, what is left is being killed anyway)
        if rss > lim.memory_mb * _MIB:
            self.exceeded(f"memory cap exceeded ({math.ceil(rss / _MIB)} MiB > {lim.memory_mb} MiB)")
        elif len(live) > lim.max_processes:
            self.exceeded(f"process cap exceeded (more than {lim.max_processes} processes)")

    def _look_for_argv(self, live: Mapping[int, tuple[int, bool]]) -> None:
        """Note when a live process of the tree first runs with one of `argv_marks` as a whole
        argument (read from /proc/PID/cmdline at each look: an exec changes it)."""
        for pid in live:
            data = _read_proc(pid, "cmdline", 1 << 16)
            if data and not self.argv_marks.isdisjoint(data.split(b"\0")):
                self.argv_seen_at = time.monotonic()
                return

    def _walk_tick(self) -> bool:
        """Between disk-walk steps: keep polling, and say whether to abandon the walk."""
        if self._ending:
            return False  # the final walk runs to the end
        if time.monotonic() >= self._next_poll:
            self.poll(self._next_poll)
        return self.reason is not None or self._halt.is_set()

    def check_disk(self) -> None:
        """The disk and file caps (`_GradeDisk.look`: the walk and the files the tree holds with
        no name left, confirming a low reading of the work disk if one is pending)."""
        if self.disk is None or self.reason is not None:
            return
        why = self.disk.look(self._live_members, self._walk_tick)
        if why is not None and self.reason is None:
            self.exceeded(why)

    def _live_members(self) -> list[int]:
        """The tree's live processes at the last poll, for the held-file scan; none once the
        tree has been killed (the final look): a pid of the last poll may be another's by then."""
        if self._ending:
            return []
        return [pid for pid, (_, zombie) in self.live.items() if not zombie]

    # -- killing --
    def exceeded(self, reason: str) -> None:
        self.reason = reason
        self.kill()

    def kill(self) -> None:
        """SIGKILL the command's group and every member of its tree. Each member is tried even
        when another cannot be (/proc unreadable: the host's fault); the first such error is
        raised after, so the watcher fails closed."""
        _killpg(self.root)
        with _discovery.lock:  # (any watcher's look may file a new member meanwhile: review A7)
            members = list(self.ours.items())
        failed: OSError | None = None
        for pid, start in members:
            try:
                _kill_exact(pid, start)
            except OSError as exc:
                failed = failed or exc
        if failed is not None:
            raise failed

    def sweep(self) -> None:
        """Kill the tree until nothing of it is left alive (bounded by `SWEEP_S`)."""
        give_up = time.monotonic() + SWEEP_S
        delay = 0.001
        while True:
            _killpg(self.root)
            self.poll()
            alive = [pid for pid, (_, zombie) in self.live.items() if not zombie]
            # (a process started since this tree's first, in the middle of an exec, may be an
            # orphan of this tree: wait for it)
            if (not alive and not _discovery.waiting_for(self.not_before)) or time.monotonic() > give_up:
                break
            for pid in alive:
                if (start := self.ours.get(pid)) is not None:  # (not refiled since the poll)
                    _kill_exact(pid, start)
            time.sleep(delay)
            delay = min(delay * 2, 0.02)
        me = os.getpid()
        for pid, (ppid, zombie) in self.live.items():  # orphans adopted by the grader itself
            if zombie and ppid == me and pid != self.root:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)

    # -- the thread --
    def run(self) -> None:
        try:
            if self.disk is not None:
                self.disk.sample()
            next_disk = time.monotonic() + DISK_POLL_S
            while True:
                if self._halt.wait(max(0.0, self._next_poll - time.monotonic())):
                    break
                self.poll(self._next_poll)
                if self.reason is not None:
                    self.kill()  # anything born since the cap fired
                elif time.monotonic() >= next_disk or (self.disk is not None and self.disk.wants_look()):
                    self.check_disk()
                    next_disk = time.monotonic() + DISK_POLL_S
            self._ending = True
            self.sweep()
            self.check_disk()  # once more at the end: a fast writer may have finished already
        except BaseException as exc:  # fail closed: a watcher that cannot watch kills the command
            self.error = exc
            with contextlib.suppress(BaseException):
                self.kill()
        finally:
            self.close()

    def abandon(self) -> None:
        """Kill the tree until nothing of it is left alive, from the caller's thread, for a
        watcher that never ran (its command could not be followed: see `commands._abandon`).
        Blocks for up to `SWEEP_S`."""
        self._ending = True
        self.sweep()

    def finished(self) -> None:
        """Set `done` (from the thread that ran `run`, once it is done with this watcher: then
        the event loop waits for nothing more of that thread)."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
            self._loop.call_soon_threadsafe(self._set_done)

    def _set_done(self) -> None:
        if not self.done.done():
            self.done.set_result(None)

    def stop(self) -> None:
        self._halt.set()
