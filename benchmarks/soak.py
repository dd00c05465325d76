"""A soak run of the grader against the toolchain double (tests/toolchain_double: not Lean): N
mixed grades at a given concurrency, with timeouts, output floods, crashes, memory and process
bombs, escaping children, cancellations and cache corruption between waves. At the end it counts
what was left behind: processes carrying the soak's marker, grade and cache temp directories,
open file descriptors and threads of this process; and it prints peak RSS and grades per second.

    .venv/bin/python benchmarks/soak.py [--grades 200] [--concurrency 8] [--sandbox off|on]
                                        [--timeout-s 30] [--seed 0] [--runs 1]

The `timeout` kind runs with a 3 s limit (its build sleeps 30 s); every other kind gets
`--timeout-s`, so that CPU contention (32 grades on two cores) does not turn an accepted flood into
a timeout: the soak is about the grader's life cycle, not about how fast the host is. A grade that
stalls ends as "could not judge: the grader stalled" (the watchdog), which is a wrong ending here.

`--runs N` repeats the soak with seeds seed .. seed+N-1 (fresh directories each time) and ends with
one line per run. A run that does not finish within `--run-timeout-s` prints every task's stack
and fails.

Exit status: 0 when nothing was left behind and every grade ended as its kind should, in every
run; 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import io
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

from lean_mod_add_proof.grading import workdirs  # noqa: E402
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
    """One of the cache faults the grader must survive, applied to a random task entry (not the
    compiled judge's `judge-*` entry: a judge changed behind the grader's back is "could not
    judge" by design, which this soak's kinds do not expect)."""
    entries = [
        p
        for p in cache.iterdir()
        if p.is_dir() and not p.name.startswith((".", "judge-")) and p.name != "selftest"
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


def grader_threads() -> int:
    """Live threads, without the grade-directory reaper's fixed pool (`workdirs.reap_later`)."""
    return sum(not t.name.startswith(workdirs.REAPER_THREAD_PREFIX) for t in threading.enumerate())


def leftovers(tmp: Path, fds_before: int, threads_before: int) -> dict[str, int]:
    time.sleep(0.5)
    workdirs.wait_reaped(timeout=30)  # queued grade-directory removals (none is abandoned)
    work = tmp / "work"
    cache = tmp / "cache"
    return {
        "processes": len(processes_with(MARK)),
        "grade directories": len(list(work.iterdir())) if work.exists() else 0,
        "cache temp directories": len([p for p in cache.glob(".*")]) if cache.exists() else 0,
        "file descriptors (delta)": max(0, len(os.listdir("/proc/self/fd")) - fds_before),
        "threads (delta)": max(0, grader_threads() - threads_before),
    }


class SoakHung(Exception):
    pass


async def guarded(args: argparse.Namespace, tmp: Path, console: Console) -> tuple[Counter, list[str], float]:
    """`soak`, failing (with every task's stack) instead of waiting forever if a run hangs."""
    job = asyncio.ensure_future(soak(args, tmp, console))
    done, _ = await asyncio.wait({job}, timeout=args.run_timeout_s)
    if not done:
        for task in asyncio.all_tasks():
            if task is not asyncio.current_task():
                buf = io.StringIO()
                task.print_stack(file=buf, limit=20)
                console.print(buf.getvalue(), highlight=False, markup=False)
        raise SoakHung(f"the soak did not finish within {args.run_timeout_s:g} s")
    return job.result()


def one_run(args: argparse.Namespace, console: Console) -> dict[str, object]:
    SLOWEST.clear()
    fds_before, threads_before = len(os.listdir("/proc/self/fd")), grader_threads()
    with tempfile.TemporaryDirectory(prefix="lmap-soak-") as tmpdir:
        tmp = Path(tmpdir)
        try:
            outcomes, wrong, elapsed = asyncio.run(guarded(args, tmp, console))
        except SoakHung as exc:
            console.print(f"[bold red]HUNG[/] seed {args.seed}: {exc}")
            for pid in processes_with(MARK):
                os.kill(pid, 9)
            os._exit(1)  # asyncio.run would wait for the stuck tasks
        left = leftovers(tmp, fds_before, threads_before)
    for pid in processes_with(MARK):  # clean up after reporting, so a failure is visible
        os.kill(pid, 9)
    table = Table(
        title=f"soak: {args.grades} grades, concurrency {args.concurrency}, sandbox {args.sandbox}, "
        f"seed {args.seed}"
    )
    table.add_column("kind")
    table.add_column("ending")
    table.add_column("count", justify="right")
    for (kind, got), count in sorted(outcomes.items()):
        table.add_row(kind, got, str(count))
    console.print(table)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    longest = max(SLOWEST, default=0.0)
    console.print(f"{args.grades / elapsed:.1f} grades/s; grader peak RSS {peak_mb:.0f} MiB")
    console.print(f"longest grade {longest:.1f} s; whole soak {elapsed:.1f} s")
    for name, count in left.items():
        console.print(f"left behind: {name}: {count}")
    for line in wrong:
        console.print(f"[red]wrong ending[/] {line}", highlight=False)
    bad = any(left.values()) or bool(wrong)
    console.print("[bold red]FAILED[/]" if bad else "[bold green]clean[/]")
    return {
        "seed": args.seed,
        "clean": not bad,
        "rate": args.grades / elapsed,
        "longest": longest,
        "elapsed": elapsed,
        "wrong": len(wrong),
        "left": sum(left.values()),
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
    parser.add_argument("--runs", type=int, default=1, help="repeat with seeds seed, seed+1, ...")
    parser.add_argument("--run-timeout-s", type=float, default=900.0, help="a run taking longer has hung")
    args = parser.parse_args()
    console = Console()
    first = args.seed
    runs = []
    for i in range(args.runs):
        args.seed = first + i
        runs.append(one_run(args, console))
    if args.runs > 1:
        table = Table(title=f"{args.runs} soak runs: concurrency {args.concurrency}, sandbox {args.sandbox}")
        for col in ("seed", "ending", "grades/s", "longest grade s", "whole run s"):
            table.add_column(col, justify="right")
        for r in runs:
            ending = "clean" if r["clean"] else f"FAILED ({r['wrong']} wrong, {r['left']} left)"
            table.add_row(
                str(r["seed"]), ending, f"{r['rate']:.1f}", f"{r['longest']:.1f}", f"{r['elapsed']:.1f}"
            )
        console.print(table)
        console.print(f"{sum(bool(r['clean']) for r in runs)} of {args.runs} runs finished clean")
    return 0 if all(r["clean"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
