"""The guard on files as a strong Lean 4 user writes them, and on the constructs it must refuse
(issue 25): comments and strings never trigger a rule the seed does not name, and a comment put
between any two tokens never changes a verdict, whichever way.

No Lean runs here: these files are judged by the guard alone (whether Lean then accepts the proofs
is the build's business, tested elsewhere with the toolchain double and real Lean).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lean_mod_add_proof.constants import REQUIRED_IMPORT, reference_submission, theorem_signature
from lean_mod_add_proof.grading.guard import GUARD_RULES, SEED_BANNED_WORDS, check_guard
from lean_mod_add_proof.grading.lexer import lex

HEADER = f"import LeanCheckedNetwork.Network\nimport {REQUIRED_IMPORT}\n"
PROOF = f"\n{theorem_signature(7)} := by\n  decide +kernel\n"


def with_body(body: str) -> str:
    return f"{HEADER}\n{body}\n{PROOF}"


# --- honest files --------------------------------------------------------------------------------

#: Each body is what a careful author writes around the proof: prose comments that explain it in
#: the words Lean users use (`instance`, `true:`, `#pairs`, `import`, `where false`, `| true`, ...),
#: helper lemmas, structures, instances of the allowed classes, matches, strings and characters.
HONEST_BODIES: dict[str, str] = {
    "decide-prose": (
        "/-!\n# Why `decide` works\n\n"
        "Core has a `Decidable` instance for `a < b` and for bounded `∀`, so the\n"
        "whole statement is decidable; `decide +kernel` asks the kernel to evaluate that instance.\n"
        "We import nothing beyond the two modules: the import of `Weights` gives `Spec`.\n-/"
    ),
    "results-table": (
        "/- Results table (a = row, b = column):\n"
        "| true | false |\n"
        "true: every pair checked; where false would mean a wrong answer.\n"
        "#pairs = 49, #rows = 7. DecidableEq: derived for the helper type below. -/\n"
        "def pairs : Nat := 7 * 7"
    ),
    "comment-in-binder": "def scaled (n /- the class index -/ : Nat) : Nat := 2 * n",
    "comment-after-paren-name": "theorem named : Nat.succ (n := 3) = 4 := rfl -- (n := 3) names the argument",
    "comment-in-option": "example : 2 + 2 = 4 := by\n  decide (kernel := /- the kernel decides -/ true)",
    "line-comment-in-option": "example : 2 + 2 = 4 := by\n  decide (kernel := -- the kernel\n    true)",
    "or-pattern": "def isBool (b : Bool) : Nat := match b with\n  | true | false => 1",
    "or-pattern-proof": (
        "theorem or_true' (b : Bool) : (b || true) = true := by\n  cases b <;> rfl\n\n"
        "theorem two_cases (b : Bool) : b = true ∨ b = false := match b with\n"
        "  | true => Or.inl rfl\n  | false => Or.inr rfl\n\n"
        "example (b : Bool) : (b && b) = b := match b with\n  | true | false => rfl"
    ),
    "equation-compiler": "def toNat : Bool → Nat\n  | true => 1\n  | false => 0",
    "structure-deriving": (
        "/-- A pair of inputs. -/\nstructure Pair where\n  a : Nat\n  b : Nat\n  ok : Bool := true\n"
        "  count : Nat := 0\nderiving Repr, DecidableEq, Inhabited"
    ),
    "deriving-instance": "inductive Dir | up | down\nderiving instance DecidableEq, Inhabited for Dir",
    "decidable-forall": (
        "def Small (n : Nat) : Prop := n < 7\n\ninstance : ∀ n, Decidable (Small n) := fun n => Nat.decLt n 7"
    ),
    "decidable-arrow": (
        "def Small (n : Nat) : Prop := n < 7\n\n"
        "instance instDecSmall : (n : Nat) → Decidable (Small n) := fun n => Nat.decLt n 7"
    ),
    "decidable-instance-binders": (
        "structure Box (α : Type) where\n  val : α\n\n"
        "instance {α : Type} [DecidableEq α] : DecidableEq (Box α) := fun x y =>\n"
        "  if h : x.val = y.val then isTrue (by cases x; cases y; simp_all)\n"
        "  else isFalse (by intro e; cases e; exact h rfl)"
    ),
    "decidable-pred": (
        "def Even' (n : Nat) : Prop := n % 2 = 0\ninstance : DecidablePred Even' := fun n => Nat.decEq _ _"
    ),
    "inhabited-where": (
        "structure Pt where\n  x : Nat\n  y : Nat\n\ninstance : Inhabited Pt where\n  default := ⟨0, 0⟩"
    ),
    "decidable-parens": "def P (n : Nat) : Prop := n < 5\ninstance : (Decidable (P 1)) := Nat.decLt 1 5",
    "nonempty": "instance : Nonempty Nat := ⟨0⟩ -- the instance is only an example",
    "helper-lemmas": (
        "theorem mod_small (a : Nat) (h : a < 7) : a % 7 = a := Nat.mod_eq_of_lt h\n\n"
        "/-- Every row, proved by the kernel. -/\n"
        "theorem rows : ∀ a, a < 7 → ∀ b, b < 7 → (a + b) % 7 < 7 := by\n"
        "  intro a _ b _\n  exact Nat.mod_lt _ (by decide)"
    ),
    "strings-and-chars": (
        'def banner : String := "instance : OfNat Nat 1 -- not code; (kernel := myCfg) #pairs"\n'
        "def quote : Char := '\"'\ndef tick : Char := '\\''\n"
        'def msg (n : Nat) : String := s!"checked {n} pairs, instance found: {decide (n = 49)}"'
    ),
    "raw-string": 'def raw : String := r#"a "quoted" instance true : Bool"#',
    "set-options": (
        "set_option maxRecDepth 10000 in\n"
        "set_option maxHeartbeats 400000 in\n"
        "theorem big : 2 ^ 10 = 1024 := by decide"
    ),
    "simp-config": (
        "example (a : Nat) : a + 0 = a := by\n  simp (config := { decide := true }) only [Nat.add_zero]"
    ),
    "eq-true": (
        "theorem beq_self' : (3 == 3) = true := by decide\ntheorem beq_ne : (2 == 3) = false := by decide"
    ),
    "bool-true-default-lines": (
        "structure Flags where\n  fast : Bool := true\n  safe : Bool := false\n  depth : Nat := 3"
    ),
    "namespace-section": (
        "namespace Helpers\n\n/-- The row check. -/\ndef row (a : Nat) : Bool := a < 7\n\n"
        "theorem row_true : row 3 = true := rfl\n\nend Helpers"
    ),
    "where-aux": (
        "def sumTo (n : Nat) : Nat := go n 0\n"
        "where\n"
        "  go : Nat → Nat → Nat\n"
        "    | 0, acc => acc\n"
        "    | k + 1, acc => go k (acc + k + 1)"
    ),
    "fin-match": "def f3 : Fin 3 → Nat\n  | ⟨0, _⟩ => 0\n  | ⟨1, _⟩ => 1\n  | ⟨_, _⟩ => 2",
    "unicode-names": "def α₁ : Nat := 1\ntheorem h₁' : α₁ = 1 := rfl",
    "calc": (
        "example (a b : Nat) (h : a = b) : a + 0 = b := calc\n  a + 0 = a := Nat.add_zero a\n  _ = b := h"
    ),
    "percent-spaced": "theorem m : (3 + 5) % 7 = 1 := by decide",
    "instance-prose-docstring": (
        "/-- This uses the `Decidable` instance that core provides; no `instance` is declared here,\n"
        "and `true:` below is prose. true: fine. -/\ntheorem fine : 1 < 2 := by decide"
    ),
}

#: Whole files, each proving the task's theorem its own way (`@SIG@` is its signature).
_WHOLE_FILES: dict[str, str] = {
    "open-in": HEADER
    + """
