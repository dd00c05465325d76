"""Issue 38: the guard reads Lean as Lean does. Declared names over Lean's tokens (rules 10 and
11, `grading/guard_names.py`), Init's apostrophe tokens in the lexer (`grading/lean_tokens.py`),
and the project rules decided in docs/trust-model.md ("Decisions of issue 38").

No Lean runs here: the readings below are Lean's as its parser sources say (cited in the
modules), judged by the guard alone.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from lean_mod_add_proof.constants import REQUIRED_IMPORT, theorem_signature
from lean_mod_add_proof.grading.guard import check_guard
from lean_mod_add_proof.grading.lean_tokens import APOSTROPHE_TOKENS, LEAD_CHARACTERS
from lean_mod_add_proof.grading.lexer import ID_FIRST_CLASS, ID_REST_CLASS, IDENTIFIER, lex

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


@pytest.mark.parametrize(
    ("body", "shown"),
    [
        ("instance (priority := low) true : Inhabited Nat := ⟨0⟩", "'instance true' on line 3"),
        ("instance (priority := low) true {x : Nat} : Inhabited Nat := ⟨0⟩", "'instance true' on line 3"),
        ("structure S where\n  a : Nat := (1)\n  true : Bool", "'true ...' on line 5"),
        ("theorem t : True := aux\nwhere\naux : True := trivial\ntrue := 1", "'true ...' on line 6"),
        ("def z := 1\nstructure S where\n  @[simp] true := [1]", "'where true' on line 5"),
        ("structure S (n : Nat := 5) := true ::\n  x : Nat", "':= true ::' on line 3"),
        ("inductive T where\n  | a : T\n  | true : T", "'| true' on line 5"),
        ("def f (x : Nat) true : Bool := x == 0", "'true :' on line 3"),
    ],
)
def test_the_message_quotes_how_the_name_is_declared(body: str, shown: str) -> None:
    reason = check_guard(with_body(body)).reason
    assert reason is not None and reason.startswith(shown), reason
    kind = {"'true ...'": " (a structure or class field)", "':= true ::'": " (a structure constructor)"}
    for start, hint in kind.items():
        if shown.startswith(start):
            assert hint in reason, reason


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


# --- properties (hypothesis) ---------------------------------------------------------------------

#: A token of the honest forms, as Lean splits them closely enough to insert something between
#: two: an apostrophe token, a name, a number, a run of ASCII operator characters, any other
#: character.
_TOKEN_RE = re.compile(
    "|".join(re.escape(t.token) for t in APOSTROPHE_TOKENS)
    + rf"|{IDENTIFIER}|[0-9]+|[!#$%&*+\-./:;<=>?@\\^|~]+|\S"
)
#: What is put between two tokens: connectives, `::`, a line break, comments.
INSERTIONS = [" → ", " ↔ ", " ∧ ", " ∨ ", " ¬ ", " = ", " :: ", "\n", "/- c -/", "-- c\n"]


def token_starts(text: str) -> list[int]:
    """Where a token of `text`'s code starts (never inside a comment or a literal)."""
    lexed = lex(text)
    inside = [(x.start, x.end) for x in lexed.lexemes]
    return [
        m.start()
        for m in _TOKEN_RE.finditer(lexed.code)
        if not any(start <= m.start() < end for start, end in inside)
    ]


def insert_between(text: str, pos: int, piece: str) -> str:
    """`text` with `piece` right before the token at `pos`, that token keeping its column (Lean's
    layout reads columns): after a line break the line is indented as before plus four, and at
    a line's first token the piece goes at the end of the line before it."""
    line_start = text.rfind("\n", 0, pos) + 1
    column = pos - line_start
    if piece.endswith("\n"):
        piece += " " * (column + 4 if piece == "\n" else column)
    if line_start > 0 and not text[line_start:pos].strip():
        if piece.startswith("--"):
            return text[: line_start - 1] + " " + piece.rstrip(" ").rstrip("\n") + text[line_start - 1 :]
        return text[: line_start - 1] + " " + piece.strip(" ") + text[line_start - 1 :]
    return text[:pos] + " " + piece + " " + text[pos:]


