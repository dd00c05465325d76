"""Issue 38: the guard reads Lean as Lean does. Declared names over Lean's tokens (rules 10 and
11, `grading/guard_names.py`), Init's apostrophe tokens in the lexer (`grading/lean_tokens.py`),
and the project rules decided in docs/trust-model.md ("Decisions of issue 38").

No Lean runs here: the readings below are Lean's as its parser sources say (cited in the
modules), judged by the guard alone.
"""

from __future__ import annotations

import pytest

from lean_mod_add_proof.constants import REQUIRED_IMPORT, theorem_signature
from lean_mod_add_proof.grading.guard import check_guard
from lean_mod_add_proof.grading.lean_tokens import APOSTROPHE_TOKENS, LEAD_CHARACTERS
from lean_mod_add_proof.grading.lexer import lex

HEADER = f"import {REQUIRED_IMPORT}\n"
PROOF = f"\n{theorem_signature(7)} := by\n  decide +kernel\n"


def with_body(body: str) -> str:
    return f"{HEADER}\n{body}\n{PROOF}"


def verdict_of(body: str) -> tuple[bool, str | None, int | None]:
    verdict = check_guard(with_body(body))
    return verdict.passed, verdict.word, verdict.line


# --- the misread classes of issue 38: honest forms Lean files as uses, never declarations -------

#: Each is honest Lean that the line patterns refused (issue 38, "Rules 10 and 11 still read
#: structure with patterns over lines").
HONEST_FORMS: dict[str, str] = {
    # a Bool check with a typed quantifier after a connective, on one line
    "bool-check-implies": (
        "def rowCheck (a : Nat) : Bool := a < 7\n"
        "theorem rows : ∀ a, a < 7 → rowCheck a = true → ∀ b : Nat, b < 7 → (a + b) % 7 < 7 := by\n"
        "  intro a _ _ b _\n  exact Nat.mod_lt _ (by decide)"
    ),
    "bool-check-iff": (
        "def rowCheck (a : Nat) : Bool := a < 7\n"
        "theorem rows (a : Nat) : rowCheck a = true ↔ ∀ b : Nat, b = b ∧ a < 7 := by\n"
        "  simp [rowCheck]"
    ),
    "bool-check-or-exists": (
        "theorem ex (c : Bool) : c = false ∨ ∃ k : Nat, k = 0 := by\n  exact .inr ⟨0, rfl⟩"
    ),
    "nonempty-exists": (
        "theorem ne (C : Type) (p : C → Prop) : Nonempty C → ∃ c : C, p c ∨ ¬p c := by\n  sorry_free"
    ),
    # `true`/`false` alone on a line after `then`/`else`: a field's default value
    "structure-then-else": (
        "structure Row where\n  ok : Bool := if 1 < 2 then\n    true\n  else\n    false\n  n : Nat := 0"
    ),
    "class-then-else": (
        "class Flag (α : Type) where\n  on : Bool := if True then\n      true\n    else\n      false"
    ),
    "then-at-field-column": "structure Row where\n  ok : Bool := if 1 < 2 then\n  true\n  else false",
    # an indented namespace after a structure: its lines are no fields
    "indented-namespace": (
        "namespace N\n  structure S where\n    a : Nat\n  def g : Bool := id\n    true\n"
        "  theorem t : (1 == 1) = true := by\n    decide\nend N"
    ),
    "application-argument-on-the-next-line": "structure S where\n  ok : Bool := id\n    true\n  n : Nat := 0",
    # a list-cons pattern starting with a Bool literal
    "cons-pattern": (
        "def allT : List Bool → Bool\n  | [] => true\n  | true :: bs => allT bs\n  | false :: _ => false"
    ),
    "fun-cons-pattern": "def firstTrue : List Bool → Bool := fun\n  | true :: _ => true\n  | _ => false",
    "match-cons-pattern": "def g (l : List Bool) : Nat := match l with\n  | true :: _ => 1\n  | _ => 0",
    # a list built by `::` after `:=` (decided: not a structure constructor outside a structure)
    "assign-cons": "def flags : List Bool := true :: [false]",
    # Init's apostrophe tokens
    "pprod": "def T : Type := Nat ×' Nat\ndef p : Nat ×' Nat := ⟨1, 2⟩",
    "pprod-binder": "def S : Type := (a : Nat) ×' a < 5",
    "psigma": "def S : Type := Σ' a : Nat, a < 5\ndef s : Σ' a : Nat, a < 5 := ⟨0, by decide⟩",
    "psum": "def U : Type := Nat ⊕' Bool",
    "get-elem-proof": (
        "theorem g (l : List Nat) (n : Nat) (h : n < l.length) : l[n]'h ∈ l := List.getElem_mem h"
    ),
    "get-elem-proof-term": "theorem g (l : List Nat) (h : 0 < l.length) : l[0]'(by omega) = l[0]'h := rfl",
    "pprod-then-string": 'def p : Nat ×\'"a".length = 1 := sorry_free',
}


