"""The axiom judgement's exact reasons (lean_mod_add_proof/grading/axioms.py): the model and the
operator read them, so each names what was found and what is allowed."""

from __future__ import annotations

import pytest

from lean_mod_add_proof.grading.axioms import check_axioms
from lean_mod_add_proof.grading.lean_names import ALLOWED_AXIOMS

ALLOWED = "propext, Classical.choice, Quot.sound"


def test_the_allowed_axioms() -> None:
    assert ALLOWED_AXIOMS == ("propext", "Classical.choice", "Quot.sound")


@pytest.mark.parametrize(
    ("found", "mode", "reason"),
    [
        (["sorryAx"], "subset", f"axiom 'sorryAx' is not allowed (allowed: {ALLOWED})"),
        (["propext", "Foo.ax", "sorryAx"], "subset", f"axiom 'Foo.ax' is not allowed (allowed: {ALLOWED})"),
        (["sorryAx"], "exact", f"axiom 'sorryAx' is not allowed (allowed: {ALLOWED})"),
        (
            ["propext"],
            "exact",
            f"missing axioms Classical.choice, Quot.sound (exact mode requires all of {ALLOWED})",
        ),
        (
            ["Quot.sound", "propext"],
            "exact",
            f"missing axioms Classical.choice (exact mode requires all of {ALLOWED})",
        ),
        (["propext"], "other", "unknown axioms mode 'other'"),
        ([], "", "unknown axioms mode ''"),
    ],
)
def test_reason_is_exact(found: list[str], mode: str, reason: str) -> None:
    assert check_axioms(found, mode) == reason  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["subset", "exact"])
def test_all_three_in_any_order_and_repeated_pass(mode: str) -> None:
    assert check_axioms(["Quot.sound", "Classical.choice", "propext", "propext"], mode) is None  # type: ignore[arg-type]


def test_an_unknown_mode_is_never_a_pass() -> None:
    for mode in ("Subset", "EXACT", "subset ", "none"):
        assert check_axioms([], mode) is not None  # type: ignore[arg-type]