PROPERTY = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(st.sampled_from(list(HONEST_FORMS.values())), st.data(), st.sampled_from(INSERTIONS))
def test_a_connective_line_break_or_comment_between_tokens_changes_no_verdict(
    body: str, data: st.DataObject, piece: str
) -> None:
    text = with_body(body.replace("sorry_free", "rfl"))
    body_start = text.index(body.replace("sorry_free", "rfl"))
    pos = data.draw(st.sampled_from([p for p in token_starts(text) if p > body_start]))
    noisy = insert_between(text, pos, piece)
    verdict = check_guard(noisy)
    assert verdict.passed, (verdict.reason, noisy)


@PROPERTY
@given(st.sampled_from([c[1] for c in DECLARED]), st.data(), st.sampled_from(["/- c -/", "-- c\n"]))
def test_a_comment_between_tokens_keeps_a_declaration_refused(
    body: str, data: st.DataObject, piece: str
) -> None:
    text = with_body(body)
    body_start = text.index(body)
    pos = data.draw(
        st.sampled_from([p for p in token_starts(text) if body_start < p < body_start + len(body)])
    )
    before = check_guard(text)
    after = check_guard(insert_between(text, pos, piece))
    assert (after.passed, after.word) == (before.passed, before.word) == (False, before.word), after.reason


# --- the apostrophe tokens never desynchronise the code view ---------------------------------------

_ID_FIRST_RE = re.compile(f"[{ID_FIRST_CLASS}]")
_ID_REST_RE = re.compile(f"[{ID_REST_CLASS}]")
#: The reference's token table: the apostrophe tokens and every other character alone.
_REFERENCE_TOKENS = sorted((t.token for t in APOSTROPHE_TOKENS), key=len, reverse=True)


def reference_code_mask(text: str) -> list[bool] | None:
    """Which characters of `text` are code, by a reading written from Lean's `tokenFn` and
    `whitespace` (lean4 src/Lean/Parser/Basic.lean) over a table of the apostrophe tokens and
    single characters, independent of the lexer's regexes; None where Lean would report an error
    (an unterminated literal or comment, a malformed character literal)."""
    n, i = len(text), 0
    code = [True] * n

    def blank(a: int, b: int) -> None:
        for k in range(a, b):
            code[k] = False

    while i < n:
        c = text[i]
        if c in " \t\n":
            i += 1
        elif text.startswith("--", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            blank(i, end)
            i = end
        elif text.startswith("/-", i):
            depth, k = 1, i + 3  # the character after `/-` is skipped unread
            while depth and k < n:
                if text.startswith("/-", k):
                    depth, k = depth + 1, k + 2
                elif text.startswith("-/", k):
                    depth, k = depth - 1, k + 2
                else:
                    k += 1
            if depth:
                return None
            blank(i, k)
            i = k
        elif c == '"':
            k = i + 1
            while k < n and text[k] != '"':
                k += 2 if text[k] == "\\" else 1
            if k >= n:
                return None
            blank(i, k + 1)
            i = k + 1
        elif c == "'" and text[i + 1 : i + 2] == "'":
            return None  # no literal, and no token of the table starts with `''`: an error
        elif c == "'":
            k = i + 1
            if k < n and text[k] == "\\":
                k += 1
            k += 1
            if k >= n or text[k] != "'":
                return None
            blank(i, k + 1)
            i = k + 1
        elif c.isdigit():  # `numberFnAux`: `0x`, `0b`, `0o` or decimal, `_` between digits
            prefix = text[i : i + 2].lower()
            digits = {"0x": "0123456789abcdefABCDEF_", "0b": "01_", "0o": "01234567_"}.get(prefix)
            i += 2 if digits else 0
            digits = digits or "0123456789_"
            while i < n and text[i] in digits:
                i += 1
        else:
            token = next((t for t in _REFERENCE_TOKENS if text.startswith(t, i)), c)
            if _ID_FIRST_RE.match(c):
                k = i + 1
                while k < n and _ID_REST_RE.match(text[k]):
                    k += 1
                i = max(k, i + len(token))
            else:
                i += len(token)
    return code


def lexer_code_mask(text: str) -> list[bool] | None:
    lexed = lex(text)
    if lexed.problem is not None:
        return None
    code = [True] * len(text)
    for lexeme in lexed.lexemes:
        for k in range(lexeme.start, lexeme.end):
            code[k] = False
    return code


#: Context around the tokens: names (primed too), spaces, literals, the lead characters alone,
#: brackets, numbers, line breaks, a lone apostrophe.
_CONTEXT = [
    "a", "h'", "x1", "α", " ", "  ", "\n", '"s"', "'c'", "(", ")", "[", "]", "#", "×", "Σ", "⊕", "0",
    ":", ",", "'",
]  # fmt: skip


def quoted(quote: str, inside: list[str]) -> str:
    """The literal that follows a token: a string around `inside`, or a character literal."""
    if quote == '"':
        return '"' + "".join(inside).replace('"', "") + '"'
    return "'" + ("".join(inside).replace("'", "") or "c")[0] + "'"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from([t.token for t in APOSTROPHE_TOKENS]),
    st.sampled_from(['"', "'"]),
    st.lists(st.sampled_from(_CONTEXT), max_size=10),
    st.lists(st.sampled_from(_CONTEXT), max_size=4),
    st.lists(st.sampled_from(_CONTEXT), max_size=10),
)
def test_an_apostrophe_token_before_a_quote_never_desynchronises_the_code_view(
    token: str, quote: str, before: list[str], inside: list[str], after: list[str]
) -> None:
    text = "".join(before) + " " + token + quoted(quote, inside) + "".join(after) + "\n"
    reference = reference_code_mask(text)
    assume(reference is not None)  # Lean would report an error: no reading to compare
    mine = lexer_code_mask(text)
    assume(mine is not None)  # the lexer refused the file: it never reaches a rule
    assert mine == reference, text


