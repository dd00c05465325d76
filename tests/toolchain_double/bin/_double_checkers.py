# TOOLCHAIN DOUBLE for tests (not Lean; decides nothing about proofs): the independent checkers a
# v4.35 toolchain ships, under their real binary names, command lines and exit codes
# (lean_mod_add_proof/grading/kernels.py cites where each comes from). Each replays the export
# with the double's kernel (_double_export.py `check_export`); nanoda, con-leche and con-ron also
# refuse a use of an axiom outside their permitted list, as they do. Exit 0 accepted, 1 rejected,
# 2 declined; con-leche and con-ron exit 3 on a usage error or a malformed input.
#
#   _double_checkers.py NAME ARGS...
#
# A private copy of the double is scripted by a file `double-checker-NAME` beside bin/, holding
# one word: `reject` (exit 1), `decline` (exit 2), `error` (exit 3), `segv` (SIGSEGV), `abort`
# (SIGABRT, con-ron's out of memory). Deleting bin/NAME makes the checker missing.
from __future__ import annotations

import json
import os
import signal
import sys

sys.dont_write_bytecode = True  # nothing written into the toolchain's bin/ (its manifest)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _double_export import ParseError, Reader, Terms, check_export, expr_ids, name_str  # noqa: E402

STANDARD_AXIOMS = ("propext", "Classical.choice", "Quot.sound")
USAGE_EXIT = {"con-leche": 3, "con-ron": 3}


def used_axioms(path: str) -> list[str]:
    """Axioms some constant of the export refers to (a declared but unused one is not a use)."""
    terms = Terms()
    reader = Reader(terms)
    try:
        with open(path, "rb") as f:
            reader.parse(f.read().decode("utf-8", "replace"))
    except (OSError, ParseError):
        return []
    axioms = {n for n, ci in reader.consts.items() if ci["kind"] == "axiom"}
    used: set = set()
    for ci in reader.consts.values():
        for e in expr_ids(ci):
            used |= {c for c in terms.consts(e) if c in axioms}
    return sorted(name_str(n) for n in used)


def parse(name: str, args: list[str]) -> tuple[str, tuple[str, ...]] | None:
    """(export path, permitted axioms), or None for a command line this checker does not take."""
    if name == "leanchecker-paranoid":
        if args[:2] == ["--silent", "--from-export"] and len(args) == 3:
            return args[2], ()
        return None
    if name == "lean4lean":
        return (args[1], ()) if len(args) == 2 and args[0] == "--import" else None
    if name == "nanoda_bin":
        if len(args) != 1:
            return None
        try:
            with open(args[0], encoding="utf-8") as f:
                config = json.load(f)
            return str(config["export_file_path"]), tuple(config["permitted_axioms"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
    files = [a for a in args if not a.startswith("--jobs=")]
    if len(files) != 1 or files[0].startswith("-"):
        return None
    return files[0], STANDARD_AXIOMS


def main(name: str, args: list[str]) -> int:
    parsed = parse(name, args)
    if parsed is None:
        sys.stderr.write(f"{name} (toolchain double): unexpected command line {args}\n")
        return USAGE_EXIT.get(name, 2)
    export, permitted = parsed
    switch = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", f"double-checker-{name}")
    mode = ""
    if os.path.exists(switch):
        with open(switch, encoding="utf-8") as f:
            mode = f.read().strip()
    if mode == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if mode == "abort":
        os.kill(os.getpid(), signal.SIGABRT)
    scripted = {"reject": 1, "decline": 2, "error": 3}
    if mode in scripted:
        print(f"{name}: scripted exit {scripted[mode]}")
        return scripted[mode]
    why = check_export(export)
    if why is None and name in ("nanoda_bin", "con-leche", "con-ron"):
        bad = [a for a in used_axioms(export) if a not in permitted]
        if bad:
            why = f"unpermitted axiom {bad[0]}"
    if why is not None:
        print(f"{name}: rejected: {why}")
        return 1
    print(f"{name}: accepted")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
