"""The grader's own overhead per grade, measured against the toolchain double (tests/
toolchain_double: shell and Python scripts, not Lean), so what is left is the grader. Lean's own
time is not measured here; the floor for a real grade is the judge's single kernel check.

Paired and interleaved, because this machine is noisy: each round runs every Lean command of a
cached grade (the build, the export, the judge) bare (the argv, cwd and environment the grader
gave it, started with subprocess, no limits, no sandbox, no asyncio) and then one full cached
grade, and the overhead of that round is the difference. The figures are medians over the rounds.
The breakdown times the grader's own steps inside the same grades (wrapped here, not in the
grader); "the rest" is what no step accounts for (the event loop, thread hand-offs, bookkeeping).
Compare figures only from an otherwise idle machine: under load every wake-up of the grader's
threads and processes waits for a core, the overhead grows and its quartiles spread (on the
shared 2-core machine, from 12-20 ms to 20-90 ms).

Then throughput: one grader process, cached grades, 1 to 4 x the core count grades in flight,
with the ratio to one in flight, and the grader process's own CPU time per grade (its children
excluded; the process watchers' part apart): that CPU time, under one GIL, is what caps one
process on a big host. Two series: the grader's default `max_concurrent` (cores / threads: the
grades past it wait for a slot), and `max_concurrent` = in flight (all at once: past the core
count the double's processes outnumber the cores, and only the grader's CPU per grade tells
whether its own work grows with the commands running).

    .venv/bin/python benchmarks/grader_overhead.py [--rounds N] [--throughput-grades N] [--levels 1,2,4]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from helpers import double_config, grade_task, submission  # noqa: E402

from lean_mod_add_proof.grading import cache as cachemod  # noqa: E402
from lean_mod_add_proof.grading import native_judge, pipeline, workdirs  # noqa: E402
from lean_mod_add_proof.grading import package as pkgmod  # noqa: E402
from lean_mod_add_proof.grading.grader import grade  # noqa: E402
from lean_mod_add_proof.grading.process import TREE_ENV_VAR  # noqa: E402
from lean_mod_add_proof.grading.process import watcher as watchermod  # noqa: E402
from lean_mod_add_proof.grading.routes import core  # noqa: E402
from lean_mod_add_proof.grading.sandbox import probe_sandbox  # noqa: E402


@dataclass(frozen=True)
class BareCommand:
    """One Lean command of a grade as the grader started it, minus its wrappers."""

    argv: list[str]
    cwd: Path
    env: dict[str, str]
    stdout_to_file: bool


# ---- timing the grader's steps (wrappers installed here; the grader is unchanged) ----------------

#: The grader's steps of a cached grade: (label, module, attribute). Async ones are timed from the
#: caller's side (thread hand-off included); sync ones inside their worker thread.
STEPS: tuple[tuple[str, Any, str], ...] = (
    ("cache check (entry verified)", cachemod, "ensure_entry"),
    ("cache entry copied to the package", workdirs, "copy_entry"),
    ("submission written", pkgmod, "write_submission"),
    ("trusted files re-hashed", pkgmod, "verify_trusted"),
    ("verdict directory assembled", pkgmod, "make_verdict_dir"),
    ("native judge identity check", pipeline, "unchanged"),
    ("grade directory removal queued", workdirs, "remove_grade_dir"),
)


def _timed(fn: Callable[..., Any], label: str, spent: dict[str, float]) -> Callable[..., Any]:
    if asyncio.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                spent[label] += time.perf_counter() - start

        return timed_async

    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - start

    return timed


@contextlib.contextmanager
def timing_steps(spent: dict[str, float]) -> Iterator[None]:
    saved = [(module, name, getattr(module, name)) for _, module, name in STEPS]
    try:
        for label, module, name in STEPS:
            setattr(module, name, _timed(getattr(module, name), label, spent))
        yield
    finally:
        for module, name, fn in saved:
            setattr(module, name, fn)


@contextlib.contextmanager
def capturing_commands(into: list[BareCommand]) -> Iterator[None]:
    """Record each command `pipeline` starts (argv without the sandbox, cwd, environment)."""
    real = core.run_command

    async def recording(argv: Sequence[str], **kwargs: Any) -> Any:
        env = {k: v for k, v in kwargs["env"].items() if k != TREE_ENV_VAR}
        shown = list(kwargs.get("record_argv") or argv)
        into.append(BareCommand(shown, Path(kwargs["cwd"]), env, kwargs.get("stdout_fd") is not None))
        return await real(argv, **kwargs)

    core.run_command = recording  # type: ignore[assignment]
    try:
        yield
    finally:
        core.run_command = real


def run_bare(commands: Sequence[BareCommand], scratch: Path) -> list[float]:
    times = []
    for cmd in commands:
        with open(scratch / "bare-stdout", "wb") if cmd.stdout_to_file else contextlib.nullcontext() as out:
            start = time.perf_counter()
            subprocess.run(
                cmd.argv,
                cwd=cmd.cwd,
                env=cmd.env,
                stdout=out if out is not None else subprocess.DEVNULL,
                stderr=subprocess.DEVNULL if out is not None else subprocess.STDOUT,
                check=True,
            )
            times.append(time.perf_counter() - start)
    return times


def bare_env(commands: list[BareCommand], sandboxed: bool) -> list[BareCommand]:
    """Sandboxed, the environment is the one inside bwrap (TMPDIR=/tmp): bare, TMPDIR is the
    grade's own directory as unsandboxed."""
    if not sandboxed:
        return commands
    fixed = []
    for cmd in commands:
        tmp = cmd.cwd.parent / (pkgmod.JUDGE_TMP if cmd.cwd.name == "verdict" else pkgmod.GRADE_TMP)
        fixed.append(BareCommand(cmd.argv, cmd.cwd, {**cmd.env, "TMPDIR": str(tmp)}, cmd.stdout_to_file))
    return fixed


