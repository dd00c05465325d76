"""The shared look (`_Discovery`): one look at new pids for every watcher of the grader
process, which files each new process with the tree of its parent, or an orphan with the tree
its marker names. It knows a tree only as `_Tree` (what watcher.py's `_Watcher` holds), so it
imports nothing above it: data flows from here up to the watchers."""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from lean_mod_add_proof.grading.process.markers import _MARKER
from lean_mod_add_proof.grading.process.proc import (
    _ancestors,
    _environ_state,
    _is_process,
    _last_pid,
    _listed_pids,
    _read_int,
    _read_proc,
    _stat,
)

#: A look at /proc normally stats just the pids allocated since the last look (read from
#: /proc/sys/kernel/ns_last_pid). It lists all of /proc instead when that is more than
#: `_RANGE_MAX` pids, when more than `_RANGE_GAP_S` passed since the last look (the allocator
#: might have come full circle), or when ns_last_pid cannot be read.
_RANGE_MAX = 4096
_RANGE_GAP_S = 1.0
#: How long a live undecided pid (see `_Discovery._keep`) is looked at again. By time, not by a
#: number of looks: a final sweep looks every few milliseconds, and so does every other
#: watcher's, so a number of looks could run out while the process sat preempted in the middle
#: of an exec on a loaded host, and it was dropped for good (the review of 2026-12-06, finding
#: 1). Far longer than an exec or a reparenting takes, and longer than a sweep waits (`SWEEP_S`).
_UNDECIDED_S = 2.0
#: How long a pid allocated but not visible (a fork in flight; far more often a process already
#: gone and reaped), or one whose environment cannot be read, is looked at again. Not waited for:
#: a fork in flight has a live parent, which keeps its own tree's sweep going.
_UNSEEN_S = 0.25

_Stat = tuple[int, int, int, bool, int]


class _Tree(Protocol):
    """One command's tree as the look sees it (a `_Watcher`; written under `_Discovery.lock`)."""

    token: bytes
    """Its marker's token (`markers.TREE_ENV_VAR`)."""
    ours: dict[int, int]
    """pid -> start time, every live process of the tree seen."""
    seen: set[int]
    """Every pid ever in `ours`."""
    not_before: int
    """Nothing of the tree started earlier (clock ticks since boot)."""


class _Undecided(NamedTuple):
    """A pid a look could not decide, to be looked at again."""

    start: int | None
    """Its process's start time (None: no process was visible)."""
    until: float
    """When it is given up (`time.monotonic()`)."""


class _Read(NamedTuple):
    """An orphan's environment, read by a look without the lock (`_orphans_environ`)."""

    start: int
    """The start time of the process whose environment it is."""
    environ: bytes
    state: str


@dataclass
class _Pass:
    """One pass of a look over some pids under the lock: what it goes by and what it decides.
    A look's first pass leaves the orphans whose environment it must read (`to_read`); the look
    reads them without the lock, then a second pass (`read` given) files them and the pids left
    undecided for them (`after_read`)."""

    now: float
    listing: bool
    """Whether the pids come from a whole listing of /proc."""
    old: Mapping[int, _Undecided]
    """The undecided pids before this pass (their deadlines carry over)."""
    read: Mapping[int, _Read] | None
    """The environments read since the first pass (None: this is the first)."""
    retry: dict[int, _Undecided] = field(default_factory=dict)
    """The pids it leaves undecided."""
    waiting: dict[int, int] = field(default_factory=dict)
    """Of those, the live ones a final sweep waits for -> their start times."""
    to_read: dict[int, int] = field(default_factory=dict)
    """Orphans whose environment the look reads next, without the lock -> their start times."""
    after_read: list[int] = field(default_factory=list)
    """Those, and the pids left undecided because of them: what the second pass looks at."""