@pytest.mark.parametrize("body", list(HONEST_FORMS.values()), ids=list(HONEST_FORMS))
def test_an_honest_form_passes(body: str) -> None:
    verdict = check_guard(with_body(body.replace("sorry_free", "rfl")))
    assert verdict.passed, verdict.reason


# --- what is still a declaration, read the same way ----------------------------------------------

DECLARED: list[tuple[str, str, str, int]] = [
    # (id, body from line 3, the protected name, its line)
    ("instance-named-like-a-class", "instance Decidable (_ : Unit) : Decidable True := isTrue trivial",
     "Decidable", 3),
    ("instance-named-true", "instance true {_ : Unit} : Inhabited Nat := ⟨0⟩", "true", 3),
    ("instance-priority-then-name", "instance (priority := low) false : Inhabited Nat := ⟨0⟩", "false", 3),
    ("scoped-instance-named", "scoped instance Nonempty : Nonempty Nat := ⟨0⟩", "Nonempty", 3),
    ("field-after-a-complete-line", "structure S where\n  a : Nat\n  true : Bool", "true", 5),
    ("field-after-a-default", "structure S where\n  a : Bool := false\n  true : Bool", "true", 5),
    ("field-binder", "structure S where\n  a : Nat\n  f true : Bool", "true", 5),
    ("where-second-declaration", "theorem t : True := aux\nwhere\n  aux : True := trivial\n  true := 1",
     "true", 6),
    ("structure-constructor-after-assign", "structure S := true ::\n  x : Nat", "true", 3),
    ("forall-binder", "theorem t : ∀ true : Nat, true = true := fun _ => rfl", "true", 3),
    ("exists-binder", "theorem t : ∃ false : Nat, false = 0 := ⟨0, rfl⟩", "false", 3),
    ("psigma-binder", "def S : Type := Σ' true : Nat, true < 5", "true", 3),
    ("fun-binder", "def f : Nat → Nat := fun true => true", "true", 3),
    ("have-binder", "theorem t : True := by\n  have true : True := trivial\n  exact true", "true", 4),
    ("constructor-after-match-free-bar", "inductive T where\n  | a : T\n  | true : T", "true", 5),
]  # fmt: skip


@pytest.mark.parametrize(("body", "name", "line"), [c[1:] for c in DECLARED], ids=[c[0] for c in DECLARED])
def test_a_declared_protected_name_is_refused(body: str, name: str, line: int) -> None:
    assert verdict_of(body) == (False, name, line), check_guard(with_body(body)).reason


def test_the_instance_name_is_what_the_message_quotes() -> None:
    reason = check_guard(with_body("instance Decidable (_ : Unit) : Decidable True := isTrue trivial")).reason
    assert reason.startswith("'instance Decidable' on line 3: nothing may be named like a class")
    reason = check_guard(with_body("instance true {_ : Unit} : Inhabited Nat := ⟨0⟩")).reason
    assert reason.startswith("'instance true' on line 3: nothing may be named `true` or `false`")


def test_deriving_instance_names_no_instance() -> None:
    # `deriving instance C for T` names classes, never an instance's own name
    assert verdict_of("inductive D | up | down\nderiving instance DecidableEq, Inhabited for D")[0]


