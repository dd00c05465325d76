"""Judging the axiom list the trusted judge computed (`Judge.lean`'s own walk over the kernel
environment; nothing is read from axiom sets cached in an olean).

Names arrive as `Name.toString` prints them, with `«»` escapes for anything that is not a plain
identifier component, so a look-alike such as `«Classical.choice»` never equals an allowed name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from lean_mod_add_proof.grading.lean_names import ALLOWED_AXIOMS


def check_axioms(found: Sequence[str], mode: Literal["subset", "exact"]) -> str | None:
    """None if `found` is acceptable, else the reason. `subset`: every axiom is one of
    `ALLOWED_AXIOMS`; `exact`: also, all of them are there."""
    allowed = ", ".join(ALLOWED_AXIOMS)
    for axiom in found:
        if axiom not in ALLOWED_AXIOMS:
            return f"axiom '{axiom}' is not allowed (allowed: {allowed})"
    if mode == "subset":
        return None
    if mode == "exact":
        missing = [axiom for axiom in ALLOWED_AXIOMS if axiom not in found]
        if missing:
            return f"missing axioms {', '.join(missing)} (exact mode requires all of {allowed})"
        return None
    return f"unknown axioms mode {mode!r}"
