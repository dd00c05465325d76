"""The grade's disk while one command runs (`_GradeDisk`, one per watcher): the disk and file caps
over what the walk finds *and* what the tree holds open with no name left (`held_deleted`), and
the work disk's low-water mark, in which a reading under a mark of full counts only once the
grade's own usage, measured right around it, is found within its caps (see the package
docstring's "Caps" and "Residual limits")."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from lean_mod_add_proof.grading.process.limits import (
    _MIB,
    HeldFiles,
    Limits,
    disk_and_entries,
    held_deleted,
    holds_unseen_space,
)
from lean_mod_add_proof.grading.workdirs import ENOSPC_MARK_BYTES, FULL_DISK_BYTES

#: After a confirmation that took T (its walk and descriptor scans), the next one waits at least
#: this many T: a disk that stays low, or a submission dipping it at every poll, then costs the
#: grader at most 1/(1 + this) of a core for this grade, however many files the grade has.
CONFIRM_REST = 4


@dataclass(frozen=True)
class OwnUse:
    """What the grade itself took, as the caps count it: bytes and directory entries under its
    `disk_paths`, plus the files its tree holds open with no name left."""

    bytes: int
    entries: int


def _mark(free: int | None) -> int:
    """Which side of the marks of full `free` bytes are on: 0 under FULL_DISK_BYTES, 1 under
    ENOSPC_MARK_BYTES, 2 above (None: nothing seen yet)."""
    if free is None:
        return 3
    return 0 if free < FULL_DISK_BYTES else 1 if free < ENOSPC_MARK_BYTES else 2


def _least(kept: int | None, seen: int) -> int:
    return seen if kept is None else min(kept, seen)


class _GradeDisk:
    """The disk state of one command's watcher. Its caps are checked by `look` (every
    `DISK_POLL_S` and at the end); the work disk's free space and inodes are sampled at every
    poll of the tree (`sample`, one statvfs).

    A reading under a mark of full (`workdirs.ENOSPC_MARK_BYTES`, or no free inode) is not kept
    as it is: the grade could have caused it itself, with files the walk cannot see (unlinked
    while open) or that were there only between two walks (the review of the signal filter,
    finding 4). It asks for a confirmation, done by the next `look`: a statvfs, the tree's held
    files, the walk, the held files again, a statvfs. Over a cap, the grade is stopped by that
    cap (a verdict); within its caps, and with the disk still under the mark at both ends, the
    reading is kept (the higher of the two, with the grade's usage), unless a process of the
    tree maps a removed file on that disk or is exiting, before or after (`holds_unseen_space`:
    blocks the grader cannot size);
    and `routes/steps.py` `LowWater` may count it as the host's: `workdirs.room_for_caps` made
    sure before the build that what the caps allow cannot bring the disk there."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.devices: frozenset[int] | None = None  # st_dev of `disk_paths` (read at the first look)
        self.low_free_bytes: int | None = None
        """The least free space seen: a reading under ENOSPC_MARK_BYTES only once confirmed."""
        self.low_free_inodes: int | None = None
        """The least free inodes seen; no free inode only once confirmed (None: none counted)."""
        self.low_own: OwnUse | None = None
        """The grade's own usage measured at the confirmations that kept a reading (the most)."""
        self.pending = False  # a reading under a mark waits for its confirmation
        self._rest_until = -math.inf

    # -- the work disk's free space --
    def _statvfs(self) -> tuple[int, int | None] | None:
        """(free bytes available to the grader, free inodes or None where the filesystem counts
        none) of the disk holding the first of `disk_paths`, or None when it cannot be asked."""
        try:
            st = os.statvfs(self.limits.disk_paths[0])
        except OSError:
            return None
        return st.f_bavail * st.f_frsize, (st.f_favail if st.f_files else None)

    def _lower(self, free: int | None, inodes: int | None) -> bool:
        """Whether (free, inodes) is under a mark the kept low-water mark is not under yet."""
        by_bytes = free is not None and _mark(free) < min(_mark(self.low_free_bytes), 2)
        return by_bytes or (inodes == 0 and self.low_free_inodes != 0)

    def sample(self) -> None:
        """One statvfs, at each poll: lower the low-water mark, or ask for a confirmation."""
        seen = self._statvfs()
        if seen is None:
            return
        free, inodes = seen
        if free >= ENOSPC_MARK_BYTES:
            self.low_free_bytes = _least(self.low_free_bytes, free)
        if inodes:
            self.low_free_inodes = _least(self.low_free_inodes, inodes)
        if self._lower(free, inodes):
            self.pending = True

    def wants_look(self) -> bool:
        """A confirmation is asked for and may run now (`CONFIRM_REST`)."""
        return self.pending and time.monotonic() >= self._rest_until

    # -- the caps --
    def measure(
        self, pids: Callable[[], Iterable[int]], tick: Callable[[], bool], *, bracket: bool = False
    ) -> OwnUse | None:
        """The grade's own usage: the walk of `disk_paths` and the tree's held files (`pids()`:
        its live processes) after it; with `bracket`, before it too (the larger count: a
        confirmation). None when `tick` abandoned the walk (the command is ending): that is no
        measurement. A walk stopped early because it passed a cap is one: it is over that cap."""
        lim = self.limits
        devices = self._devices()
        before = held_deleted(pids(), devices) if bracket else HeldFiles()
        abandoned = False

        def watched_tick() -> bool:
            nonlocal abandoned
            abandoned = abandoned or tick()
            return abandoned

        used, entries = disk_and_entries(
            lim.disk_paths, stop_above=lim.max_disk_mb * _MIB, entries_above=lim.max_files, tick=watched_tick
        )
        if abandoned:
            return None
        after = held_deleted(pids(), devices)
        return OwnUse(used + max(before.bytes, after.bytes), entries + max(before.inodes, after.inodes))

    def _devices(self) -> frozenset[int]:
        """st_dev of `disk_paths` (read once some exist)."""
        if not self.devices:
            devs = set()
            for path in self.limits.disk_paths:
                try:
                    devs.add(os.stat(path).st_dev)
                except OSError:
                    pass
            self.devices = frozenset(devs)
        return self.devices

    def _unseen(self, pids: Callable[[], Iterable[int]]) -> bool:
        return bool(devices := self._devices()) and holds_unseen_space(pids(), devices)

    def over_caps(self, own: OwnUse) -> str | None:
        lim = self.limits
        if own.bytes > lim.max_disk_mb * _MIB:
            return f"disk cap exceeded ({math.ceil(own.bytes / _MIB)} MiB > {lim.max_disk_mb} MiB)"
        if lim.max_files is not None and own.entries > lim.max_files:
            return f"file cap exceeded (more than {lim.max_files} directory entries)"
        return None

    def look(self, pids: Callable[[], Iterable[int]], tick: Callable[[], bool]) -> str | None:
        """Measure the grade's usage (`measure`), confirming a low reading if one is pending;
        return the cap it exceeds, or None."""
        if not self.pending:
            own = self.measure(pids, tick)
            return None if own is None else self.over_caps(own)
        self.pending = False
        began = time.monotonic()
        unseen = self._unseen(pids)  # (before the first statvfs and after the last: see below)
        first = self._statvfs()
        own = self.measure(pids, tick, bracket=True)
        last = self._statvfs()
        self._rest_until = time.monotonic() + CONFIRM_REST * (time.monotonic() - began)
        if own is None:
            self.pending = True  # (abandoned: the final look confirms it)
            return None
        if (why := self.over_caps(own)) is not None:
            return why
        if first is None or last is None:
            return None
        free = max(first[0], last[0])  # under the mark at both ends, or not kept
        inodes = None if first[1] is None or last[1] is None else max(first[1], last[1])
        if not self._lower(free, inodes):
            return None  # no longer under the mark: a dip the grader cannot pin on anyone
        if unseen or self._unseen(pids):
            # Space the grader cannot measure (a removed file the tree maps, a process being torn
            # down) was held before the first statvfs or after the last: the grade may have
            # taken the disk there itself. Not kept (a later sample asks again).
            return None
        if free < ENOSPC_MARK_BYTES:
            self.low_free_bytes = _least(self.low_free_bytes, free)
        if inodes == 0:
            self.low_free_inodes = 0
        if (mine := self.low_own) is not None:
            own = OwnUse(max(mine.bytes, own.bytes), max(mine.entries, own.entries))
        self.low_own = own
        return None
