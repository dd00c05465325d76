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
from typing import Protocol

from lean_mod_add_proof.grading.process.markers import _MARKER
from lean_mod_add_proof.grading.process.proc import (
    _ancestors,
    _is_process,
    _last_pid,
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
#: How many more looks an undecided pid gets (see `_Discovery._undecided`).
_RETRIES = 3


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


class _Discovery:
    """The one look at new pids for every watcher of this grader process (issue 29).

    Why one: when each watcher looked at every pid allocated since its own last look, whoever's
    it was, and read the environment of every new child of the grader (every command's first
    process is one), a grader running N commands did the classifying work N times over: its
    watchers' CPU per grade grew with N, under one GIL. Now a look reads ns_last_pid once, stats
    each new pid once, reads an orphan's environment once (its marker names its tree), retries an
    undecided pid once per look, and files each new process with the tree of its parent. A
    watcher's own poll then reads only its members.

    Freshness: a watcher's poll asks for a look that began after the poll did (`look`), so what
    it finds is what a look of its own would have found; a look in progress that began earlier
    does not count, and the watcher looks again. Looks, the tree maps and the undecided pids are
    guarded by `lock`. A tree is registered before its command is spawned (so nothing the
    command starts is looked at before its tree is known) and unregistered once its watcher has
    swept it. With no tree registered there is nothing to follow, so the next registration
    starts the pid range afresh (from ns_last_pid read then)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._trees: dict[bytes, _Tree] = {}  # marker token -> its watcher
        self._owner: dict[int, _Tree] = {}  # every member pid of a registered tree -> its tree
        self._last_pid: int | None = None
        self._looked_at = -math.inf  # when the last look began
        self._other: set[int] = set()  # in whole listings: pids known to belong to no tree
        self._retry: dict[int, int] = {}  # undecided pids to look at again -> retries left
        self.waiting: set[int] = set()  # of those, the ones a final sweep waits for

    def register(self, watcher: _Tree) -> None:
        with self.lock:
            if not self._trees:  # nothing followed until now: no pid before this one can matter
                self._last_pid = _last_pid()
                self._looked_at = time.monotonic()
                self._other.clear()
                self._retry.clear()
                self.waiting.clear()
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

    def look(self, asked_at: float) -> None:
        """Find the new members of every registered tree, unless a look that began after
        `asked_at` did already (`lock` held)."""
        if self._looked_at > asked_at:
            return
        candidates, listing = self._candidates()
        retry_left, self._retry, self.waiting = self._retry, {}, set()
        if retry_left:
            candidates = [*candidates, *(pid for pid in retry_left if pid not in candidates)]
        adopters = _ancestors()
        pending: dict[int, tuple[int, int, int, bool, int]] = {}
        for pid in candidates:
            st = _stat(pid)
            if st is None:
                self._undecided(pid, retry_left, exec_=False)
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
                tree: _Tree | None = self._owner.get(ppid)
                if tree is None and ppid in self._retry:  # its parent is undecided: so is it
                    self._undecided(pid, retry_left, exec_=False)
                    continue
                if tree is None and ppid in adopters:  # an orphan, or a child of the grader or above
                    environ = _read_proc(pid, "environ", 1 << 20)
                    if not environ:  # in the middle of an exec, or a zombie: ask again next look
                        self._undecided(pid, retry_left, exec_=True)
                        continue
                    tree = self._marked(environ)
                if tree is not None and st[1] >= tree.not_before and _is_process(pid):
                    self.adopt(tree, pid, st[1])
                elif listing:
                    self._other.add(pid)

    def _marked(self, environ: bytes) -> _Tree | None:
        """The registered tree whose marker the environment carries, if any."""
        for token in _MARKER.findall(b"\0" + environ):
            if (tree := self._trees.get(token)) is not None:
                return tree
        return None

    def _undecided(self, pid: int, retry_left: Mapping[int, int], *, exec_: bool) -> None:
        """Look at `pid` again next time (at most `_RETRIES` times): its pid was allocated but its
        process not visible (a fork in flight, or it is gone), or its environment read empty (an
        exec in progress, or a zombie). Only the latter keeps a final sweep going: a fork in
        flight has a live parent, which keeps its tree's sweep going anyway."""
        left = retry_left.get(pid, _RETRIES)
        if left > 0 and pid not in self._owner:
            self._retry[pid] = left - 1
            if exec_:
                self.waiting.add(pid)

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
        listed = set(map(int, filter(str.isdigit, os.listdir("/proc"))))
        if gap < _RANGE_GAP_S:
            self._other &= listed
        else:
            self._other.clear()  # a pid seen before may belong to someone else by now
        return listed - self._owner.keys() - self._other, True


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
