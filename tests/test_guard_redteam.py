"""Red-team cases for the text guard: inputs that passed it although Lean would run code, reach
`IO`, add an axiom or a syntax extension with them, and honest files that must keep passing.

No Lean toolchain was used to confirm these; each case cites the Lean source that makes it work
(see the guard's module docstring)."""

from __future__ import annotations

import pytest

from lean_mod_add_proof.constants import REQUIRED_IMPORT, theorem_signature
from lean_mod_add_proof.grading.guard import BANNED_WORDS, GUARD_RULES, check_guard

HEADER = f"import {REQUIRED_IMPORT}\n"
SIGNATURE = theorem_signature(7)
PROOF = f"\n{SIGNATURE} := by\n  decide +kernel\n"


def with_body(body: str) -> str:
    """A file with the required import, `body` from line 3, then a real proof."""
    return f"{HEADER}\n{body}\n{PROOF}"


# Tactic configuration values are compiled and run at build time (Meta.evalExpr'), so code there
# runs; these all reach `IO.FS.writeFile`/`IO.Process.spawn` without writing `IO`.
CONFIG_WRITE = (
    "def pwn (_ : Unit) : Bool :=\n"
    '  match EStateM.run (timeit "" (.FS.writeFile "/tmp/pwned" "x")) () with\n'
    "  | .ok _ _ => true\n"
    "  | .error _ _ => false\n"
)

BYPASSES: list[tuple[str, str, str]] = [
    # (id, file text, the word the verdict must name)
    (
        "config-eval-timeit-fs-write",
        f"{HEADER}\n{CONFIG_WRITE}\n{SIGNATURE} := by\n  decide (kernel := pwn ())\n",
        "timeit",
    ),
    ("allocprof-io-anchor", with_body('def r := allocprof "" (.Process.spawn { cmd := "sh" })'), "allocprof"),
    (
        "leading-dot-via-list-unification",
        with_body('def acts := [BaseIO.toIO (pure ()), .FS.writeFile "/tmp/pwned" "x"]'),
        ".FS",
    ),
    (
        "leading-dot-via-if-branch",
        with_body('def act := if true then BaseIO.toIO (pure ()) else .Process.spawn { cmd := "sh" }'),
        ".Process",
    ),
    ("leading-dot-after-paren", with_body('def e := (.getEnv "HOME" : _)'), ".getEnv"),
    ("leading-dot-after-comma", with_body('def e := (0,.getEnv "HOME")'), ".getEnv"),
    ("leading-dot-after-bang", with_body("def e := !.getEnv"), ".getEnv"),
    ("leading-dot-after-pipe-left", with_body('def e := id <| .getEnv "HOME"'), ".getEnv"),
    ("leading-dot-after-or", with_body("def e := true || .getEnv"), ".getEnv"),
    ("leading-dot-next-line", with_body('def e := id\n  .getEnv "HOME"'), ".getEnv"),
    ("leading-dot-after-lambda", with_body("def e := fun x => .getEnv x"), ".getEnv"),
    ("leading-dot-greek-name", with_body("def e := id .αβ"), ".α"),
    ("include-str-evaluates-and-reads", with_body('def s := include_str "/etc/passwd"'), "include_str"),
    ("println-macro-is-io", with_body('def s := EStateM.run (println! "hi") ()'), "println"),
    # `decide +native` without the word: DecideConfig is (kernel, native, zetaReduce, revert).
    (
        "native-decide-positional-config",
        f"{HEADER}\n{SIGNATURE} := by\n  decide (config := ⟨false, true, true, false⟩)\n",
        "config",
    ),
    (
        "native-decide-config-via-id",
        with_body("example : True := by decide (config := id ⟨false, true⟩)"),
        "config",
    ),
    (
        "config-after-comment",
        with_body("example : True := by decide (config := /- -/ ⟨false, true⟩)"),
        "config",
    ),
    ("config-comment-before-assign", with_body("example : True := by decide (config /- -/ := ⟨⟩)"), "config"),
    (
        "native-decide-config-mk",
        with_body(
            "example : True := by\n"
            "  decide (config := { Lean.Parser.Tactic.DecideConfig.mk false true true false with })"
        ),
        "DecideConfig",
    ),
    # Init's axiom proving anything (the axiom stage would also catch it).
    ("lcProof-axiom", f"{HEADER}\n{SIGNATURE} := lcProof\n", "lcProof"),
    # Init commands that expand to syntax extensions / attributes outside the allow-list.
    (
        "declare-simp-like-tactic",
        with_body('declare_simp_like_tactic mysimp "theorem " (decide := true)'),
        "declare_simp_like_tactic",
    ),
    ("unif-hint", with_body("unif_hint (n : Nat) where n =?= 0 |- n + 0 =?= 0"), "unif_hint"),
]