@pytest.mark.parametrize("token", [t.token for t in APOSTROPHE_TOKENS])
@pytest.mark.parametrize("quote", ['"', "'"])
def test_every_apostrophe_token_before_a_quote_reads_as_lean_reads_it(token: str, quote: str) -> None:
    # the property above once for each (token, quote), whatever hypothesis draws
    text = f'def y := a {token}{quoted(quote, ["x"])} b "s" {quoted(quote, ["z"])}\n'
    reference = reference_code_mask(text)
    assert reference is not None and lexer_code_mask(text) == reference


# --- readings the mutation run asked for (benchmarks/mutate.py --modules guard_names) -------------

MORE_DECLARED: list[tuple[str, str, str, int]] = [
    # Lean recovers from the broken `def` at `inductive`: brackets before it do not count
    ("bracket-left-open-before-an-inductive", "def y := (\ninductive T | true", "true", 4),
    ("a constructor name holding X", "inductive T | aXb | true", "true", 3),
    # bars inside a constructor's brackets are a `fun`'s alternatives; the next line's is a constructor
    ("bars-inside-a-constructor",
     "inductive T where\n  | mk (f : Bool → Nat := fun | true => 1 | false => 0) : T\n  | true : T",
     "true", 5),
    ("structure-constructor-after-a-bracketed-default", "structure S (n : Nat := 5) := true ::\n  x : Nat",
     "true", 3),
    ("simple-binder-after-bracketed", "def f (x : Nat) true : Bool := x == 0 && true", "true", 3),
    ("simple-binder-after-braces", "def f {x : Nat} false : Bool := x == 0", "false", 3),
    ("field-after-a-closing-bracket", "structure S where\n  a : Nat := (1)\n  true : Bool", "true", 5),
    ("field-after-a-bang", "structure S where\n  b : Nat := [1][0]!\n  true : Bool", "true", 5),
    ("field-after-a-question-mark",
     "structure S where\n  b : Option Nat := [1][0]?\n  true : Bool", "true", 5),
    ("field-after-a-doc-comment-mid-line", "structure S where\n  a : Nat /-- doc -/ true : Bool", "true", 4),
    ("field-after-an-attribute-mid-line",
     "structure S where\n  a : Nat := 0 @[simp] false : Bool", "false", 4),
    ("structure-with-assign-fields", "structure S :=\n  x : Nat\n  true : Bool", "true", 5),
    ("structure-constructor-then-field-glued", "structure S where\n  mk ::true : Bool", "true", 4),
    ("field-after-a-constructor-line", "structure S where mk ::\n  x : Nat\n  true : Bool", "true", 5),
    ("instance-priority-after-an-earlier-paren",
     "def y := (1)\ninstance (priority := low) true : Inhabited Nat := ⟨0⟩", "true", 4),
    ("structure-constructor-after-two-bracketed-defaults",
     "structure S (n : Nat := 5) (m : Nat := 6) := true ::\n  x : Nat", "true", 3),
    # `where` declarations at column 0 (`sepByIndent`: `checkColGe` against column 0)
    ("a-where-declaration-at-column-0",
     "theorem t : True := aux\nwhere\naux : True := trivial\ntrue := 1", "true", 6),
    ("an-attribute-started-field-indented-further",
     "structure S where\n  a : Nat\n    @[simp] true : Bool", "true", 5),
    ("class-inductive-constructor", "class inductive C | true", "true", 3),
    # a doc comment before the name is found back to its own `/--`, whatever other doc comments
    # the file holds before or after it (killed mutants of `previous` in the mutation run)
    ("doc-comment-after-an-earlier-one",
     "/-- a -/\ndef x := 1\ntheorem t : True := trivial\nwhere /-- doc -/ true := false", "true", 6),
    ("doc-comment-before-a-later-one",
     "theorem t : True := trivial\nwhere /-- doc -/ true := false\n/-- later -/\ndef y := 1", "true", 4),
    ("class-with-assign-fields", "class C :=\n  x : Nat\n  true : Bool", "true", 5),
]  # fmt: skip

