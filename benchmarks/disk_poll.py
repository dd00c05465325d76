"""What the watcher's disk look costs (grading/process/disk.py), and how much of it is the scan for
files held open with no name left (`process.held_deleted`, the review of the signal filter,
finding 4), measured on this machine against the toolchain double (tests/toolchain_double: not
Lean).

One look (every `DISK_POLL_S`) is the walk of the grade's directory and then the held-file scan of
every live process of the tree; a confirmation of a low work disk scans before the walk too.
Measured here:
- the walk of a real grade directory (a grade of the reference proof, kept with `keep_packages`);
- the scan of a process tree shaped like a sandboxed build (bubblewrap's monitor and init, and a
  command holding `--fds` descriptors, two of them removed files), or the bare command without
  bubblewrap;
- one statvfs (what every poll adds, every `RSS_POLL_S`);
- `holds_unseen_space` (mapped removed files, exiting processes), read only when a low work disk
  is confirmed.
The scan's cost is timed in pairs: each repetition times a look without the scan (the walk alone,
as before this change) and a look with it (the walk, then the scan), in alternating order, back to
back, so a load that changes during the run (this machine is shared) weighs on both sides of each
pair alike; printed are the medians of each side and of the per-pair difference, with its
quartiles. The share of one core is a look every `DISK_POLL_S`.

    .venv/bin/python benchmarks/disk_poll.py [--reps 200] [--fds 24] [--sandbox on|off]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from helpers import double_config, grade_task, submission  # noqa: E402

from lean_mod_add_proof.grading import sandbox, workdirs  # noqa: E402
from lean_mod_add_proof.grading.grader import grade  # noqa: E402
from lean_mod_add_proof.grading.process import (  # noqa: E402
    DISK_POLL_S,
    RSS_POLL_S,
    child_env,
    disk_and_entries,
    held_deleted,
    holds_unseen_space,
)

HOLDER = """
import os, sys, time
keep = []
for i in range(int(sys.argv[1])):
    fd = os.open(f"f{i}", os.O_CREAT | os.O_RDWR, 0o600)
    if i < 2:
        os.unlink(f"f{i}")
        os.posix_fallocate(fd, 0, 1 << 20)
    keep.append(fd)
print("ready", flush=True)
time.sleep(600)
"""


def median_us(fn: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


def timed(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e6


def paired_us(
    without: Callable[[], object], with_it: Callable[[], object], reps: int
) -> tuple[float, float, list[float]]:
    """Medians (µs) of `without` and `with_it`, timed back to back in alternating order, and the
    quartiles of the per-pair difference."""
    a, b, diff = [], [], []
    for i in range(reps):
        if i % 2:
            y, x = timed(with_it), timed(without)
        else:
            x, y = timed(without), timed(with_it)
        a.append(x)
        b.append(y)
        diff.append(y - x)
    return statistics.median(a), statistics.median(b), statistics.quantiles(diff, n=4)


def tree_of(root: int) -> list[int]:
    """`root` and its descendants (by parent pid, from /proc)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def kept_grade_dir(tmp: Path) -> Path:
    """The directory of one grade of the reference proof, kept (`keep_packages`)."""
    cfg = double_config(tmp, keep_packages=True, sandbox="off")
    res = asyncio.run(grade(submission(), grade_task(), cfg, skip_selftest=True))
    assert res.accepted, res.reason
    workdirs.wait_reaped(60)
    kept = [p for p in (tmp / "work").iterdir() if p.name.startswith(workdirs.KEPT_DIR_PREFIX)]
    assert kept, list((tmp / "work").iterdir())
    return kept[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--fds", type=int, default=24)
    parser.add_argument("--sandbox", choices=("on", "off"), default="on")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="disk-poll-") as scratch:
        tmp = Path(scratch)
        grade_dir = kept_grade_dir(tmp)
        used, entries = disk_and_entries([grade_dir])
        statvfs_us = median_us(lambda: os.statvfs(grade_dir), args.reps)

        work = tmp / "holder"
        work.mkdir()
        argv = [sys.executable if args.sandbox == "off" else "/usr/bin/python3", "-c", HOLDER, str(args.fds)]
        env = child_env(work, None, Path("/tmp") if args.sandbox == "on" else work)
        if args.sandbox == "on":
            probe = sandbox.probe_sandbox()
            if not probe.available or probe.bwrap is None:
                print(f"no sandbox here ({probe.reason}); run with --sandbox off")
                return 1
            (tmp / "holder-tmp").mkdir()
            argv = (
                sandbox.bwrap_argv(
                    probe.bwrap,
                    layout=sandbox.host_layout(),
                    toolchain_dir=None,
                    package_dir=work,
                    readonly_files=(),
                    env=env,
                    tmp_dir=tmp / "holder-tmp",
                )
                + argv
            )
        holder = subprocess.Popen(argv, cwd=work, env=env, stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
            pids = tree_of(holder.pid)
            devices = {os.stat(grade_dir).st_dev, os.stat(work).st_dev}
            found = held_deleted(pids, devices)

            def walk() -> object:
                return disk_and_entries([grade_dir])

            def walk_and_scan() -> object:
                disk_and_entries([grade_dir])
                return held_deleted(pids, devices)

            walk_us, look_us, (q1, scan_us, q3) = paired_us(walk, walk_and_scan, args.reps)
            # Only when a low work disk is confirmed (twice then): the tree's maps and stat.
            unseen_us = median_us(lambda: holds_unseen_space(pids, devices), args.reps)
        finally:
            holder.kill()
            holder.wait()
    print(f"grade directory: {entries} entries, {used >> 20} MiB")
    print(
        f"held-file scan of {len(pids)} processes ({'bwrap' if args.sandbox == 'on' else 'bare'}), "
        f"{args.fds} descriptors in the command: found {found.inodes} files / {found.bytes >> 20} MiB"
    )
    print(
        f"{args.reps} pairs: a look without the scan (walk) {walk_us:.0f} µs, with it {look_us:.0f} µs; "
        f"the scan adds {scan_us:.0f} µs per look (paired difference, quartiles {q1:.0f}..{q3:.0f} µs), "
        f"{scan_us / walk_us:.0%} of the walk"
    )
    print(f"one statvfs (each poll, every {RSS_POLL_S * 1000:.0f} ms): {statvfs_us:.1f} µs")
    print(f"the mapping and exit check (twice per confirmation of a low disk only): {unseen_us:.0f} µs")
    print(
        f"a look every {DISK_POLL_S} s is {look_us / 1e6 / DISK_POLL_S:.3%} of one core per running "
        f"command, of which the scan {scan_us / 1e6 / DISK_POLL_S:.3%}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
