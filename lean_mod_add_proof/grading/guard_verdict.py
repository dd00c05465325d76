"""The guard's verdict, shared by its rule modules (`guard_words.py`, `guard_rules.py`) and its
entry point (`guard.py`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GuardVerdict:
    """The guard's decision. `word` is the offending word or character, `line` is 1-based."""

    passed: bool
    reason: str
    word: str | None = None
    line: int | None = None


def ok() -> GuardVerdict:
    return GuardVerdict(True, "ok")


def fail(reason: str, word: str | None, line: int | None) -> GuardVerdict:
    return GuardVerdict(False, reason, word, line)


def line_of(text: str, pos: int) -> int:
    """The 1-based line of `pos` in `text`."""
    return text.count("\n", 0, pos) + 1
