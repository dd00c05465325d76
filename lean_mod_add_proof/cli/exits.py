"""The one exit-code scheme of every `lean-mod-add-proof` command, written down once.

- 0 `EXIT_OK`: accepted, passed, ready, done;
- 1 `EXIT_PROBLEM`: rejected, or the command ran and found a problem (a doctor check, a failed
  canary, a cache entry not built, an install that failed);
- 2 `EXIT_USAGE`: a usage error (bad flag or setting, unknown task, unreadable file); argparse's
  own errors are 2 as well;
- 3 `EXIT_NOT_JUDGED`: could not judge, or could not check at all (no Lean toolchain here, so
  nothing was graded, measured, built or checked);
- 130 `EXIT_INTERRUPTED`: Ctrl-C (one line on stderr; what was measured so far is kept).

The grade verdicts (0, 1, 3) are the grader's own (`grading.result.verdict_exit_code`, which the
runtime read-back checks against too); this module only adds the usage code and the wording.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from lean_mod_add_proof.grading.result import EXIT_ACCEPTED, EXIT_NOT_JUDGED, EXIT_REJECTED

EXIT_OK = EXIT_ACCEPTED
EXIT_PROBLEM = EXIT_REJECTED
EXIT_USAGE = 2
#: Ctrl-C: 128 + SIGINT, what a shell reports for a command SIGINT ended (POSIX `wait` status).
EXIT_INTERRUPTED = 130

__all__ = [
    "COMMANDS_WITHOUT_LEAN",
    "EXIT_HELP",
    "EXIT_HELP_NO_LEAN",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_JUDGED",
    "EXIT_OK",
    "EXIT_PROBLEM",
    "EXIT_USAGE",
]

#: The scheme in one line, shown at the end of every command's --help.
EXIT_HELP = (
    f"exit status: {EXIT_OK} ok; {EXIT_PROBLEM} rejected or a problem found; {EXIT_USAGE} usage error; "
    f"{EXIT_NOT_JUDGED} could not judge (e.g. no Lean toolchain: nothing was checked); "
    f"{EXIT_INTERRUPTED} interrupted (Ctrl-C)"
)
#: The same for a command that needs no Lean and so never exits EXIT_NOT_JUDGED.
EXIT_HELP_NO_LEAN = (
    f"exit status: {EXIT_OK} ok; {EXIT_PROBLEM} a problem found; {EXIT_USAGE} usage error; "
    f"{EXIT_INTERRUPTED} interrupted (Ctrl-C)"
)
#: The commands that never exit EXIT_NOT_JUDGED (their --help shows EXIT_HELP_NO_LEAN).
COMMANDS_WITHOUT_LEAN = frozenset({"configs", "docs"})


#: The one prefix of every error line, whichever command prints it.
ERROR_PREFIX = "lean-mod-add-proof: error: "
#: The one line a command prints on Ctrl-C (then exits EXIT_INTERRUPTED).
INTERRUPTED_LINE = "lean-mod-add-proof: interrupted (Ctrl-C)"


def print_error(message: str, details: str = "") -> None:
    """One error line on stderr with the one prefix, then `details` exactly as given (a recipe
    of commands to paste keeps its lines and spacing: issue 41). A plain print, never rich:
    rich wraps at 80 columns when stderr is a pipe, which breaks a one-line error in two (issue 29)."""
    print(ERROR_PREFIX + " ".join(message.split()), file=sys.stderr)
    if details:
        print(details.rstrip("\n"), file=sys.stderr)


class CliParser(argparse.ArgumentParser):
    """argparse with the same error prefix as the commands' own errors (argparse's own would be
    `lean-mod-add-proof grade: error: ...`), on one line like them: no usage block first (for
    `grade` it ran to dozens of lines, where a bad number got one line; issue 41), and where the
    usage is. The exit code stays argparse's 2 (EXIT_USAGE)."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("lean-mod-add-proof").strip()
        where = f" (see `{self.prog} --help`)"
        print_error((f"{command}: {message}" if command else message) + where)
        raise SystemExit(EXIT_USAGE)