@pytest.mark.parametrize(("text", "word"), [(t, w) for _, t, w in BYPASSES], ids=[i for i, _, _ in BYPASSES])
def test_redteam_bypass_is_rejected(text: str, word: str) -> None:
    verdict = check_guard(text)
    assert not verdict.passed, word
    assert verdict.word == word, verdict.reason


HONEST: list[tuple[str, str]] = [
    ("decide-kernel", f"{HEADER}\n{SIGNATURE} := by\n  decide +kernel\n"),
    (
        "max-rec-depth-in",
        f"{HEADER}\nset_option maxRecDepth 100000 in\n{SIGNATURE} := by\n  decide +kernel\n",
    ),
    ("intro-revert", f"{HEADER}\n{SIGNATURE} := by\n  intro a ha b hb\n  revert a b\n  decide +kernel\n"),
    ("config-struct-instance", f"{HEADER}\n{SIGNATURE} := by\n  decide (config := {{ kernel := true }})\n"),
    ("simp-config-decide", with_body("example : 2 + 2 = 4 := by simp (config := { decide := true })")),
    ("named-option", with_body("example : 2 + 2 = 4 := by simp (maxSteps := 100000)")),
    ("nat-dec-eq", with_body("theorem aux : Nat.decEq 1 1 = isTrue rfl := rfl")),
    ("list-range", with_body("theorem r : (List.range 3).length = 3 := by decide")),
    (
        "projections",
        with_body(
            "theorem q (h : 1 = 1 ∧ 2 = 2) : 2 = 2 := h.2\n"
            "theorem q' (h : 1 = 1 ∧ 2 = 2) : 2 = 2 := (h).right"
        ),
    ),
    ("pipe-projection", with_body("theorem q : ([1, 2].map id |>.length) = 2 := rfl")),
    ("primed-projection", with_body("theorem q (h' : 1 = 1 ∧ 2 = 2) : 2 = 2 := h'.2")),
    ("char-literal-projection", with_body("theorem q : 'a'.toNat = 97 := rfl")),
    ("string-literal-projection", with_body('theorem q : "ab".length = 2 := rfl')),
    ("anonymous-constructor-projection", with_body("theorem q : (⟨1, 2⟩ : Nat × Nat).1 = 1 := rfl")),
    ("subscript-projection", with_body("theorem q (h₁ : 1 = 1 ∧ 2 = 2) : 2 = 2 := h₁.2")),
    ("cdot-function", with_body("theorem q : [(1, 2)].map (·.1) = [1] := rfl")),
    (
        "match-pattern-dots",
        with_body(
            "theorem q (h : 1 = 1 ∨ False) : True := by\n"
            "  match h with\n  | .inl _ => trivial\n  | .inr f => exact f.elim"
        ),
    ),
    ("cdot-tactics", with_body("theorem q : 1 = 1 ∧ 2 = 2 := by\n  constructor\n  · rfl\n  . rfl")),
    (
        "english-comment",
        with_body("-- The kernel evaluates every pair. See Nat.lt_irrefl, e.g. for a < b.\n-- Done."),
    ),
    ("numbers-with-dots", with_body("-- version 4.35.0 works")),
]


@pytest.mark.parametrize("text", [t for _, t in HONEST], ids=[i for i, _ in HONEST])
def test_honest_file_passes(text: str) -> None:
    verdict = check_guard(text)
    assert verdict.passed, verdict.reason


def test_new_rules_are_shown_to_the_model() -> None:
    assert {"timeit", "allocprof", "include_str", "println", "lcProof", "DecideConfig"} <= set(BANNED_WORDS)
    assert any("leading-dot" in rule for rule in GUARD_RULES)
    assert any("(config := ...)" in rule for rule in GUARD_RULES)
