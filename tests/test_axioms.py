"""Judging the axiom list the trusted judge computed."""

from __future__ import annotations

import pytest

from lean_mod_add_proof.constants import ALLOWED_AXIOMS, theorem_name
from lean_mod_add_proof.grading.axioms import check_axioms

NATIVE_AX = f"{theorem_name(7)}._native.native_decide.ax_1_1"


# --- judging -------------------------------------------------------------------------------------

CHECKS: list[tuple[str, list[str], str, str | None]] = [
    ("subset-none", [], "subset", None),
    ("subset-propext", ["propext"], "subset", None),
    ("subset-all", list(ALLOWED_AXIOMS), "subset", None),
    ("subset-sorryAx", ["propext", "sorryAx"], "subset", "axiom 'sorryAx' is not allowed"),
    ("subset-native", ["propext", NATIVE_AX], "subset", f"axiom '{NATIVE_AX}' is not allowed"),
    ("subset-escaped-propext", ["«propext»"], "subset", "axiom '«propext»' is not allowed"),
    ("subset-first-bad-named", ["Foo.ax", "sorryAx"], "subset", "axiom 'Foo.ax'"),
    ("subset-padded-name", [" propext"], "subset", "is not allowed"),
    ("exact-all", ["Quot.sound", "propext", "Classical.choice"], "exact", None),
    ("exact-missing", ["propext"], "exact", "missing axioms Classical.choice, Quot.sound"),
    ("exact-none", [], "exact", "missing axioms propext, Classical.choice, Quot.sound"),
    ("exact-extra", [*ALLOWED_AXIOMS, "sorryAx"], "exact", "axiom 'sorryAx' is not allowed"),
    ("unknown-mode", ["propext"], "some", "unknown axioms mode"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("found", "mode", "reason"), [(f, m, r) for _, f, m, r in CHECKS], ids=[i for i, *_ in CHECKS]
)
def test_check_axioms(found: list[str], mode: str, reason: str | None) -> None:
    result = check_axioms(found, mode)  # type: ignore[arg-type]
    if reason is None:
        assert result is None
    else:
        assert result is not None and reason in result
