"""Run a command beside a CPU hog: `python scripts/beside_cpu_hog.py [--hogs N] -- COMMAND...`.

`make test-stress` runs the test suite this way, to show that no test's verdict depends on having
the machine to itself (issue 41). The hog is N busy-looping processes (default: one per core), at
the command's own priority, started before the command and killed, by their own pids, when it ends
(also on Ctrl-C). Exits with the command's status.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys

#: What each hog process runs: a busy loop, nothing else.
BUSY_LOOP = "while True: pass"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="beside_cpu_hog.py", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--hogs", type=int, default=os.cpu_count() or 1, help="busy processes (default: cores)"
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given (put it after --)")
    hogs = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(max(args.hogs, 0))]
    print(
        f"beside_cpu_hog: {len(hogs)} busy process(es) running: {' '.join(str(h.pid) for h in hogs)}",
        flush=True,
    )
    try:
        return subprocess.call(command)
    except KeyboardInterrupt:
        return 128 + signal.SIGINT
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait()


if __name__ == "__main__":
    sys.exit(main())
