"""How long the grader holds the event loop: the lag of a 10 ms ticker while grading a 10 MB
model reply, against the toolchain double (tests/toolchain_double: not Lean), so the figure is
the grader's own work on the loop (extraction, the guard, writing the submission, reading the
build's output, removing the grade directory), which every concurrent grade would wait for.

The ticker asks to wake every 10 ms; its lag is how late each wake-up came. Two replies, each
graded `--rounds` times after a warm-up grade that builds the cache:
- prose: 10 MB of prose around one ```lean block with the reference proof;
- code: the reference proof in the block, followed by 10 MB of comment lines (the guard, the
  submission file and the build see it all).

    .venv/bin/python benchmarks/loop_lag.py [--mb 10] [--rounds 3] [--sandbox off|on] [--target-ms 50]

Exit status: 0 when the largest lag is within the target, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from helpers import double_config, grade_task, submission  # noqa: E402

from lean_mod_add_proof.grading.grader import grade, grade_reply  # noqa: E402

TICK_S = 0.010


def prose_reply(mb: int) -> str:
    line = "The network adds modulo p; each hidden unit reads one residue and votes.\n"
    filler = line * (mb * (1 << 20) // len(line))
    half = len(filler) // 2
    return f"{filler[:half]}\n```lean\n{submission()}```\n{filler[half:]}"


def code_reply(mb: int) -> str:
    line = "-- the proof unfolds the network and decides each case by evaluation\n"
    padding = line * (mb * (1 << 20) // len(line))
    return f"Here is the proof.\n\n```lean\n{submission()}{padding}```\n"


async def ticker(lags: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        asked = time.perf_counter()
        await asyncio.sleep(TICK_S)
        lags.append(time.perf_counter() - asked - TICK_S)


async def measure(reply: str, tmp: Path, sandbox: str) -> tuple[list[float], float, str]:
    lags: list[float] = []
    stop = asyncio.Event()
    tick = asyncio.create_task(ticker(lags, stop))
    await asyncio.sleep(0.05)  # the ticker runs before the grade starts
    lags.clear()
    started = time.perf_counter()
    res = await grade_reply(reply, grade_task(), double_config(tmp, sandbox=sandbox), skip_selftest=True)
    took = time.perf_counter() - started
    stop.set()
    await tick
    ending = "accepted" if res.accepted else f"{'rejected' if res.judged else 'not judged'}: {res.reason}"
    return lags, took, ending


async def main_async(args: argparse.Namespace, console: Console) -> float:
    with tempfile.TemporaryDirectory(prefix="lmap-lag-") as tmpdir:
        tmp = Path(tmpdir)
        warm = await grade(
            submission(), grade_task(), double_config(tmp, sandbox=args.sandbox), skip_selftest=True
        )
        assert warm.accepted, warm.reason
        table = Table(title=f"10 ms ticker while grading a {args.mb} MB reply (sandbox {args.sandbox})")
        for col in ("reply", "round", "grade s", "ticks", "p50 lag ms", "p99 lag ms", "max lag ms", "ending"):
            table.add_column(col, justify="left" if col in ("reply", "ending") else "right")
        worst = 0.0
        for name, make in (("prose", prose_reply), ("code", code_reply)):
            reply = make(args.mb)
            for r in range(args.rounds):
                lags, took, ending = await measure(reply, tmp, args.sandbox)
                ms = sorted(x * 1000 for x in lags) or [0.0]
                p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
                worst = max(worst, ms[-1])
                table.add_row(
                    name,
                    str(r + 1),
                    f"{took:.2f}",
                    str(len(lags)),
                    f"{statistics.median(ms):.1f}",
                    f"{p99:.1f}",
                    f"{ms[-1]:.1f}",
                    ending[:40],
                )
        console.print(table)
        return worst


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sandbox", choices=("off", "on"), default="off")
    parser.add_argument("--target-ms", type=float, default=50.0)
    args = parser.parse_args()
    console = Console()
    worst = asyncio.run(main_async(args, console))
    verdict = "within" if worst <= args.target_ms else "OVER"
    console.print(f"largest lag {worst:.1f} ms: {verdict} the {args.target_ms:g} ms target")
    return 0 if worst <= args.target_ms else 1


if __name__ == "__main__":
    sys.exit(main())
