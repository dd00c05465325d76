"""A soak run of the grader against the toolchain double (tests/toolchain_double: not Lean): N
mixed grades at a given concurrency, with timeouts, output floods, crashes, memory and process
bombs, escaping children, cancellations and cache corruption between waves. At the end it counts
what was left behind: processes carrying the soak's marker, grade and cache temp directories,
open file descriptors and threads of this process; and it prints peak RSS and grades per second.

    .venv/bin/python benchmarks/soak.py [--grades 200] [--concurrency 8] [--sandbox off|on]
                                        [--timeout-s 30] [--seed 0]

The `timeout` kind runs with a 3 s limit (its build sleeps 30 s); every other kind gets
`--timeout-s`, so that CPU contention (32 grades on two cores) does not turn an accepted flood into
a timeout: the soak is about the grader's life cycle, not about how fast the host is. A grade that
stalls ends as "could not judge: the grader stalled" (the watchdog), which is a wrong ending here.

Exit status: 0 when nothing was left behind and every grade ended as its kind should; 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from helpers import double_config, grade_task, processes_with, submission  # noqa: E402

from lean_mod_add_proof.grading.grader import grade  # noqa: E402
from lean_mod_add_proof.grading.result import GradeResult  # noqa: E402

MARK = f"soak{uuid.uuid4().hex[:10]}"

#: kind -> (directives, what a correct ending looks like)
KINDS: dict[str, tuple[tuple[str, ...], str]] = {
    "accept": ((), "accepted"),
    "build-fail": (("build fail soak",), "rejected"),
    "judge-reject": (("judge replay-fail soak",), "rejected"),
    "timeout": ((f"build spawn {MARK}", "build sleep 30"), "rejected"),
    "flood": (("build flood 5000000",), "accepted"),
    "crash": (("judge crash",), "rejected"),
    "memory": (("build alloc 400",), "rejected"),
    "procs": (("build procs 80",), "rejected"),
    "escape": ((f"build escape {MARK}",), "accepted"),
    "cancel": ((f"build spawn {MARK}", "build sleep 30"), "cancelled"),
}


#: The `timeout` kind's limit (its build sleeps 30 s).
TIMEOUT_KIND_S = 3.0
#: The slowest grades seen, for the report.
SLOWEST: list[float] = []


async def timed(coro: Coroutine[Any, Any, GradeResult]) -> GradeResult:
    started = time.monotonic()
    try:
        return await coro
    finally:
        SLOWEST.append(time.monotonic() - started)


def ending(res: object) -> str:
    if res is None:
        return "cancelled"
    if res.accepted:  # type: ignore[attr-defined]
        return "accepted"
    return "rejected" if res.judged else "not judged"  # type: ignore[attr-defined]


def corrupt_cache(cache: Path, rng: random.Random) -> str:
    """One of the cache faults the grader must survive, applied to a random entry."""
    entries = [
        p for p in cache.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name != "selftest"
    ]
    if not entries:
        return "none"
    entry = rng.choice(entries)
    how = rng.choice(["manifest-list", "manifest-null", "olean-garbage", "delete-olean", "dangling-link"])
    try:
        if how == "manifest-list":
            (entry / "manifest.json").write_text("[]")
        elif how == "manifest-null":
            (entry / "manifest.json").write_text("null")
        elif how == "olean-garbage":
            next(entry.rglob("Weights.olean")).write_text("garbage")
        elif how == "delete-olean":
            next(entry.rglob("Network.olean")).unlink()
        elif how == "dangling-link":
            target = entry.with_name(entry.name + ".gone")
            entry.rename(target)
            entry.symlink_to(target.with_name("nowhere"))
    except (OSError, StopIteration):
        return "skipped"
    return how


async def soak(args: argparse.Namespace, tmp: Path, console: Console) -> tuple[Counter, list[str], float]:
    rng = random.Random(args.seed)
    config = double_config(
        tmp,
        sandbox=args.sandbox,
        max_concurrent=args.concurrency,
        timeout_s=args.timeout_s,
        memory_mb=256,
        max_processes=32,
    )
    short = config.model_copy(update={"timeout_s": TIMEOUT_KIND_S})
    kinds = [rng.choice(list(KINDS)) for _ in range(args.grades)]
    outcomes: Counter = Counter()
    wrong: list[str] = []
    started = time.perf_counter()
    wave = max(args.concurrency * 2, 8)
    for first in range(0, len(kinds), wave):
        batch = kinds[first : first + wave]
        tasks = [
            asyncio.create_task(
                timed(grade(submission(*KINDS[k][0]), grade_task(), short if k == "timeout" else config))
            )
            for k in batch
        ]
        for kind, task in zip(batch, tasks, strict=True):
            if kind == "cancel":
                asyncio.get_running_loop().call_later(rng.uniform(0.05, 0.6), task.cancel)
        for kind, task in zip(batch, tasks, strict=True):
            try:
                res = await task
            except asyncio.CancelledError:
                res = None
            got = ending(res)
            outcomes[(kind, got)] += 1
            expected = KINDS[kind][1]
            if got != expected and not (kind == "cancel" and got in ("rejected", "accepted")):
                wrong.append(f"{kind}: expected {expected}, got {got}: {getattr(res, 'reason', '')[:160]}")
        corruption = corrupt_cache(tmp / "cache", rng) if (tmp / "cache").is_dir() else "none"
        console.print(f"[dim]wave {first // wave + 1}: {len(batch)} grades; cache fault: {corruption}[/]")
    return outcomes, wrong, time.perf_counter() - started


def leftovers(tmp: Path, fds_before: int, threads_before: int) -> dict[str, int]:
    time.sleep(0.5)
    work = tmp / "work"
    cache = tmp / "cache"
    return {
        "processes": len(processes_with(MARK)),
        "grade directories": len(list(work.iterdir())) if work.exists() else 0,
        "cache temp directories": len([p for p in cache.glob(".*")]) if cache.exists() else 0,
        "file descriptors (delta)": max(0, len(os.listdir("/proc/self/fd")) - fds_before),
        "threads (delta)": max(0, threading.active_count() - threads_before),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--grades", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--sandbox", choices=("off", "on"), default="off")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout-s", type=float, default=30.0)
    args = parser.parse_args()
    console = Console()
    fds_before, threads_before = len(os.listdir("/proc/self/fd")), threading.active_count()
    with tempfile.TemporaryDirectory(prefix="lmap-soak-") as tmpdir:
        tmp = Path(tmpdir)
        outcomes, wrong, elapsed = asyncio.run(soak(args, tmp, console))
        left = leftovers(tmp, fds_before, threads_before)
    for pid in processes_with(MARK):  # clean up after reporting, so a failure is visible
        os.kill(pid, 9)
    table = Table(title=f"soak: {args.grades} grades, concurrency {args.concurrency}, sandbox {args.sandbox}")
    table.add_column("kind")
    table.add_column("ending")
    table.add_column("count", justify="right")
    for (kind, got), count in sorted(outcomes.items()):
        table.add_row(kind, got, str(count))
    console.print(table)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    console.print(f"{args.grades / elapsed:.1f} grades/s; grader peak RSS {peak_mb:.0f} MiB")
    console.print(f"longest grade {max(SLOWEST, default=0):.1f} s; whole soak {elapsed:.1f} s")
    for name, count in left.items():
        console.print(f"left behind: {name}: {count}")
    for line in wrong:
        console.print(f"[red]wrong ending[/] {line}", highlight=False)
    bad = any(left.values()) or bool(wrong)
    console.print("[bold red]FAILED[/]" if bad else "[bold green]clean[/]")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
