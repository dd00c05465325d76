"""The guard's token table held against the toolchain's own: `TokenTable.lean` run with the
toolchain's `lean --run`, its listing compared with `lean_tokens` (`compare_token_table`).

`lean-check` and `doctor --selftest` print the one line this gives ("guard token table:
matches", "... differs: ...", or "... not checked: ..."), so that a wrong belief of the lexer
about Lean's tokens shows, never stays silent. A mismatch does not stop grading (the decision
and why: docs/trust-model.md, "The guard's token table").

The program is the grader's own and reads only the toolchain's library, so it runs unsandboxed,
like the judge's trusted build step, in a fresh directory under the work root, through
`process.run_command` under a deadline and the usual caps. Its `main` imports `Init` with no
extension's import function and no initializer run; the frontend's own `import Lean`, which
elaborates the program, loads Lean's extensions and runs the toolchain's own `[init]`
declarations, as for `lean --run Judge.lean` (audit of TokenTable.lean, F3).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from lean_mod_add_proof.grading.lean_tokens import (
    TOKEN_TABLE_LEAN,
    TokenTableCheck,
    compare_token_table,
    parse_token_listing,
)
from lean_mod_add_proof.grading.package import lean_path
from lean_mod_add_proof.grading.process import HostFault, Limits, child_env, find_prlimit, run_command

#: Seconds `lean --run TokenTable.lean` may take: it elaborates `import Lean` (an estimate of a
#: few seconds, as for `lean --run Judge.lean`; no Lean ran here), then imports `Init`.
TOKEN_TABLE_SECONDS = 300.0
#: Its memory cap: `lean --run` with `import Lean` needs about 1 GB (an estimate, lean-facts §0b).
TOKEN_TABLE_MEMORY_MB = 4096
#: Its listing is some thousand short lines.
TOKEN_TABLE_OUTPUT_BYTES = 1 << 20
#: The line's first words, in every outcome.
LINE_PREFIX = "guard token table"


@dataclass(frozen=True)
class TokenTableReport:
    """What running the program found."""

    line: str
    """The line to print."""
    check: TokenTableCheck | None
    """The comparison, when the program ran and printed a whole listing."""

    @property
    def matches(self) -> bool:
        return self.check is not None and self.check.matches


def not_checked(why: str) -> TokenTableReport:
    return TokenTableReport(f"{LINE_PREFIX}: not checked: {why}", None)


def token_table_argv(lean: Path, toolchain_dir: Path) -> list[str]:
    """The command (pure): the shell's own options before `--run` (src/util/shell.cpp)."""
    library = toolchain_dir / "lib" / "lean"
    return [str(lean), "-j", "1", "--run", TOKEN_TABLE_LEAN.name, "--toolchain-lib", str(library)]


def report_of(exit_code: int | None, output: str) -> TokenTableReport:
    """The report for one run's exit code and output (pure)."""
    if exit_code != 0:
        tail = " ".join(output.strip().splitlines()[-3:])[:300]
        return not_checked(f"TokenTable.lean exited with {exit_code}: {tail or 'no output'}")
    tokens = parse_token_listing(output)
    if tokens is None:
        return not_checked("TokenTable.lean printed no whole listing")
    check = compare_token_table(tokens)
    return TokenTableReport(check.line(), check)


async def run_token_table(
    toolchain_dir: Path, lean: Path, *, work_root: Path | None = None, timeout_s: float = TOKEN_TABLE_SECONDS
) -> TokenTableReport:
    """Run `TokenTable.lean` on the toolchain at `toolchain_dir` and compare its table with the
    guard's. Never raises for what the toolchain or the host does: that is a "not checked" line."""
    try:
        if work_root is not None:
            work_root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="token-table-", dir=work_root) as tmp:
            where = Path(tmp)
            shutil.copyfile(TOKEN_TABLE_LEAN, where / TOKEN_TABLE_LEAN.name)
            scratch = where / "tmp"
            scratch.mkdir()
            out = await run_command(
                token_table_argv(lean, toolchain_dir),
                stage="toolchain",
                cwd=where,
                env={
                    **child_env(where, toolchain_dir / "bin", scratch),
                    "LEAN_PATH": lean_path(toolchain_dir),
                },
                deadline=time.monotonic() + timeout_s,
                output_cap_bytes=TOKEN_TABLE_OUTPUT_BYTES,
                tail_chars=TOKEN_TABLE_OUTPUT_BYTES,
                limits=Limits(
                    memory_mb=TOKEN_TABLE_MEMORY_MB,
                    max_processes=16,
                    max_disk_mb=64,
                    max_file_mb=64,
                    disk_paths=(where,),
                ),
                prlimit=find_prlimit(),
            )
    except HostFault as fault:
        return not_checked(f"could not run TokenTable.lean: {fault.reason}")
    except OSError as exc:
        return not_checked(f"could not prepare TokenTable.lean's directory: {exc.strerror or exc}")
    if out.timed_out:
        return not_checked(f"TokenTable.lean took more than {timeout_s:g} s")
    if out.limit_exceeded:
        return not_checked(f"TokenTable.lean stopped: {out.limit_exceeded}")
    return report_of(out.record.exit_code, out.text)