MORE_HONEST: list[tuple[str, str]] = [
    # a list argument is no attribute list: `true` after it is an argument, not a field
    ("a-literal-after-a-list-argument-in-a-where-block",
     "def t : Nat := aux\nwhere\n  aux : Nat := f [1] true"),
    ("application-argument-after-two-blanks", "structure S where\n  a : Bool := id  true"),
    ("a-structure-without-fields-then-a-definition", "structure S\ndef f : Bool :=\n  true"),
    ("class-abbrev-parents", "class abbrev C := Nonempty Nat\n                  Inhabited Nat"),
    ("a-parenthesised-function", "example : (id) true = true := rfl"),
    ("a-list-argument-after-an-attribute",
     "@[simp] theorem t (f : List Nat → Bool → Nat) (x : Nat) : f [x] true = f [x] true := rfl"),
    ("an-operator-ending-a-line", "structure S where\n  a : Nat := 1 +\n  true.toNat"),
    # a line left of the fields' column ends them (Lean then reads no field, but an error)
    ("a-dedent-ends-the-fields", "structure S where\n    a : Nat\n  b : Nat\n    true : Bool"),
    ("a-dedent-by-one-ends-the-fields", "structure S where\n    a : Nat\n   b : Nat\n    true : Bool"),
    ("a-named-argument-called-true", "def y := f (true := 1)"),
    ("a-cons-in-brackets", "def y := (true :: [])"),
    ("a-match-after-an-inductive", "inductive D | a\ndef f : Bool → Nat\n  | true => 1\n  | false => 0"),
    ("a-structure-with-no-fields-then-a-line", "structure S where\ndef f : Bool := id\ntrue"),
    ("a-parenthesised-function-after-two-blanks", "structure S where\n  a : Bool := (id)  true"),
    ("a-fun-default-in-a-constructor-after-a-parenthesis",
     "def y := (1)\ninductive T | mk (fX : Bool → Nat := fun | true => 1 | false => 0) : T"),
]  # fmt: skip


def test_an_inductive_that_ends_the_file_reads_its_constructors() -> None:
    # no command after it: the body runs to the end of the text
    from lean_mod_add_proof.grading.guard_names import candidates_re, first_declaration

    def find(name: str) -> str | None:
        return "true" if name == "true" else None

    hit = first_declaration("inductive T | a | true\n", find, candidates_re(("true",), ("Inhabited",)))
    assert hit is not None and hit[:4] == (18, 1, "'| true'", "true")


@pytest.mark.parametrize(
    ("body", "name", "line"), [c[1:] for c in MORE_DECLARED], ids=[c[0] for c in MORE_DECLARED]
)
def test_more_declared_names_are_refused(body: str, name: str, line: int) -> None:
    assert verdict_of(body) == (False, name, line), check_guard(with_body(body)).reason


@pytest.mark.parametrize("body", [b for _, b in MORE_HONEST], ids=[i for i, _ in MORE_HONEST])
def test_more_uses_pass(body: str) -> None:
    verdict = check_guard(with_body(body))
    assert verdict.passed, verdict.reason