# --- the apostrophe tokens: Lean's code is never hidden inside what the guard calls a string ----

#: Lean reads `×'` as one token, then a string from the next `"` to the end of line 3, so line 4
#: is code to Lean. A lexer without the token reads `'"'` as a character literal and line 4 as
#: the inside of a string, so no code-only rule would see the instance (issue 38, point 1).
HIDDEN_BY_A_TOKEN = 'def T := Nat ×\'"\' ++ "\ninstance : OfNat Nat 5 := ⟨0⟩\ndef s := "x" -- "'


def test_code_after_an_apostrophe_token_is_read_as_code() -> None:
    text = with_body(HIDDEN_BY_A_TOKEN)
    code = lex(text).code
    assert "instance : OfNat Nat 5" in code  # not blanked: Lean reads it as code
    verdict = check_guard(text)
    assert (verdict.passed, verdict.word, verdict.line) == (False, "instance", 4), verdict.reason


@pytest.mark.parametrize("token", [t.token for t in APOSTROPHE_TOKENS])
@pytest.mark.parametrize("after", ['"x"', "'x'", "x", "(x)"])
def test_an_apostrophe_token_is_one_token_whatever_follows(token: str, after: str) -> None:
    text = f"def y := a {token}{after} b\n"
    lexed = lex(text)
    assert lexed.problem is None
    start = text.index(token)
    # the token is code; what follows it is a literal only when it is one by itself
    assert lexed.code[start : start + len(token)] == token
    literal_starts = [lexeme.start for lexeme in lexed.lexemes]
    assert literal_starts == ([start + len(token)] if after[0] in "\"'" else [])


def test_a_lead_character_after_a_literal_starts_no_token() -> None:
    # `#` ending a raw string is the literal's, so the `'` after it starts a character literal
    lexed = lex("def y := r#\"]\"#'a'\n")
    assert [lexeme.kind for lexeme in lexed.lexemes] == ["string", "char"]
    assert LEAD_CHARACTERS >= {"#", "]"}


# --- decisions of issue 38 (docs/trust-model.md) ---------------------------------------------------

DECIDED_PASSING = [
    "#synth Inhabited Nat",
    "@[norm_cast] theorem c (n : Nat) : ((n : Int) : Int) = n := rfl",
    "@[norm_cast elim, simp] theorem c (n : Nat) : ((n : Int) : Int) = n := rfl",
    "@[elab_as_elim] def myRec {motive : Nat → Sort u} (z : motive 0) (n : Nat) : motive n := sorry_free",
    "set_option profiler true in\ntheorem t : 1 = 1 := rfl",
    "set_option tactic.hygienic false in\ntheorem t : 1 = 1 := rfl",
    "attribute [local instance] Classical.propDecidable",
    "attribute [local instance] Classical.propDecidable in\ntheorem t (p : Prop) : p ∨ ¬p := Classical.em p",
    "def y := true :: []",
]
DECIDED_FAILING = [
    ("attribute [local instance] Nat.decEq", "instance"),
    ("attribute [instance] Classical.propDecidable", "instance"),
    ("attribute [local instance] Classical.propDecidable Nat.decEq", "instance"),
    ("theorem t (a b : Nat) (h : a < b) : a ≤ b := Nat.le_of_lt (h := h)", "h"),
    ("inductive D | a\nderiving instance Repr for D", "instance"),
    ("def my_elab_helper := 1", "elab"),
    ("@[norm_cast squashx] theorem c : True := trivial", "squashx"),
    ("@[simp elim] theorem c : True := trivial", "elim"),
]


@pytest.mark.parametrize("body", DECIDED_PASSING)
def test_a_decided_form_passes(body: str) -> None:
    verdict = check_guard(with_body(body.replace("sorry_free", "z")))
    assert verdict.passed, verdict.reason


@pytest.mark.parametrize(("body", "word"), DECIDED_FAILING)
def test_a_decided_form_fails(body: str, word: str) -> None:
    verdict = check_guard(with_body(body))
    assert (verdict.passed, verdict.word) == (False, word), verdict.reason