open LeanCheckedNetwork.Net in
/-- The whole table: 49 pairs, checked by the kernel (`decide +kernel` reduces the `Decidable`
instance of the bounded quantifiers; no `instance` is declared here). -/
@SIG@ := by
  decide +kernel
""",
    "rows": HEADER
    + """
namespace LeanCheckedNetwork.Net

/-! ## Row lemmas
Each row `a` is checked separately (true: faster kernel reduction). -/

private theorem row (a : Nat) (ha : a < 7) : ∀ b, b < 7 → answer a b = (a + b) % 7 := by
  match a, ha with
  | 0, _ | 1, _ | 2, _ => decide +kernel
  | 3, _ | 4, _ | 5, _ | 6, _ => decide +kernel

theorem adds_mod_7 : ∀ a, a < 7 → ∀ b, b < 7 → answer a b = (a + b) % 7 :=
  fun a ha => row a ha

end LeanCheckedNetwork.Net
""",
    "fin-forall": HEADER
    + """
-- Restate over `Fin 7` so that `decide` sees a finite type: Fin has a `DecidableEq` instance and
-- `Nat.decidableBallLT` handles `∀ a < 7`.
theorem aux : ∀ a : Fin 7, ∀ b : Fin 7, LeanCheckedNetwork.Net.answer a b = (a + b : Nat) % 7 := by
  decide +kernel

