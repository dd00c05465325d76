"""Sub-command `calibrate`: grade the reference proof of each task on the real toolchain and
record what it cost (seconds per stage, the judge's kernel replay time, peak resident memory), so
that `timeout_s` and `memory_mb` can be set from measurements instead of guesses.

The one-off set-up (the self-test, the judge's build and the task's cache entry) runs first, for
each task, through `warm_cache`, and is reported apart: it is paid once per machine, not per
grade, so it must not feed the time limit. The fit (dataset/cost.py) uses only the stages that
one `timeout_s` deadline covers, and `--timeouts-out` extrapolates it to every task of the set,
so the large tasks get a limit from a few small measured ones.

Only grid tasks are measured: a hard task's reference proof is brute force, which its limit is
built to keep out. A hard task's limit comes from the cost model (dataset/cost.py) with the
measured rate in place of the planned range; `lean-check` measures one hard reference under a
raised limit and passes it in with `--add-measurements`."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

from lean_mod_add_proof.cli import output
from lean_mod_add_proof.cli.exits import EXIT_NOT_JUDGED, EXIT_OK, EXIT_PROBLEM, EXIT_USAGE, print_error
from lean_mod_add_proof.cli.settings import add_grader_flags
from lean_mod_add_proof.cli.taskrun import add_task_flags, start
from lean_mod_add_proof.dataset.cost import (
    BRUTE_FORCE_MARGIN,
    DEFAULT_FLOOR_S,
    DEFAULT_HEADROOM,
    LIMIT_STEP_S,
    NoLimitFits,
    RateFit,
    Rates,
    TimeoutsFile,
    fit_rate,
    format_duration,
    hard_estimate,
    limit_between,
    timeouts_for,
)
from lean_mod_add_proof.dataset.tasks import TaskRecord, in_split, is_hard, load_tasks
from lean_mod_add_proof.grading.steps_log import long_step
from lean_mod_add_proof.grading.toolchain import DOUBLE_BANNER

#: Said before the table of a calibration on the toolchain double.
DOUBLE_MEASURED = (
    "These times are the test double's (tests/toolchain_double: scripts that check no proof), not "
    "Lean's: no limit should be set from them. Install Lean (`lean-mod-add-proof install-lean`)."
)

log = logging.getLogger(__name__)

#: The stages one `timeout_s` deadline covers (routes/replay.py: build, export and judge together,
#: then the statement and axiom checks); the self-test and set-up run in others or beforehand.
TIMED_STAGES: tuple[str, ...] = ("build", "leanchecker", "statement", "axioms")


def timing_row(record: TaskRecord, result: Any, setup_seconds: float = 0.0) -> dict[str, Any]:
    """One task's measurements from its GradeResult (pure). `checked_seconds` is the time of the
    stages the `timeout_s` deadline covers; `setup_seconds` the one-off warm-up before it."""
    judge = [c.seconds for c in result.commands if c.stage == "leanchecker"]
    return {
        "task": record.id,
        "p": record.p,
        "hidden": record.hidden,
        "kernel_mul_adds": record.kernel_mul_adds,
        "accepted": result.accepted,
        "judged": result.judged,
        "reason": result.reason,
        "stage_seconds": result.stage_seconds,
        "kernel_replay_seconds": judge[-1] if judge else None,
        "peak_memory_mb": result.peak_memory_mb,
        "grader_seconds": result.grader_seconds,
        "checked_seconds": round(sum(result.stage_seconds.get(s, 0.0) for s in TIMED_STAGES), 4),
        "setup_seconds": round(setup_seconds, 4),
        "cache": result.cache,
    }


def verdict_word(accepted: bool, judged: bool) -> str:
    """The table's verdict column and the log's outcome (pure)."""
    return "accepted" if accepted else ("REJECTED" if judged else "NOT JUDGED")


async def _calibrate(
    records: list[TaskRecord], tasks_dir: Path, config: Any, progress: Any, rows: list[dict]
) -> None:
    """Measure each task in turn, appending its row to `rows` as soon as it is measured (so that
    an interrupted run still has the rows it measured)."""
    from lean_mod_add_proof.cli.grading import grade_task_for
    from lean_mod_add_proof.constants import reference_submission
    from lean_mod_add_proof.grading.grader import grade, warm_cache

    job = progress.add_task("calibrating", total=len(records))
    for record in records:
        progress.update(job, description=f"{record.id} (p={record.p}, H={record.hidden})")
        task = grade_task_for(record.id, tasks_dir)
        with long_step(log, f"calibrate {record.id}", f"p={record.p}, H={record.hidden}") as step:
            started = time.monotonic()
            await warm_cache(task, config)  # the one-off set-up, kept out of the measurement
            setup = time.monotonic() - started
            result = await grade(reference_submission(record.p), task, config)
            step.outcome = verdict_word(result.accepted, result.judged)
            step.detail = "" if result.accepted else result.reason
        rows.append(timing_row(record, result, setup))
        progress.advance(job)
        if not result.judged:
            break  # nothing will be judged on this machine: say so now


def cmd_calibrate(args: argparse.Namespace) -> int:
    from rich import box
    from rich.progress import Progress
    from rich.table import Table

    console = output.console()
    for flag, value in (("--headroom", args.headroom), ("--floor-s", args.floor_s)):
        if not value > 0:
            print_error(f"calibrate: {flag} {value:g}: must be above 0")
            return EXIT_USAGE
    try:
        added = read_measurements(args.add_measurements) if args.add_measurements else []
    except ValueError as exc:
        print_error(f"calibrate: --add-measurements: {exc}")
        return EXIT_USAGE
    started = start(args, console, "calibrate", "nothing measured")
    if isinstance(started, int):
        return started
    config, records, found = started
    if hard := [r.id for r in records if is_hard(r.split)]:
        print_error(
            f"calibrate: {', '.join(hard)}: calibrate measures grid tasks only (a hard task's reference "
            "proof is brute force, which its limit keeps out); --timeouts-out gives hard tasks limits "
            "from the cost model, and `lean-check` measures one hard reference (docs/dataset.md)"
        )
        return EXIT_USAGE
    records = sorted(records, key=lambda r: (r.kernel_mul_adds, r.id))  # smallest kernel work first
    # The bar is for a terminal; the log lines (grading/steps_log.py) also reach a pipe (CI).
    rows: list[dict] = []
    interrupted = False
    try:
        with (
            long_step(log, "calibrate", f"{len(records)} task(s), sandbox {config.sandbox}") as step,
            Progress(console=console, transient=True) as progress,
        ):
            asyncio.run(_calibrate(records, args.tasks_dir, config, progress, rows))
            words = [verdict_word(r["accepted"], r["judged"]) for r in rows]
            step.detail = ", ".join(f"{words.count(w)} {w}" for w in dict.fromkeys(words))
    except KeyboardInterrupt:  # Ctrl-C: keep what was measured (issue 41), then stop as main says
        interrupted = True
    if found.is_double:
        console.print(f"[bold yellow]{DOUBLE_BANNER}.[/] {DOUBLE_MEASURED}", highlight=False)
    # As in `tasks`: a light box and cells that never wrap or shorten, so 80 columns hold a row.
    table = Table(title=f"reference proofs on {found.label}", box=box.SIMPLE_HEAD, padding=0, pad_edge=False)
    headers = ("task", "mul-adds", "verdict", "set-up s", "build s", "replay s", "checked s", "peak MiB")
    cells = []
    for row in rows:
        verdict = verdict_word(row["accepted"], row["judged"])
        replay = row["kernel_replay_seconds"]
        cells.append(
            (
                row["task"],
                f"{row['kernel_mul_adds']:,}",
                verdict,
                f"{row['setup_seconds']:.1f}",
                f"{row['stage_seconds'].get('build', 0):.1f}",
                "-" if replay is None else f"{replay:.1f}",
                f"{row['checked_seconds']:.1f}",
                str(row["peak_memory_mb"]),
            )
        )
    for i, header in enumerate(headers):
        widest = max((len(c[i]) for c in cells), default=1)
        table.add_column(
            header, justify="left" if header in ("task", "verdict") else "right", min_width=widest
        )
    for c in cells:
        table.add_row(*c)
    console.print(table)
    payload = {
        "toolchain": found.version,
        "toolchain_double": found.is_double,
        "interrupted": interrupted,
        "settings": config.model_dump(mode="json"),
        "tasks": rows,
    }
    if args.out is not None:
        args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        console.print(f"wrote {args.out}", highlight=False)
    if interrupted:
        console.print(f"interrupted: {len(rows)} of {len(records)} task(s) measured", highlight=False)
        raise KeyboardInterrupt  # main() prints the one line and exits 130
    if any(not r["judged"] for r in rows):
        console.print(rows[-1]["reason"], style="yellow", markup=False, highlight=False)
        return EXIT_NOT_JUDGED
    if not all(r["accepted"] for r in rows):
        return EXIT_PROBLEM
    # The largest task is the one with the most kernel work, never the one that took longest: a
    # small task's time can be mostly noise or set-up (issue 29 named the smallest "Largest").
    largest = max(rows, key=lambda r: (r["kernel_mul_adds"], r["task"]))
    slowest = max(rows, key=lambda r: (r["checked_seconds"], r["kernel_mul_adds"]))
    also = (
        ""
        if slowest is largest
        else f"; the slowest was {slowest['task']} ({slowest['checked_seconds']:.1f} s)"
    )
    setup = sum(r["setup_seconds"] for r in rows)
    console.print(
        f"Largest measured: {largest['task']} ({largest['kernel_mul_adds']:,} mul-adds) took "
        f"{largest['checked_seconds']:.1f} s within the time limit and "
        f"{largest['peak_memory_mb']} MiB{also}; "
        f"the one-off set-up (self-test, judge, cache entries) took {setup:.1f} s and is not counted. "
        "Set timeout_s and memory_mb with headroom above the largest task you grade "
        "(docs/operations.md, Calibration).",
        highlight=False,
    )
    fit = fit_rate([(r["kernel_mul_adds"], r["checked_seconds"]) for r in rows + added])
    console.print(
        f"Fit over {fit.n_tasks} task(s)"
        + (f" ({len(added)} from {args.add_measurements})" if added else "")
        + f": {fit.intercept_s:.2f} s + {fit.seconds_per_mul_add * 1e6:.3g} µs "
        "per Int multiply-add (an extrapolation past the largest task measured).",
        highlight=False,
    )
    if args.timeouts_out is not None:
        every = load_tasks(args.tasks_dir)
        grid = [r for r in every if in_split(r.split, "all")]
        limits = timeouts_for([(r.id, r.kernel_mul_adds) for r in grid], fit, args.headroom, args.floor_s)
        hard_limits, hard_rates, notes = hard_timeouts([r for r in every if is_hard(r.split)], fit)
        for line in notes:
            console.print(line, style="yellow", highlight=False)
        limits.update(hard_limits)
        out = TimeoutsFile(
            toolchain=found.version,
            fit=fit,
            headroom=args.headroom,
            floor_s=args.floor_s,
            timeouts=limits,
            hard_rates=hard_rates,
        )
        args.timeouts_out.write_text(out.model_dump_json(indent=2) + "\n", encoding="utf-8")
        longest = max(grid, key=lambda r: (limits[r.id], r.id))
        hard_part = (
            f" and the {len(hard_limits)} hard tasks (the cost model at the rate measured here)"
            if hard_limits
            else " (hard tasks keep their shipped limits)"
        )
        console.print(
            f"wrote {args.timeouts_out}: a timeout_s for the {len(grid)} grid tasks "
            f"(longest {longest.id}: {format_duration(limits[longest.id])}){hard_part}; use it with "
            f"--env.taskset.task.timeouts {args.timeouts_out}",
            highlight=False,
        )
    return EXIT_OK


def read_measurements(path: Path) -> list[dict[str, Any]]:
    """The accepted rows of a measurements file (`calibrate --out`, or `lean-check`'s hard
    reference): each needs `kernel_mul_adds` and `checked_seconds`. ValueError says what is wrong."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON ({exc.msg})") from None
    rows = data.get("tasks") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise ValueError(f"{path}: no `tasks` list (write it with `calibrate --out` or `lean-check`)")
    good = []
    for i, row in enumerate(rows):
        try:
            work, seconds = int(row["kernel_mul_adds"]), float(row["checked_seconds"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{path}: tasks[{i}] needs kernel_mul_adds and checked_seconds") from None
        if work <= 0 or not seconds > 0:
            raise ValueError(f"{path}: tasks[{i}]: kernel_mul_adds and checked_seconds must be positive")
        if row.get("accepted"):
            good.append(row)
    return good


def hard_timeouts(hard: list[TaskRecord], fit: RateFit) -> tuple[dict[str, float], Rates | None, list[str]]:
    """Each hard task's limit from the cost model with the measured rate (÷ or × MEASURED_SPREAD)
    in place of the planned range, the rates used, and warnings (pure). Without a usable rate the
    hard tasks are not listed, so they keep their shipped limits. Where no limit keeps both margins
    the one that keeps brute force out wins: the split exists to be beyond brute force."""
    if not hard:
        return {}, None, []
    if fit.seconds_per_mul_add <= 0:
        return {}, None, ["the fit has no rate (slope 0): hard tasks keep their shipped limits"]
    rates = Rates.measured(fit.seconds_per_mul_add, "the rate measured here")
    limits: dict[str, float] = {}
    notes: list[str] = []
    for record in hard:
        estimate = hard_estimate(record.p, record.hidden, rates)
        if estimate.limit_s is not None:
            limits[record.id] = estimate.limit_s
            continue
        bound = estimate.brute_force_s[0] / BRUTE_FORCE_MARGIN
        step = LIMIT_STEP_S if bound >= LIMIT_STEP_S else 1.0  # a whole second at least
        limits[record.id] = max(1.0, bound // step * step)
        try:
            limit_between(estimate.brute_force_s[0], estimate.packed_s[1])
        except NoLimitFits as exc:
            notes.append(
                f"{record.id}: {exc}; its limit keeps brute force out, and the packed route's margin is lower"
            )
    return limits, rates, notes


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "calibrate",
        help="grade each task's reference proof on the real toolchain and record time and memory",
        description="Exit 0: every reference proof accepted; 1: some rejected; 3: could not judge "
        "(for example no toolchain); 2: usage error.",
    )
    add_task_flags(p, "which grid tasks (default: all; hard tasks are never measured here)")
    p.add_argument("--out", type=Path, default=None, help="write the measurements as JSON here")
    p.add_argument(
        "--timeouts-out",
        type=Path,
        default=None,
        metavar="FILE",
        help="fit the seconds per multiply-add and write a timeout_s here for every task of the grid, "
        "and for every hard task from the cost model at that rate (read by --env.taskset.task.timeouts)",
    )
    p.add_argument(
        "--headroom",
        type=float,
        default=DEFAULT_HEADROOM,
        help=f"each limit is the fitted time times this (default: {DEFAULT_HEADROOM:g})",
    )
    p.add_argument(
        "--floor-s",
        type=float,
        default=DEFAULT_FLOOR_S,
        help=f"no limit below this many seconds (default: {DEFAULT_FLOOR_S:g})",
    )
    p.add_argument(
        "--add-measurements",
        type=Path,
        default=None,
        metavar="FILE",
        help="add the accepted rows of FILE (a `calibrate --out` file, or lean-check's hard reference "
        "measurement) to the fit",
    )
    add_grader_flags(p)
    p.set_defaults(handler=cmd_calibrate)