async def paired(tmp: Path, rounds: int, sandbox: str) -> dict[str, Any]:
    config = double_config(tmp, sandbox=sandbox, max_concurrent=1)
    task = grade_task()
    await pass_selftest(tmp, sandbox)
    native_judge.forget()  # cold: as a new process with an empty cache
    first = await grade(submission(), task, config)  # fills the cache
    assert first.accepted and first.judge_mode == "native", first.reason
    captured: list[BareCommand] = []
    with capturing_commands(captured):
        kept = await grade(submission(), task, config.model_copy(update={"keep_packages": True}))
    assert kept.accepted and kept.cache == "hit", kept.reason
    commands = bare_env(captured, kept.sandboxed)
    names = [Path(c.argv[0]).name for c in commands]
    overheads, totals, bares, processes = [], [], [], []
    steps: dict[str, list[float]] = defaultdict(list)
    per_command: list[list[float]] = [[] for _ in commands]
    for _ in range(rounds):
        bare = run_bare(commands, tmp)
        spent: dict[str, float] = defaultdict(float)
        with timing_steps(spent):
            res = await grade(submission(), task, config)
        assert res.accepted and res.cache == "hit", res.reason
        assert len(res.commands) == len(commands), [c.argv[0] for c in res.commands]
        bares.append(sum(bare))
        totals.append(res.grader_seconds)
        overheads.append(res.grader_seconds - sum(bare))
        processes.append(len(res.commands))
        for i, (rec, b) in enumerate(zip(res.commands, bare, strict=True)):
            per_command[i].append(rec.seconds - b)
        steps["guard"].append(res.stage_seconds.get("guard", 0.0))
        steps["toolchain, sandbox and route"].append(res.stage_seconds.get("toolchain", 0.0))
        for label, _, _ in STEPS:
            steps[label].append(spent[label])
        wrappers = sum(rec.seconds - b for rec, b in zip(res.commands, bare, strict=True))
        accounted = wrappers + sum(v[-1] for v in steps.values())
        steps["the rest (event loop, thread hand-offs)"].append(res.grader_seconds - sum(bare) - accounted)
    return {
        "bare": statistics.median(bares),
        "total": statistics.median(totals),
        "overhead": statistics.median(overheads),
        "overhead_quartiles": statistics.quantiles(overheads, n=4)[::2],
        # Load on a shared machine only ever adds time: the fast tail of each is the least loaded.
        "overhead_fast": statistics.quantiles(totals, n=10)[0] - statistics.quantiles(bares, n=10)[0],
        "processes": statistics.median(processes),
        "cold": len(first.commands),
        "cold_lean": sum(Path(c.argv[0]).name in ("lean", "leanc") for c in first.commands),
        "steps": {label: statistics.median(v) for label, v in steps.items()},
        "commands": {
            f"`{name}`: start, watch, end (record - bare)": statistics.median(v)
            for name, v in zip(names, per_command, strict=True)
        },
    }


