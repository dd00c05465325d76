"""The Weights.lean format: round trips and strict rejection of anything else."""

from __future__ import annotations

import numpy as np
import pytest

from lean_mod_add_proof.constants import theorem_statement
from lean_mod_add_proof.dataset.weights_lean import int_term, parse_weights_lean, render_weights_lean


def _mats(p: int, h: int, seed: int = 0) -> list[list[list[int]]]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-127, 128, size=(p, h)).tolist() for _ in range(3)]


def _text(p: int = 5, h: int = 8) -> str:
    return render_weights_lean(f"p{p:02d}_h{h:02d}_s0", p, h, 0, *_mats(p, h))


def test_int_terms() -> None:
    assert int_term(0) == "Int.ofNat 0"
    assert int_term(12) == "Int.ofNat 12"
    assert int_term(-1) == "Int.negSucc 0"
    assert int_term(-5) == "Int.negSucc 4"


@pytest.mark.parametrize(("p", "h"), [(5, 8), (7, 16), (23, 32)])
def test_round_trip(p: int, h: int) -> None:
    mats = _mats(p, h, seed=p)
    text = render_weights_lean(f"p{p:02d}_h{h:02d}_s1", p, h, 1, *mats)
    p2, e1, e2, w2 = parse_weights_lean(text)
    assert p2 == p and [e1, e2, w2] == mats
    assert render_weights_lean(f"p{p:02d}_h{h:02d}_s1", p, h, 1, e1, e2, w2) == text


def test_layout() -> None:
    text = _text()
    assert text.startswith("import LeanCheckedNetwork.Network\n")
    assert f"def Spec : Prop := {theorem_statement(5)}\n" in text
    assert "def answer (a b : Nat) : Nat := _root_.LeanCheckedNetwork.answer E1 E2 W2 a b\n" in text
    assert text.endswith("end LeanCheckedNetwork.Net\n")
    assert "-" not in "".join(line for line in text.splitlines() if line.startswith("  ["))


def _first_negative(text: str) -> str:
    start = text.index("Int.negSucc ")
    end = start + len("Int.negSucc ")
    while text[end].isdigit():
        end += 1
    return text[start:end]


def test_rejects_signed_literal() -> None:
    text = _text()
    term = _first_negative(text)
    value = -int(term.split()[1]) - 1
    with pytest.raises(ValueError, match=r"not `Int\.ofNat n` or `Int\.negSucc n`"):
        parse_weights_lean(text.replace(term, str(value), 1))


def test_rejects_bare_literal() -> None:
    text = _text().replace("Int.ofNat ", "", 1)
    with pytest.raises(ValueError, match="signed or bare literals"):
        parse_weights_lean(text)


def test_rejects_non_rectangular() -> None:
    text = _text()
    lines = text.splitlines(keepends=True)
    i = next(k for k, line in enumerate(lines) if line.startswith("  ["))
    lines[i + 1] = lines[i + 1].replace("[", "[Int.ofNat 3, ", 1)
    with pytest.raises(ValueError, match="row 1 has 9 entries, expected 8"):
        parse_weights_lean("".join(lines))


def test_rejects_missing_row() -> None:
    text = _text()
    lines = text.splitlines(keepends=True)
    i = next(k for k, line in enumerate(lines) if line.startswith("  ["))
    del lines[i]
    with pytest.raises(ValueError, match="E1 is 4 x 8"):
        parse_weights_lean("".join(lines))


def test_rejects_wrong_spec_modulus() -> None:
    text = _text().replace("= (a + b) % 5", "= (a + b) % 7")
    with pytest.raises(ValueError, match="modulus 7"):
        parse_weights_lean(text)


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        ("import LeanCheckedNetwork.Network", "import Mathlib", "header"),
        ("def W2 :", "def W3 :", "def W2"),
        ("_root_.LeanCheckedNetwork.answer", "LeanCheckedNetwork.answer", "after W2"),
        (
            "end LeanCheckedNetwork.Net\n",
            "end LeanCheckedNetwork.Net\ntheorem x : True := trivial\n",
            "after W2",
        ),
        ("p05_h08_s0", "p05_h16_s0", "task id"),
    ],
)
def test_rejects_other_changes(old: str, new: str, match: str) -> None:
    text = _text()
    assert old in text
    with pytest.raises(ValueError, match=match):
        parse_weights_lean(text.replace(old, new, 1))
