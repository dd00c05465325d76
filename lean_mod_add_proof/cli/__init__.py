"""The `lean-mod-add-proof` command: one sub-command module per concern."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from lean_mod_add_proof.cli import baseline, calibrate, doctor, grading, setup, tasks, warmcache


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lean-mod-add-proof",
        description="Prove in Lean 4 that a frozen integer network adds modulo p: tasks, grader, tools.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (tasks, grading, doctor, calibrate, baseline, setup, warmcache):
        module.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