def cpu_seconds() -> float:
    """This process's own CPU time (threads included, children not)."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


async def pass_selftest(tmp: Path, sandbox: str) -> None:
    """Grades go through the self-test as in production: it runs once here, in a cache of its
    own (the pass is remembered in this process for every cache directory), so every grade
    measured takes the path of a grader whose self-test passed."""
    res = await grade(submission(), grade_task(), double_config(tmp / "selftest", sandbox=sandbox))
    assert res.accepted, res.reason


@contextlib.contextmanager
def timing_watchers(spent: list[float]) -> Iterator[None]:
    """Add up the CPU time of the process watchers' threads (`watchermod._Watcher.run`)."""
    real = watchermod._Watcher.run

    def timed(watcher: watchermod._Watcher) -> None:
        start = time.thread_time()
        try:
            real(watcher)
        finally:
            spent.append(time.thread_time() - start)  # (list.append: atomic under the GIL)

    watchermod._Watcher.run = timed  # type: ignore[method-assign]
    try:
        yield
    finally:
        watchermod._Watcher.run = real  # type: ignore[method-assign]


@dataclass(frozen=True)
class Throughput:
    rate: float
    """Grades per second."""
    cpu: float
    """The grader process's own CPU seconds per grade (its children excluded)."""
    watchers: float
    """Of that, the process watchers' threads, per grade."""


async def throughput(
    tmp: Path, n: int, in_flight: int, max_concurrent: int | None, sandbox: str
) -> Throughput:
    """`n` cached grades, `in_flight` at a time (as a trainer's concurrent rollouts call the
    grader), with the grader's `max_concurrent` (None: its default, cores / threads)."""
    config = double_config(tmp, sandbox=sandbox, max_concurrent=max_concurrent)
    await pass_selftest(tmp, sandbox)
    await grade(submission(), grade_task(), config)
    slots = asyncio.Semaphore(in_flight)

    async def one() -> Any:
        async with slots:
            return await grade(submission(), grade_task(), config)

    watchers: list[float] = []
    cpu = cpu_seconds()
    start = time.perf_counter()
    with timing_watchers(watchers):
        results = await asyncio.gather(*(one() for _ in range(n)))
    elapsed = time.perf_counter() - start
    workdirs.wait_reaped()  # the queued directory removals are this process's CPU too
    assert all(r.accepted for r in results), [r.reason for r in results if not r.accepted][:1]
    return Throughput(n / elapsed, (cpu_seconds() - cpu) / n, sum(watchers) / n)


def past_the_cores(rates: Mapping[int, float], cores: int) -> str:
    """How the throughput past the core count compares with the best up to it (pure)."""
    upto = [r for c, r in rates.items() if c <= cores]
    past = [r for c, r in rates.items() if c > cores]
    if not upto or not past:
        return "no level on both sides of the core count"
    worst = min(past) / max(upto)
    return f"past {cores} in flight, the lowest is {worst:.2f} x the best up to {cores}"


def scaling_table(
    tmp: Path, modes: Sequence[str], levels_: Sequence[int], grades: int, cores: int
) -> tuple[Table, list[str]]:
    """Throughput at each level of grades in flight, with the grader's default `max_concurrent`
    and with `max_concurrent` = in flight, its ratio to one grade in flight, and a line per
    series on how it holds past the core count."""
    table = Table(title="Throughput of one grader process (cached grades)", box=box.SIMPLE_HEAD)
    # (short headers: the table fits 80 columns; the note under it says what each is)
    columns = ("sandbox", "max conc.", "in flight", "grades", "grades/s", "ratio to 1", "CPU ms", "watchers")
    for column in columns:  # (never narrower than the header's longest word: rich would cut it)
        table.add_column(column, justify="right", min_width=max(map(len, column.split())))
    default = pipeline.default_concurrency(1)
    summary = []
    for m in modes:
        for series in ("default", "= in flight"):
            rates: dict[int, float] = {}
            for c in levels_:
                n = max(grades, 4 * c)
                limit = None if series == "default" else c
                tp = asyncio.run(throughput(tmp / f"tp-{m}-{limit or 0}-{c}", n, c, limit, m))
                rates[c] = tp.rate
                table.add_row(
                    m,
                    f"{default}*" if series == "default" else str(c),
                    str(c),
                    str(n),
                    f"{tp.rate:.1f}",
                    f"{tp.rate / rates[levels_[0]]:.2f}",
                    f"{tp.cpu * 1000:.1f}",
                    f"{tp.watchers * 1000:.1f}",
                    end_section=c == levels_[-1],
                )
            summary.append(f"sandbox {m}, max_concurrent {series}: {past_the_cores(rates, cores)}")
    return table, summary


