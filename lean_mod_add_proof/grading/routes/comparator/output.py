"""Reading `lake comparator`'s and `lake`'s output (pure)."""

from __future__ import annotations

from lean_mod_add_proof.grading.messages import one_line


def lines_of(text: str) -> list[str]:
    # Split on "\n" only: Lean leaves U+2028/U+2029/U+0085 unescaped (lean-facts §0b).
    return [ln.rstrip("\r") for ln in text.split("\n")]


def last_error(text: str) -> str:
    """The last `error: ...` line (what `runChallenge` prints when it gives up), else the last line."""
    lines = [ln.strip() for ln in lines_of(text) if ln.strip()]
    for ln in reversed(lines):
        if ln.startswith("error:"):
            return one_line(ln)
    return one_line(lines[-1]) if lines else "(no output)"