@SIG@ :=
  fun a ha b hb => aux ⟨a, ha⟩ ⟨b, hb⟩
""",
    "bool-check": HEADER
    + """
/-- `check` is `true` iff every pair is right; `decide`-free: we evaluate the `Bool`. -/
def check : Bool := (List.range 7).all fun a => (List.range 7).all fun b =>
  LeanCheckedNetwork.Net.answer a b == (a + b) % 7

theorem check_eq : check = true := by decide +kernel

@SIG@ := by
  intro a ha b hb
  have h := check_eq
  simp only [check, List.all_eq_true, List.mem_range, beq_iff_eq] at h
  exact h a ha b hb
""",
    "set-option-in": HEADER
    + """
set_option maxRecDepth 100000 in
set_option maxHeartbeats 0 in
@SIG@ := by
  decide (config := { kernel := true })
""",
    "structure-helper": HEADER
    + """
/-- A pair with its expected answer. -/
structure Case where
  a : Nat
  b : Nat
  expected : Nat
  deriving Repr, DecidableEq

def cases : List Case := (List.range 7).flatMap fun a => (List.range 7).map fun b => ⟨a, b, (a + b) % 7⟩

instance : Inhabited Case := ⟨⟨0, 0, 0⟩⟩

@SIG@ := by
  decide +kernel
""",
    "comments-everywhere": HEADER
    + """
theorem LeanCheckedNetwork.Net.adds_mod_7 : -- the required statement
    ∀ a, a < 7 → -- a is a class index
    ∀ b, b < 7 → /- b too -/ LeanCheckedNetwork.Net.answer a b = (a + b) % 7 := by
  -- `decide +kernel`: the kernel evaluates the Decidable instance (import of Weights gives Spec)
  decide +kernel -- where false would mean a wrong pair; true: all 49 pass
""",
    "tactic-or-pattern": HEADER
    + """
theorem bcases (b : Bool) : (b || !b) = true := by
  cases b with
  | true | false => rfl

@SIG@ := by
  decide +kernel
""",
    "instance-where-decidable": HEADER
    + """
def Good (a b : Nat) : Prop := LeanCheckedNetwork.Net.answer a b = (a + b) % 7

instance (a b : Nat) : Decidable (Good a b) := by unfold Good; exact inferInstance

@SIG@ := by
  decide +kernel
""",
    "calc-omega": HEADER
    + """
theorem small (a : Nat) (h : a < 7) : a % 7 = a := by omega

@SIG@ := by
  intro a ha b hb
  revert a b
  decide +kernel