class _Discovery:
    """The one look at new pids for every watcher of this grader process (issue 29).

    Why one: when each watcher looked at every pid allocated since its own last look, whoever's
    it was, and read the environment of every new child of the grader (every command's first
    process is one), a grader running N commands did the classifying work N times over: its
    watchers' CPU per grade grew with N, under one GIL. Now a look reads ns_last_pid once, stats
    each new pid once, reads an orphan's environment once (its marker names its tree), looks at
    an undecided pid again at each look until it is decided (`_keep`), and files each new
    process with the tree of its parent. A watcher's own poll then reads only its members.

    Freshness: a watcher's poll asks for a look that began after the poll did (`look`), so what
    it finds is what a look of its own would have found, but for an orphan whose environment
    that look is still reading: that one is filed by the look reading it, as soon as it has,
    and a final sweep waits for it meanwhile. A look in progress that began earlier does not
    count, and the watcher looks again. Looks, the tree maps and the undecided pids are guarded
    by `lock`; no look holds it while it reads another process's environment (review A8). A
    tree is registered before its command is spawned (so nothing the command starts is looked
    at before its tree is known) and unregistered once its watcher has swept it. With no tree
    registered there is nothing to follow, so the next registration starts the pid range
    afresh (from ns_last_pid read then)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._trees: dict[bytes, _Tree] = {}  # marker token -> its watcher
        self._owner: dict[int, _Tree] = {}  # every member pid of a registered tree -> its tree
        self._last_pid: int | None = None
        self._looked_at = -math.inf  # when the last look began
        # In whole listings: pid -> (start time, when last found so) of processes known to be of
        # no tree (`_candidates` stats each again once it is `_RANGE_GAP_S` old: reviews A6, B P-8).
        self._other: dict[int, tuple[int, float]] = {}
        self._retry: dict[int, _Undecided] = {}  # undecided pids, to look at again
        self._reading: set[int] = set()  # orphans whose environment a look is reading now
        # Of those, the live ones a final sweep waits for -> their start times. Replaced by each
        # look, never changed once set, so a sweep may read it without the lock.
        self.waiting: Mapping[int, int] = {}

    def register(self, watcher: _Tree) -> None:
        with self.lock:
            if not self._trees:  # nothing followed until now: no pid before this one can matter
                self._last_pid = _last_pid()
                self._looked_at = time.monotonic()
                self._other.clear()
                self._retry = {}
                self.waiting = {}
            self._trees[watcher.token] = watcher

    def unregister(self, watcher: _Tree) -> None:
        with self.lock:
            if self._trees.get(watcher.token) is watcher:
                del self._trees[watcher.token]
            for pid in watcher.seen:
                if self._owner.get(pid) is watcher:
                    del self._owner[pid]

    def adopt(self, watcher: _Tree, pid: int, start: int) -> None:
        """File `pid` (started at `start`) as a member of `watcher`'s tree (`lock` held)."""
        old = self._owner.get(pid)
        if old is not None and old is not watcher:
            old.ours.pop(pid, None)  # a reused pid: the old process is gone
        self._owner[pid] = watcher
        watcher.ours[pid] = start
        watcher.seen.add(pid)

    def forget(self, watcher: _Tree, pid: int, start: int) -> None:
        """`pid` of `watcher`'s tree is gone, or is another process now (`lock` held)."""
        if watcher.ours.get(pid) == start:
            del watcher.ours[pid]
            if self._owner.get(pid) is watcher:
                del self._owner[pid]

    def waiting_for(self, not_before: int) -> bool:
        """Whether a live pid left undecided may yet turn out to be of a tree none of whose
        processes started before `not_before`: only one started since may (finding 11)."""
        return any(start >= not_before for start in self.waiting.values())

    def look(self, asked_at: float) -> None:
        """Find the new members of every registered tree, unless a look that began after
        `asked_at` did already. Takes `lock` (not held by the caller), and lets go of it while
        it reads orphans' environments (`_read_then_file`). A look that fails (out of memory,
        out of descriptors) loses nothing for the other trees (finding 8): the next look covers
        its pids again, and the undecided pids are kept (each pass replaces them at its end)."""
        with self.lock:
            if self._looked_at > asked_at:
                return
            range_before = self._last_pid, self._looked_at
            try:
                candidates, listing = self._candidates()
                first = _Pass(self._looked_at, listing, self._retry, None)
                again = [pid for pid in first.old if pid not in candidates]
                self._classify([*candidates, *again] if again else candidates, first)
            except BaseException:
                self._last_pid, self._looked_at = range_before
                raise
            self._retry, self.waiting = first.retry, first.waiting
            self._reading.update(first.to_read)
        if first.to_read:
            self._read_then_file(first)

    def _read_then_file(self, first: _Pass) -> None:
        """Read the environments of the orphans `first` left (without the lock: the read takes
        the orphan's memory-map lock, which it may hold, or a writer may wait for, for long);
        then file them, and what was left undecided for them. Meanwhile other looks leave those
        orphans undecided (`_reading`) and sweeps wait for them: a read that blocks holds up
        this look alone. A read that fails leaves them undecided, for the next look."""
        try:
            read = {pid: _Read(start, *_orphans_environ(pid)) for pid, start in first.to_read.items()}
        except BaseException:
            with self.lock:
                self._reading.difference_update(first.to_read)
            raise
        with self.lock:
            self._reading.difference_update(first.to_read)
            old = dict(self._retry)
            for pid in first.to_read:  # what they were before they were held for the read
                if (prev := first.old.get(pid)) is not None:
                    old[pid] = prev
                else:
                    old.pop(pid, None)
            second = _Pass(time.monotonic(), first.listing, old, read)
            self._classify(first.after_read, second)
            done = set(first.after_read)
            self._retry = {**{p: u for p, u in self._retry.items() if p not in done}, **second.retry}
            self.waiting = {**{p: s for p, s in self.waiting.items() if p not in done}, **second.waiting}

    def _classify(self, candidates: Sequence[int] | set[int], p: _Pass) -> None:
        """File each new process of `candidates` with its tree; leave in `p` the pids left
        undecided, the live ones of those a sweep waits for, and the orphans to read."""
        adopters = _ancestors()
        stats: dict[int, _Stat | None] = {}  # every pid statted in this pass
        # Pids of this pass filed nowhere for a reason that may pass -> whether a final sweep
        # waits for their children: a child of one of them is undecided too, never dropped
        # (findings 2 and 3): its parent may be an orphan of a tree, or may have died during
        # this look (then the child is an orphan now, and the next look reads its marker).
        unsure: dict[int, bool] = {}
        after_read = set(p.after_read)
        pending: dict[int, _Stat] = {}
        for pid in candidates:
            st = stats[pid] = _stat(pid)
            if st is None:  # allocated but not visible: a fork in flight, or gone
                if pid not in self._owner:  # (a member's children are filed by `_is_parent`)
                    self._keep(pid, None, p, waits=False)
                    unsure[pid] = True
                continue
            owner = self._owner.get(pid)
            if owner is not None and owner.ours.get(pid) == st[1]:
                continue  # a member already
            pending[pid] = st
        progress = True
        while pending and progress:  # parents before children
            progress = False
            for pid, st in list(pending.items()):
                ppid = st[0]
                if ppid in pending:
                    continue
                del pending[pid]
                progress = True
                if ppid in unsure:  # its parent is undecided: so is it
                    unsure[pid] = self._keep(pid, st[1], p, waits=unsure[ppid])
                    if ppid in after_read and p.read is None:  # decided once its parent is
                        after_read.add(pid)
                        p.after_read.append(pid)
                    continue
                tree = self._owner.get(ppid)
                if tree is not None and not self._is_parent(tree, ppid, st[1], stats):
                    tree = None
                if tree is None and ppid in adopters:  # an orphan, or a child of the grader or above
                    state, environ = self._orphan(pid, st, p)
                    if state == "reading":  # its environment is to be read: wait for it
                        unsure[pid] = True
                        if pid in p.to_read:  # (by this look: its children are decided after it)
                            after_read.add(pid)
                        continue
                    if state == "unreadable":  # not ours to read, it seems: looked at for a while
                        unsure[pid] = self._keep(pid, st[1], p, waits=False)
                        continue
                    if state == "changing":  # in the middle of an exec: wait for it
                        unsure[pid] = self._keep(pid, st[1], p, waits=True)
                        continue
                    if state == "gone":  # nothing to file; a child it left is an orphan now
                        unsure[pid] = True
                        if p.listing:  # (a zombie stays listed until reaped: not read again)
                            self._other[pid] = (st[1], p.now)
                        continue
                    tree = self._marked(environ)  # ("empty": no environment, so no marker)
                if tree is not None and st[1] >= tree.not_before:
                    if _is_process(pid):
                        self.adopt(tree, pid, st[1])
                    else:  # gone since its stat (or a thread, which has no children)
                        unsure[pid] = True
                elif p.listing:
                    self._other[pid] = (st[1], p.now)

    def _orphan(self, pid: int, st: _Stat, p: _Pass) -> tuple[str, bytes]:
        """(what `pid`, an orphan or a child of the grader or above, says of itself, its
        environment): `_orphans_environ`'s states, read by this look (`p.read`), or "reading":
        its environment is being read, or is to be read by this look or the next (it is held
        undecided, and waited for, until then)."""
        if st[3] or not _is_process(pid):  # a zombie's environment reads empty, a thread's is its
            return "gone", b""  # process's: neither is read, and neither has children to file
        got = p.read.get(pid) if p.read is not None else None
        if got is not None and got.start == st[1]:
            return got.state, got.environ
        if p.read is None and pid not in self._reading:  # (else another look reads it, or the next)
            p.to_read[pid] = st[1]
            p.after_read.append(pid)
        prev = p.old.get(pid)  # held as it was (its deadline applies once it is read)
        if prev is None or prev.start != st[1]:
            prev = _Undecided(st[1], p.now + _UNDECIDED_S)
        p.retry[pid] = prev
        p.waiting[pid] = st[1]
        return "reading", b""

    def _is_parent(self, tree: _Tree, ppid: int, child_start: int, stats: dict[int, _Stat | None]) -> bool:
        """Whether `tree`'s member `ppid` is the parent of a process that started at
        `child_start`: the process at `ppid` now is that member (the same start time), or it is
        gone and started no later than the child. Not when the member has died and another
        process took its pid before its watcher forgot it: that one's children are not the
        tree's (finding 6)."""
        recorded = tree.ours.get(ppid)
        if recorded is None:
            return False
        if ppid not in stats:
            stats[ppid] = _stat(ppid)
        now = stats[ppid]
        if now is None:
            return recorded <= child_start
        return now[1] == recorded

    def _marked(self, environ: bytes) -> _Tree | None:
        """The registered tree whose marker the environment carries, if any."""
        for token in _MARKER.findall(b"\0" + environ):
            if (tree := self._trees.get(token)) is not None:
                return tree
        return None

    def _keep(self, pid: int, start: int | None, p: _Pass, *, waits: bool) -> bool:
        """Look at `pid` again next look: it is undecided. Its process (started at `start`;
        None: none visible) is given up once it is gone, once its pid is another process's, or
        at its deadline: `_UNDECIDED_S` after it was first left undecided with `waits` (a live
        process in the middle of an exec, or the child of an undecided one: a final sweep waits
        for it, see `waiting_for`), else `_UNSEEN_S` (a fork in flight, or a process gone or
        not readable). A live process given up in a whole listing is filed as of no tree, so
        the next listing does not begin it afresh (review A4: an environment never to be read
        was read at every look for ever). Returns `waits`: whether a sweep waits for its
        children."""
        prev = p.old.get(pid)
        if start is None and prev is not None and prev.start is not None:
            return waits  # it was there, and is gone now
        if prev is None or prev.start != start:
            prev = _Undecided(start, p.now + (_UNDECIDED_S if waits else _UNSEEN_S))
        if p.now > prev.until:
            if p.listing and start is not None:
                self._other[pid] = (start, p.now)
            return waits
        p.retry[pid] = prev
        if waits and start is not None:
            p.waiting[pid] = start
        return waits

    def _candidates(self) -> tuple[Sequence[int] | set[int], bool]:
        """(pids that may have joined a tree since the last look, whether from a listing)."""
        now = time.monotonic()
        last = _last_pid()
        prev, self._last_pid = self._last_pid, last
        gap, self._looked_at = now - self._looked_at, now
        if last is not None and prev is not None and gap < _RANGE_GAP_S:
            span = _pids_after(prev, last)
            if span is not None:
                return span, False
        listed = _listed_pids()
        self._recheck_other(listed, now)
        return listed - self._owner.keys() - self._other.keys(), True

    def _recheck_other(self, listed: set[int], now: float) -> None:
        """Keep in `_other` only what is still listed and, for an entry found `_RANGE_GAP_S` ago
        or more, still the same process (stat again: its pid may have been taken by a new
        process since, perhaps a member's child, missed by range looks in between)."""
        for pid in [pid for pid in self._other if pid not in listed]:
            del self._other[pid]
        for pid, (start, at) in list(self._other.items()):
            if now - at >= _RANGE_GAP_S:
                st = _stat(pid)
                if st is None or st[1] != start:
                    del self._other[pid]
                else:
                    self._other[pid] = (start, now)