# --- a type ascription beside a relation is no binder group ---------------------------------------

#: Honest ascriptions: a relation or connective right before the `(` or right after the `)`.
ASCRIPTIONS = [
    "example : (true : Bool) = true := rfl",
    "theorem t (b : Bool) (h : b = (true : Bool)) : b = true := h",
    "example : (false : Bool) ≠ true := by decide",
    "example : (true : Bool) == true := rfl",
    "example (b : Bool) : b = true ∨ b = (false : Bool) := by cases b <;> simp",
    "example (b : Bool) : (b && (true : Bool)) = b := by cases b <;> rfl",
    "example (p : Prop) (h : p) : p ∧ (true : Bool) = true := ⟨h, rfl⟩",
    "example (f : Bool → Bool) (h : ∀ b, f b = b) : (f true : Bool) = true := h true",
    "example : ((true : Bool) ↔ True) ∨ True := Or.inr trivial",
    "example (c : Nat → Bool) : c 1 = (true : Bool) → c 1 = true := id",
]

#: Still binder groups (or where one could be): no such relation beside them.
ASCRIPTION_LIKE_BINDERS: list[tuple[str, str, int]] = [
    ("def f : (true : Bool) → Bool := fun b => b", "true", 3),
    ("def S : Type := (true : Bool) ×' Nat", "true", 3),
    ("def S : Type := (true : Bool) × Nat", "true", 3),
    ("example : Nat := (fun (true : Bool) => 1) false", "true", 3),
    ("example : ∀ (true : Bool), true = true := fun _ => rfl", "true", 3),
    ("def g (true : Bool) (x : Nat) : Nat := x", "true", 3),
    # `↔` binds looser than a dependent arrow: after it, `(x : T) → U` is one
    ("example (p : Prop) : p ↔ (true : Bool) → p := sorry_free", "true", 3),
    # `→` before and after: a binder of the arrow's
    ("example : True → (true : Bool) → True := fun _ _ => trivial", "true", 3),
    # the type is not read across a line break or a bracket: refused, as a binder would be
    ("example : (true :\n  Bool) = true := rfl", "true", 3),
    ("example : (true : id (Bool)) = true := rfl", "true", 3),
    ("example := ((true : Bool), 1)", "true", 3),
    ("example (f : Bool → Nat) := f (true : Bool)", "true", 3),
    ("def h {true : Bool} : Nat = Nat := rfl", "true", 3),
    # `:=` is no relation: a term at any precedence follows it (`def T := (x : Nat) → Nat`)
    ("def b : Bool := (true : Bool)", "true", 3),
]


@pytest.mark.parametrize("body", ASCRIPTIONS)
def test_an_ascription_beside_a_relation_passes(body: str) -> None:
    verdict = check_guard(with_body(body))
    assert verdict.passed, verdict.reason


@pytest.mark.parametrize(("body", "name", "line"), ASCRIPTION_LIKE_BINDERS)
def test_a_group_no_relation_stands_beside_is_still_a_binder(body: str, name: str, line: int) -> None:
    body = body.replace("sorry_free", "rfl")
    assert verdict_of(body) == (False, name, line), check_guard(with_body(body)).reason


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(ASCRIPTIONS), st.data())
def test_a_block_comment_between_tokens_keeps_an_ascription_passing(body: str, data: st.DataObject) -> None:
    text = with_body(body)
    body_start = text.index(body)
    pos = data.draw(
        st.sampled_from([p for p in token_starts(text) if body_start < p < body_start + len(body)])
    )
    noisy = insert_between(text, pos, "/- c -/")
    verdict = check_guard(noisy)
    assert verdict.passed, (verdict.reason, noisy)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([b.replace("sorry_free", "rfl") for b, _, _ in ASCRIPTION_LIKE_BINDERS]), st.data())
def test_a_block_comment_between_tokens_keeps_a_binder_group_refused(body: str, data: st.DataObject) -> None:
    text = with_body(body)
    body_start = text.index(body)
    pos = data.draw(
        st.sampled_from([p for p in token_starts(text) if body_start < p < body_start + len(body)])
    )
    verdict = check_guard(insert_between(text, pos, "/- c -/"))
    assert not verdict.passed and verdict.word == "true", verdict.reason