""",
}
WHOLE_FILES = {name: text.replace("@SIG@", theorem_signature(7)) for name, text in _WHOLE_FILES.items()}


HONEST_FILES = (
    WHOLE_FILES
    | {name: with_body(body) for name, body in HONEST_BODIES.items()}
    | {
        "reference-5": reference_submission(5),
        "reference-7": reference_submission(7),
    }
)


@pytest.mark.parametrize("text", list(HONEST_FILES.values()), ids=list(HONEST_FILES))
def test_honest_file_passes(text: str) -> None:
    verdict = check_guard(text)
    assert verdict.passed, verdict.reason


# --- refused constructs --------------------------------------------------------------------------

#: (body, the word the verdict names): each is the only reason its file is refused.
REFUSED_BODIES: dict[str, tuple[str, str]] = {
    # the class read out of a comment (issue 25's bypass)
    "class-in-comment": ("instance (priority := high) /- : Inhabited -/ : OfNat Nat 100 := ⟨5⟩", "instance"),
    "class-after-binders": ("instance : ∀ n, OfNat Nat n := fun n => ⟨n⟩", "instance"),
    "class-after-arrow": ("instance : (n : Nat) → OfNat Nat n := fun n => ⟨n⟩", "instance"),
    "class-in-parens": ("instance : (Coe Bool Nat) := ⟨Bool.toNat⟩", "instance"),
    "deriving-instance": ("inductive T | a\nderiving instance Repr for T", "instance"),
    # shadowing the allowed classes
    "field-named-class": ("structure S where\n  n : Nat\n  Inhabited rest : Type", "Inhabited"),
    "binder-named-class": ("def f (Decidable : Type) := 1", "Decidable"),
    "constructor-named-class": ("inductive C where\n  | Nonempty : C", "Nonempty"),
    "def-named-class": ("def DecidableEq := 1", "DecidableEq"),
    # shadowing `true` and `false`
    "def-true": ("namespace N\ndef true : Bool := Bool.false\nend N", "true"),
    "field-run": ("structure S where\n  n : Nat\n  true other : Bool", "true"),
    "field-binders": ("structure S where\n  n : Nat\n  true (k : Nat) : Bool", "true"),
    "field-default": ("structure S where\n  n : Nat\n  true := Bool.false", "true"),
    "structure-constructor": ("structure S := true ::\n  n : Nat", "true"),
    "structure-constructor-where": ("structure S where\n  true ::\n  n : Nat", "true"),
    "constructors": ("inductive B | true | false", "true"),
    "binder": ("def g (a true : Bool) : Bool := a", "true"),
    "binder-run-first": ("def g (true a : Bool) : Bool := a", "true"),
    "binder-run-lines": ("def g (true\n    a : Bool) : Bool := a", "true"),
    "constructor-before-arrow": ("inductive T | a | true\n  | x => 1", "true"),
    # configuration values that are not literals (rule 9)
    "config-name": ("example : 1 = 1 := by decide (kernel := myCfg)", "kernel"),
    "config-in-interpolation": ('def s : String := s!"{(by decide (kernel := myCfg) : 1 = 1)}"', "kernel"),
    # commands and words in code
    "hash-command": ("#exit", "#exit"),
    "project-word": ("def e := Environment", "Environment"),
    "attribute": ("@[tactic foo] def x := 1", "tactic"),
}


@pytest.mark.parametrize(("body", "word"), list(REFUSED_BODIES.values()), ids=list(REFUSED_BODIES))
def test_refused_construct_is_refused(body: str, word: str) -> None:
    verdict = check_guard(with_body(body))
    assert not verdict.passed
    assert verdict.word == word, verdict.reason
    assert verdict.line is not None and f"line {verdict.line}" in verdict.reason
    # a message for our own rules never quotes a comment
    assert "priority := high) /-" not in verdict.reason


def test_seed_words_still_match_in_comments_and_strings() -> None:
    for body in ("-- no sorry here", "/- admit -/", 'def s := "native_decide"', "/-- uses IO -/\ndef x := 1"):
        assert not check_guard(with_body(body)).passed, body


def test_a_comment_or_line_break_after_import_is_whitespace() -> None:
    for header in (f"import\n  {REQUIRED_IMPORT}\n", f"import /- the weights -/ {REQUIRED_IMPORT}\n"):
        verdict = check_guard(header + PROOF)
        assert verdict.passed, verdict.reason


def test_import_in_prose_is_not_read_as_an_import() -> None:
    # the old reading quoted the comment: "import 'already' on line N is not allowed"
    verdict = check_guard(with_body("-- the import already gives us Spec\ndef x := 1"))
    assert verdict.passed, verdict.reason
    verdict = check_guard(with_body("def x := 1\nimport already"))
    assert not verdict.passed and "'already'" in verdict.reason and "line 5" in verdict.reason


# --- a comment between any two tokens never changes a verdict ------------------------------------

#: Comment text for our own rules' words (never the seed's): what an honest comment says.
PROSE = [
    "instance", "true:", "false", "where false", "| true", "#pairs = 49", "import", "DecidableEq:",
    "(kernel", ":=", "deriving instance Repr", "structure S := true ::", "export", "meta", "«x»",
    "b%7", "lcCast", "set_option pp.all", "@[tactic]", "'", '"', "s!\"{", "(x := y)", "∀ x,", "→",
]  # fmt: skip
assert not any(
    re.search(rf"(?<![A-Za-z0-9_]){re.escape(w)}(?![A-Za-z0-9_])", " ".join(PROSE)) for w in SEED_BANNED_WORDS
)

prose = st.lists(st.sampled_from(PROSE), min_size=1, max_size=4).map(" ".join)
comment_kind = st.sampled_from(["line", "block", "nested"])

# Lean tokens of the code view: names (with dots), numbers, `@[`, `+opt`, `#check`, `.field` (no
# space allowed after a `)`), a run of
# operator characters (`:=`, `==`, `<;>`: Lean reads a token table's longest match, never its
# halves), any other character.
_TOKEN_RE = re.compile(
    r"#?[A-Za-z_\u0370-\u03ff][\w'!?.\u2080-\u209c]*|[0-9][\w.]*|@\[|[+-][A-Za-z]\w*|\.[\w'!?]+"
    r"|[!#$%&*+\-./:;<=>?@\\^|~]+|\S"
)


def token_starts(text: str, lo: int = 0, hi: int | None = None) -> list[int]:
    """Where a token of `text` starts (outside comments and literals), within [lo, hi)."""
    lexed = lex(text)
    inside = [(x.start, x.end) for x in lexed.lexemes]
    hi = len(text) if hi is None else hi
    return [
        m.start()
        for m in _TOKEN_RE.finditer(lexed.code, lo, hi)
        if not any(start < m.start() < end for start, end in inside)
    ]


def insert_comment(text: str, pos: int, kind: str, words: str) -> str:
    """`text` with a comment right before `pos`, the token keeping its column (Lean's layout reads
    columns: a structure's fields and `where` declarations start at the column of the first,
    which a comment put before a line's first token would move): after a line comment the line
    is indented as before, and a block comment before a line's first token goes at the end of
    the line before it."""
    line_start = text.rfind("\n", 0, pos) + 1
    column = pos - line_start
    comment = {
        "line": f"-- {words}\n" + " " * column,
        "block": f"/- {words} -/ ",
        "nested": f"/- {words} /- {words} -/ -/ ",
    }[kind]
    if kind != "line" and line_start > 0 and not text[line_start:pos].strip():
        return text[: line_start - 1] + " " + comment.rstrip() + text[line_start - 1 :]
    if pos > 0 and text[pos - 1] in "!#$%&*+-./:;<=>?@\\^|~":
        # a comment right after an operator character is refused on purpose (`!--` may be one
        # token to Lean: lexer.py, `_OPERATOR_CHARS`): a space goes first, as the message says
        comment = " " + comment
    return text[:pos] + comment + text[pos:]


CORPUS_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@CORPUS_SETTINGS
@given(st.sampled_from(list(HONEST_FILES.values())), st.data(), comment_kind, prose)
def test_a_comment_anywhere_in_an_honest_file_keeps_it_passing(
    text: str, data: st.DataObject, kind: str, words: str
) -> None:
    pos = data.draw(st.sampled_from(token_starts(text)))
    noisy = insert_comment(text, pos, kind, words)
    verdict = check_guard(noisy)
    assert verdict.passed, (verdict.reason, noisy)


@CORPUS_SETTINGS
@given(st.sampled_from(list(REFUSED_BODIES.values())), st.data(), comment_kind, prose)
def test_a_comment_inside_a_refused_construct_never_makes_it_pass(
    case: tuple[str, str], data: st.DataObject, kind: str, words: str
) -> None:
    body, _ = case
    text = with_body(body)
    start = text.index(body)
    pos = data.draw(st.sampled_from(token_starts(text, start, start + len(body))))
    noisy = insert_comment(text, pos, kind, f"{words} zqxmarker")
    verdict = check_guard(noisy)
    assert not verdict.passed, noisy
    assert "zqxmarker" not in verdict.reason  # a message never quotes a comment (issue 25)


@CORPUS_SETTINGS
@given(st.sampled_from(list(HONEST_FILES.values())), st.data())
def test_a_doc_comment_before_a_declaration_keeps_an_honest_file_passing(
    text: str, data: st.DataObject
) -> None:
    # Doc comments are tokens in Lean (they document the next declaration), so they go where a
    # declaration starts: a line at column 0 after the header.
    header_end = text.index(REQUIRED_IMPORT) + len(REQUIRED_IMPORT) + 1
    starts = [m.start() for m in re.finditer(r"^(?:theorem|def|structure|inductive|example)\b", text, re.M)]
    starts = [s for s in starts if s >= header_end]
    if not starts:
        return
    pos = data.draw(st.sampled_from(starts))
    words = data.draw(prose).replace("-/", "")
    noisy = text[:pos] + f"/-- {words} -/\n" + text[pos:]
    verdict = check_guard(noisy)
    assert verdict.passed, (verdict.reason, noisy)


# --- the prompt's examples hold ------------------------------------------------------------------

#: For each rule of GUARD_RULES, in order: bodies its "Passes:" examples stand for, and bodies its
#: "Fails:" examples stand for (the prompt shows them in short).
PROMPT_EXAMPLES: list[tuple[list[str], list[str]]] = [
    (["-- we import only the weights"], ["def x := 1\nimport LeanCheckedNetwork.Network"]),
    (["-- meta-reasoning: export the lemma"], ["-- no sorry needed", "def e := Environment"]),
    (["#check Nat.add_comm", "-- #pairs = 49"], ["#exit"]),
    (
        ["@[simp] theorem t : 1 + 1 = 2 := rfl", "@[simp, elab_as_elim] theorem t : 1 + 1 = 2 := rfl",
         "@[norm_cast] theorem c (n : Nat) : ((n : Int) : Int) = n := rfl",
         "attribute [local instance] Classical.propDecidable"],
        ["@[instance] def i : Inhabited Nat := ⟨0⟩"],
    ),
    (["set_option maxRecDepth 4000 in\ntheorem t : 1 = 1 := rfl"], ["set_option trace.profiler true"]),
    (
        ["example : 1 = 1 := by decide (kernel := true)"],
        ["example : 1 = 1 := by decide (kernel := myFlag)",
         "theorem t (a b : Nat) (h : a < b) : a ≤ b := Nat.le_of_lt (h := h)"],
    ),
    (["theorem m (a b : Nat) : (a + b) % 7 < 7 := Nat.mod_lt _ (by decide)"], ["def y (b : Nat) := b%7"]),
    (
        ["example (b : Bool) : (b && b) = b := match b with\n  | true | false => rfl",
         "theorem q (b : Bool) (h : b = true) : b = true := h",
         "example : (true : Bool) = true := rfl",
         "def rowCheck (a : Nat) : Bool := a < 7\ndef f (a b : Nat) : Nat := (a + b) % 7\n"
         "theorem rows : ∀ a, a < 7 → rowCheck a = true → ∀ b : Nat, b < 7 → f a b = (a + b) % 7 := by\n"
         "  intro a _ _ b _\n  rfl",
         "def allT : List Bool → Bool\n  | true :: bs => allT bs\n  | _ => false"],
        ["def true : Bool := false", "structure S where true x : Bool",
         "def f : (true : Bool) → Bool := fun b => b", "instance true : Inhabited Nat := ⟨0⟩"],
    ),
    (
        ["def P (n : Nat) : Prop := n < 5\ninstance : ∀ n, Decidable (P n) := fun n => Nat.decLt n 5",
         "inductive T | a\nderiving instance DecidableEq for T"],
        ["instance : OfNat Nat 5 := ⟨0⟩", "inductive T | a\nderiving instance Repr for T"],
    ),
    (["theorem lt (a b : Nat) (h : a < b) : a < b := h -- note", "def T : Type := Nat ×' Nat",
      "def S : Type := Σ' n : Nat, n < 5",
      "theorem g (l : List Nat) (i : Nat) (h : i < l.length) : l[i]'h = l[i] := rfl"],
     ["def f (a b : Nat) := a <--b", "/- unclosed"]),
    (["-- «quoted»"], ["def «x» := 1"]),
]  # fmt: skip


def test_the_prompt_examples_hold() -> None:
    assert len(PROMPT_EXAMPLES) == len(GUARD_RULES)
    for passing, failing in PROMPT_EXAMPLES:
        for body in passing:
            assert check_guard(with_body(body)).passed, body
        for body in failing:
            assert not check_guard(with_body(body)).passed, body