def levels(cores: int) -> list[int]:
    """1, 2, 4, ... up to 4 x cores, with the core count, 2 x and 4 x cores themselves (pure)."""
    found = {1, cores, 2 * cores, 4 * cores}
    c = 2
    while c < 4 * cores:
        found.add(c)
        c *= 2
    return sorted(found)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=30, help="paired rounds per sandbox mode (>= 30)")
    parser.add_argument(
        "--throughput-grades",
        type=int,
        default=32,
        help="grades per row of the scaling table (at least 4 x the grades in flight are run)",
    )
    parser.add_argument(
        "--levels",
        type=lambda text: [int(x) for x in text.split(",")],
        default=None,
        help="grades in flight, comma-separated (default: 1, 2, 4, ... up to 4 x the core count)",
    )
    args = parser.parse_args()
    console = Console()
    cores = os.cpu_count() or 1
    modes = ["off"] + (["on"] if probe_sandbox().available else [])
    console.print(
        f"[dim]machine: {cores} cores; sandbox modes: {', '.join(modes)}; "
        "toolchain: the test double (not Lean); cache hit; the self-test passed before[/]"
    )
    with tempfile.TemporaryDirectory(prefix="lmap-bench-") as tmpdir:
        tmp = Path(tmpdir)
        figures = {mode: asyncio.run(paired(tmp / f"paired-{mode}", args.rounds, mode)) for mode in modes}
        table = Table(title=f"Per grade, paired with the same commands run bare (median of {args.rounds})")
        table.add_column("")
        for mode in modes:
            table.add_column(f"sandbox={mode}", justify="right")
        rows: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
            ("processes, first grade", lambda f: f"{f['cold']}"),
            ("  of which lean/leanc", lambda f: f"{f['cold_lean']}"),
            ("processes, cached grade (build, export, judge)", lambda f: f"{f['processes']:.0f}"),
            ("the commands run bare (ms)", lambda f: f"{f['bare'] * 1000:.1f}"),
            ("the whole grade (ms)", lambda f: f"{f['total'] * 1000:.1f}"),
            ("grader overhead (grade - bare, paired) (ms)", lambda f: f"{f['overhead'] * 1000:.1f}"),
            (
                "  its quartiles, 25%-75% (ms)",
                lambda f: "-".join(f"{q * 1000:.1f}" for q in f["overhead_quartiles"]),
            ),
            ("  grade - bare, each at its 10th percentile (ms)", lambda f: f"{f['overhead_fast'] * 1e3:.1f}"),
        ]
        first = figures[modes[0]]
        for label in [*first["steps"], *first["commands"]]:
            key = "steps" if label in first["steps"] else "commands"
            rows.append((f"  {label} (ms)", lambda f, k=key, lb=label: f"{f[k].get(lb, 0.0) * 1000:.1f}"))
        for label, cell in rows:
            table.add_row(label, *(cell(figures[m]) for m in modes))
        console.print(table)
        console.print("[dim]  (each step's median; the medians need not add up to the overhead's median)[/]")

        table, summary = scaling_table(
            tmp, modes, args.levels or levels(cores), args.throughput_grades, cores
        )
        console.print(table)
        for line in summary:
            console.print(f"  {line}")
        console.print(
            f"[dim]  ({cores} cores. in flight: grades the caller runs at once, as a trainer's "
            "concurrent rollouts do. max conc.: `max_concurrent`, how many the grader lets run their "
            "commands at once; * its default, cores / threads, queues the rest, so past the core count the "
            "throughput must not fall. max_concurrent = in flight runs them all at once: past the "
            "core count the double's processes outnumber the cores, and what must not grow is the "
            "grader process's own CPU per grade, CPU ms (its children excluded; watchers: the "
            "part of it spent in the process watchers' threads).)[/]"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
