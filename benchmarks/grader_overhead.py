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

Then throughput: one grader process, cached grades, concurrency 1 to 4 x the core count, with
the ratio to concurrency 1 and the grader process's own CPU time per grade (its children
excluded): that CPU time, under one GIL, is what caps one process on a big host.

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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    real = pipeline.run_command

    async def recording(argv: Sequence[str], **kwargs: Any) -> Any:
        env = {k: v for k, v in kwargs["env"].items() if k != TREE_ENV_VAR}
        shown = list(kwargs.get("record_argv") or argv)
        into.append(BareCommand(shown, Path(kwargs["cwd"]), env, kwargs.get("stdout_fd") is not None))
        return await real(argv, **kwargs)

    pipeline.run_command = recording  # type: ignore[assignment]
    try:
        yield
    finally:
        pipeline.run_command = real


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


async def throughput(tmp: Path, n: int, concurrency: int, sandbox: str) -> tuple[float, float]:
    """(grades per second, the grader's own CPU seconds per grade) for `n` cached grades."""
    config = double_config(tmp, sandbox=sandbox, max_concurrent=concurrency)
    await pass_selftest(tmp, sandbox)
    await grade(submission(), grade_task(), config)
    cpu = cpu_seconds()
    start = time.perf_counter()
    results = await asyncio.gather(*(grade(submission(), grade_task(), config) for _ in range(n)))
    elapsed = time.perf_counter() - start
    workdirs.wait_reaped()  # the queued directory removals are this process's CPU too
    assert all(r.accepted for r in results), [r.reason for r in results if not r.accepted][:1]
    return n / elapsed, (cpu_seconds() - cpu) / n


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
        default=16,
        help="grades per concurrency level (at least 4 x the concurrency are run)",
    )
    parser.add_argument(
        "--levels",
        type=lambda text: [int(x) for x in text.split(",")],
        default=None,
        help="concurrency levels, comma-separated (default: 1, 2, 4, ... up to 4 x the core count)",
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

        tput = Table(title="Throughput of one grader process (cached grades)")
        columns = ("sandbox", "max_concurrent", "grades", "grades/s", "ratio to 1", "grader CPU ms/grade")
        for column in columns:
            tput.add_column(column, justify="right")
        for m in modes:
            base = None
            for c in args.levels or levels(cores):
                n = max(args.throughput_grades, 4 * c)
                rate, cpu = asyncio.run(throughput(tmp / f"tp-{m}-{c}", n, c, m))
                base = base or rate
                tput.add_row(m, str(c), str(n), f"{rate:.1f}", f"{rate / base:.2f}", f"{cpu * 1000:.1f}")
        console.print(tput)
        console.print(
            f"[dim]  ({cores} cores: the double's own processes use most of them, so throughput "
            "stops growing near the core count; past it, it must not fall)[/]"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
