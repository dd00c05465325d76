"""The two texts of the trusted judge, both made from the one file `Judge.lean` (pure).

Export mode reads the submission's NDJSON export with `LeanExport.parseStream` (lean4
src/LeanExport/Parse.lean), which needs `import LeanExport.Parse`: on a toolchain that does not
ship that library the whole file fails to compile, olean mode included. So every piece of export
mode sits between a line that is exactly `-- export-mode-begin` and one that is exactly
`-- export-mode-end` (indentation allowed), and the grader makes two texts from the file:

- the export text: the file as it is;
- the olean text: the file with every marked block removed, both marker lines included.

A marker that is unbalanced, nested, or misspelt (a line that starts like one and is not one)
raises `ValueError`, so a broken file can never silently yield a judge with export code left in,
or with shared code cut out. Lines are split on `\\n` alone: a Lean `--` comment ends there
(`str.splitlines()` would also split at U+2028, U+2029 and U+0085, which Lean does not).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from lean_mod_add_proof.grading.result import VerdictFrom

#: Which text of the judge: `olean` (marked blocks removed) or `export` (the file as is), named
#: after what the judge then reads (result.py `VerdictFrom`).
JudgeSource = VerdictFrom

#: The judge's one source file, next to this module.
JUDGE_SOURCE_PATH = Path(__file__).resolve().parent / "Judge.lean"

EXPORT_BEGIN = "-- export-mode-begin"
EXPORT_END = "-- export-mode-end"
#: What both markers start with: a line starting so that is neither marker is an error.
_MARKER_PREFIX = "-- export-mode"
#: Indentation a marker line may carry (no other whitespace: a marker is ASCII).
_INDENT = " \t\r"


def _marker(line: str) -> str | None:
    """The marker `line` is (EXPORT_BEGIN or EXPORT_END), or None for any other line."""
    bare = line.strip(_INDENT)
    if bare in (EXPORT_BEGIN, EXPORT_END):
        return bare
    if bare.startswith(_MARKER_PREFIX):
        raise ValueError(f"malformed export-mode marker: {line!r}")
    return None


def strip_export_blocks(text: str) -> str:
    """`text` without its marked blocks, each removed with both of its marker lines (pure).

    Raises ValueError on an end without a begin, a begin inside a block, a block never closed,
    or a line that starts like a marker and is not one."""
    kept: list[str] = []
    begun_at: int | None = None
    for number, line in enumerate(text.split("\n"), start=1):
        marker = _marker(line)
        if marker == EXPORT_BEGIN:
            if begun_at is not None:
                raise ValueError(f"line {number}: {EXPORT_BEGIN} inside the block begun at line {begun_at}")
            begun_at = number
        elif marker == EXPORT_END:
            if begun_at is None:
                raise ValueError(f"line {number}: {EXPORT_END} without a {EXPORT_BEGIN}")
            begun_at = None
        elif begun_at is None:
            kept.append(line)
    if begun_at is not None:
        raise ValueError(f"line {begun_at}: {EXPORT_BEGIN} is never ended")
    return "\n".join(kept)


@cache
def _source() -> str:
    """The judge's file, read once."""
    return JUDGE_SOURCE_PATH.read_text(encoding="utf-8")


@cache
def judge_text(mode: JudgeSource) -> str:
    """The judge's text for `mode`: the olean text (marked blocks removed), or the export text
    (the file as is, checked to strip cleanly all the same). Read once and cached."""
    source = _source()
    olean = strip_export_blocks(source)
    if mode == "olean":
        return olean
    if mode == "export":
        return source
    raise ValueError(f"unknown judge source: {mode!r}")
