"""The `lean-mod-add-proof` command: one sub-command module per concern. Every command follows
one exit-code scheme (`cli/exits.py`), shown at the end of each `--help`."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from lean_mod_add_proof.cli import (
    baseline,
    calibrate,
    configs,
    docs,
    doctor,
    grading,
    leancheck,
    setup,
    tasks,
    warmcache,
)
from lean_mod_add_proof.cli.exits import (
    COMMANDS_WITHOUT_LEAN,
    EXIT_HELP,
    EXIT_HELP_NO_LEAN,
    EXIT_INTERRUPTED,
    EXIT_PROBLEM,
    EXIT_USAGE,
    INTERRUPTED_LINE,
    CliParser,
    print_error,
)
from lean_mod_add_proof.cli.output import readers_may_leave
from lean_mod_add_proof.grading.steps_log import LOG_FORMAT, LOG_TIME_FORMAT, PACKAGE_LOGGER

DISTRIBUTION = "lean-mod-add-proof"
QUIET_HELP = "no log lines for long steps (self-test, builds, each task) on stderr; warnings still shown"


class StderrLines(logging.StreamHandler):
    """Writes to `sys.stderr` as it is at each record (pytest's capture, rich's live display,
    which passes stderr through above its bar), never to the stream of the first call."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter(LOG_FORMAT, LOG_TIME_FORMAT))

    @property  # type: ignore[override]
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:  # StreamHandler.__init__ sets it
        pass


def configure_logging(quiet: bool) -> None:
    """The package's INFO records to stderr, with or without a terminal, so that the long steps
    show in CI and image-build logs too; `--quiet` keeps warnings and up only. Stdout (tables,
    `--json`) never gets a log line. Idempotent: one handler however often `main` runs."""
    package = logging.getLogger(PACKAGE_LOGGER)
    package.setLevel(logging.WARNING if quiet else logging.INFO)
    if not any(isinstance(h, StderrLines) for h in package.handlers):
        package.addHandler(StderrLines())


def version_text() -> str:
    """`lean-mod-add-proof --version`: the installed distribution's version and the Lean toolchain
    its grader is pinned to."""
    from importlib.metadata import PackageNotFoundError, version

    from lean_mod_add_proof.constants import LEAN_TOOLCHAIN

    try:
        mine = version(DISTRIBUTION)
    except PackageNotFoundError:
        mine = "(not installed)"
    return f"{DISTRIBUTION} {mine} (grades with {LEAN_TOOLCHAIN})"


def build_parser() -> argparse.ArgumentParser:
    parser = CliParser(
        prog="lean-mod-add-proof",
        description="Prove in Lean 4 that a frozen integer network adds modulo p: tasks, grader, tools.",
        epilog=EXIT_HELP,
    )
    parser.add_argument("--version", action="version", version=version_text())
    parser.add_argument("--quiet", action="store_true", help=QUIET_HELP)
    # Not `required`: a bare command prints the list of commands (argparse's own error named
    # none of them, issue 41).
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CliParser)
    for module in (tasks, grading, doctor, calibrate, baseline, setup, warmcache, leancheck, configs, docs):
        module.register(commands)
    for name, sub in commands.choices.items():
        note = EXIT_HELP_NO_LEAN if name in COMMANDS_WITHOUT_LEAN else EXIT_HELP
        sub.epilog = f"{sub.epilog}\n\n{note}" if sub.epilog else note
        # After the command as well as before it; SUPPRESS keeps a --quiet given before it.
        sub.add_argument("--quiet", action="store_true", default=argparse.SUPPRESS, help=QUIET_HELP)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. A reader that stops early (`| head`, `| true`) is handled here, once for
    every command: no traceback, and the command runs on to its own exit status, whenever the
    reader left (`output.ReaderMayLeave`)."""
    try:
        with readers_may_leave():
            try:
                parser = build_parser()
                args = parser.parse_args(argv)
                if args.command is None:
                    parser.print_help(sys.stderr)
                    print(file=sys.stderr)
                    print_error("no command given: name one of the commands above")
                    return EXIT_USAGE
                configure_logging(args.quiet)
                return int(args.handler(args) or 0)
            except KeyboardInterrupt:
                # Ctrl-C: one line, never the two chained tracebacks asyncio.run leaves (the
                # grades' own clean-up has run by now: asyncio.run cancels them and waits).
                print(INTERRUPTED_LINE, file=sys.stderr, flush=True)
                return EXIT_INTERRUPTED
    except BrokenPipeError:  # (a write that went around sys.stdout)
        # Python's documented recipe (library/signal.html, "Note on SIGPIPE"): point stdout at
        # /dev/null so the flush at interpreter exit does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_PROBLEM


if __name__ == "__main__":
    sys.exit(main())
