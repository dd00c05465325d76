"""When to try again what failed for a reason of the host, not of the toolchain.

A self-test whose canaries could not be judged (a program briefly missing, a full disk, the OOM
killer) and a native-judge build stopped by a host fault say nothing about the toolchain: they
must not condemn a route, or the native judge, for the life of the process. What failed that way
is tried again once its back-off has passed; the back-off doubles with each failure in a row, so
a fault that does not go away costs one attempt per `max_s`. A failure on a verdict (a canary
judged wrongly, a judge that does not compile) is not retried: it stays until the process ends.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

#: The first wait after a transient failure, and the most it grows to (seconds).
FIRST_S = 30.0
MAX_S = 900.0


@dataclass
class Backoff:
    """Per key: when a transiently failed step may run again."""

    first_s: float = FIRST_S
    max_s: float = MAX_S
    clock: Callable[[], float] = time.monotonic
    _due: dict[Hashable, tuple[float, float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def failed(self, key: Hashable) -> float:
        """Record a transient failure of `key`; returns how long until it may run again."""
        with self._lock:
            _, last = self._due.get(key, (0.0, 0.0))
            wait = self.first_s if last <= 0 else min(self.max_s, 2 * last)
            self._due[key] = (self.clock() + wait, wait)
            return wait

    def due(self, key: Hashable) -> bool:
        """Whether `key`'s back-off has passed (True for a key that never failed)."""
        with self._lock:
            at = self._due.get(key)
        return at is None or self.clock() >= at[0]

    def succeeded(self, key: Hashable) -> None:
        with self._lock:
            self._due.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._due.clear()