_discovery = _Discovery()


def _new_discovery_in_child() -> None:
    """A forked child has none of its parent's commands (and the lock may have been held at the
    fork). Reset in place: the package's other modules hold `_discovery` by name."""
    _discovery.__init__()


os.register_at_fork(after_in_child=_new_discovery_in_child)


def _pids_after(prev: int, last: int) -> range | list[int] | None:
    """The pids allocated after `prev` up to `last`, cyclically; None when that is too many."""
    if last >= prev:
        span: range | list[int] = range(prev + 1, last + 1)
    else:  # the allocator wrapped around pid_max
        top = _read_int("/proc/sys/kernel/pid_max") or 1 << 22
        span = [*range(prev + 1, top), *range(1, last + 1)]
    return span if len(span) <= _RANGE_MAX else None


def _orphans_environ(pid: int) -> tuple[bytes, str]:
    """(the environment of `pid`, an orphan, and what it says): "set" (read), "empty" (it has
    none), "changing" (an exec in progress: read again later), "gone" (or a zombie), or
    "unreadable" (not ours to read: another user's, or made undumpable). See `_environ_state`."""
    environ = _read_proc(pid, "environ", 1 << 20)
    if environ:
        return environ, "set"
    state = _environ_state(pid)
    if state == "set":  # an exec ended since the read: read it again
        environ = _read_proc(pid, "environ", 1 << 20)
        if environ:
            return environ, "set"
        state = _environ_state(pid) if environ is None else "changing"
    if environ is None and state != "gone":
        return b"", "unreadable"
    return b"", state
