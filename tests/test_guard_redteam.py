"""Red-team cases for the text guard: inputs that would make Lean run code the submission wrote
(or reach `IO`, add an axiom or a syntax extension), and a corpus of honest files that must pass.

No Lean toolchain was used to confirm these; each case cites the Lean source that makes it work
(see the guard's module docstring for the list of build-time routes)."""

from __future__ import annotations

import pytest

from lean_mod_add_proof.constants import REQUIRED_IMPORT, reference_submission, theorem_signature
from lean_mod_add_proof.grading.guard import BANNED_WORDS, GUARD_RULES, check_guard

HEADER = f"import {REQUIRED_IMPORT}\n"
SIGNATURE = theorem_signature(7)
PROOF = f"\n{SIGNATURE} := by\n  decide +kernel\n"


def with_body(body: str) -> str:
    """A file with the required import, `body` from line 3, then a real proof."""
    return f"{HEADER}\n{body}\n{PROOF}"


def with_config(config: str, before: str = "") -> str:
    """A file whose main proof is `decide <config>`: the config value is what Lean evaluates."""
    return f"{HEADER}\n{before}\n{SIGNATURE} := by\n  decide {config}\n"


# --- attacks -------------------------------------------------------------------------------------

# Tactic configuration values are compiled and run at build time (`Meta.evalExpr'` in lean4
# src/Lean/Elab/Tactic/Config.lean), so any code there runs; these reach `IO.FS.writeFile`.
CONFIG_WRITE = (
    "def pwn (_ : Unit) : Bool :=\n"
    '  match EStateM.run (timeit "" (.FS.writeFile "/tmp/pwned" "x")) () with\n'
    "  | .ok _ _ => true\n"
    "  | .error _ _ => false\n"
)

# do-let-else puts a do-*term* after a single `|` (`doLetElse`); the old guard took it for a
# pattern. The do block's monad is chosen by the config's expected type.
DO_LET_ELSE = (
    "def pwn (_ : Unit) : Bool := Id.run do\n"
    '  let some _ := (none : Option Nat) | .FS.writeFile "/tmp/pwned" "x"\n'
    "  pure true\n"
)

# Terms that reached `IO` without the word (the old leading-dot red team): under an `IO`
# expected type `.FS.writeFile` resolves to `IO.FS.writeFile`. Harmless where nothing is run;
# each is rejected inside a configuration value below.
IO_TERMS: dict[str, str] = {
    "list-unification": '[BaseIO.toIO (pure ()), .FS.writeFile "/tmp/pwned" "x"]',
    "if-branch": 'if true then BaseIO.toIO (pure ()) else .Process.spawn { cmd := "sh" }',
    "after-paren": '(.getEnv "HOME" : _)',
    "after-comma": '(0,.getEnv "HOME")',
    "after-bang": "!.getEnv",
    "pipe-left": 'id <| .getEnv "HOME"',
    "after-or": "true || .getEnv",
    "next-line": 'id\n    .getEnv "HOME"',
    "lambda": "fun x => .getEnv x",
    "greek-name": "id .αβ",
    "read-dir": '(System.FilePath.readDir "/").map (fun _ => true)',
    "path-exists": '(System.FilePath.pathExists "/etc").map id',
}

BYPASSES: list[tuple[str, str, str]] = [
    # (id, file text, the word the verdict must name)
    ("config-eval-timeit-fs-write", with_config("(kernel := pwn ())", before=CONFIG_WRITE), "timeit"),
    ("config-eval-do-let-else-fs-write", with_config("(kernel := pwn ())", before=DO_LET_ELSE), "kernel"),
    ("config-inline-do-let-else",
     with_config('(kernel := Id.run do let some _ := none | .FS.writeFile "/tmp/p" "x"; pure true)'),
     "kernel"),
    ("type-of-supplies-io-type",
     with_config('(kernel := (fun (_ : type_of% BaseIO.toIO (pure ())) => true) (.FS.writeFile "p" "s"))'),
     "type_of%"),
    ("ensure-expected-type", with_body('def x := ensure_expected_type% "io" (pure ())'),
     "ensure_expected_type%"),
    ("no-implicit-lambda", with_body("def x := no_implicit_lambda% id"), "no_implicit_lambda%"),
    ("for-in-prime", with_body("def x := for_in'% a b c"), "for_in'%"),
    ("reset-grind-attrs", with_body("reset_grind_attrs%"), "reset_grind_attrs%"),
    ("mathlib-eval-percent", with_body("example : 2 ^ 10 = eval% 2 ^ 10 := rfl"), "eval%"),
    ("lcCast-world-token", with_body("def run (a : BaseIO Unit) := EStateM.run a (lcCast ())"), "lcCast"),
    ("lcRealWorld", with_body("def w := lcRealWorld"), "lcRealWorld"),
    ("lcUnreachable", with_body("def w : Nat := lcUnreachable"), "lcUnreachable"),
    ("lcAny-dotted", with_body("def w := _root_.lcAny"), "lcAny"),
    ("lcErased", with_body("def w := lcErased"), "lcErased"),
    ("lcProof-axiom", f"{HEADER}\n{SIGNATURE} := lcProof\n", "lcProof"),
    ("config-read-dir", with_config('(kernel := (System.FilePath.readDir "/").isEmpty)'), "kernel"),
    ("kernel-id-true", with_config("(kernel := id true)"), "kernel"),
    ("kernel-name", with_config("(kernel := pwn)"), "kernel"),
    ("kernel-by-exact", with_config("(kernel := (by exact true))"), "kernel"),
    ("kernel-by-bare", with_config("(kernel := by exact true)"), "kernel"),
    ("kernel-ascription", with_config("(kernel := true : Bool)"), "kernel"),
    ("kernel-hex", with_config("(kernel := 0x1)"), "kernel"),
    ("config-field-application", with_config("(config := { kernel := f x })"), "config"),
    ("config-name", with_config("(config := c)"), "config"),
    ("config-field-abbreviation", with_config("(config := { kernel })"), "config"),
    ("config-with", with_config("(config := { c with kernel := true })"), "config"),
    ("config-nested-struct", with_config("(config := { kernel := { } })"), "config"),
    ("config-type-ascription", with_config("(config := { kernel := true : DecideConfig })"), "config"),
    ("simp-config-lambda", with_body("example : 1 = 1 := by simp (config := {decide := (fun _ => true) 0})"),
     "config"),
    ("simp-config-pipe", with_body("example : 1 = 1 := by simp (config := {} |> id)"), "config"),
    ("native-decide-positional-config", with_config("(config := ⟨false, true, true, false⟩)"), "config"),
    ("native-decide-config-via-id", with_config("(config := id ⟨false, true⟩)"), "config"),
    ("native-decide-config-mk",
     with_config("(config := { Lean.Parser.Tactic.DecideConfig.mk false true true false with })"), "config"),
    ("config-after-comment", with_config("(config := /- -/ ⟨false, true⟩)"), "config"),
    ("config-comment-before-assign", with_config("(config /- -/ := ⟨⟩)"), "config"),
    ("config-line-comment-before-assign", with_config("(config -- hidden\n    := ⟨⟩)"), "config"),
    # A comment is whitespace: the option behind it is read, and its value judged (issue 25).
    ("comment-before-name", with_config("(/- hidden -/ kernel := pwn)"), "kernel"),
    ("line-comment-before-name", with_config("( -- hidden\n    kernel := pwn)"), "kernel"),
    ("dotted-option-name", with_config("(kernel.x := pwn)"), "kernel.x"),
    ("no-spaces", with_config("(kernel:=pwn)"), "kernel"),
    ("discharger-hides-config", with_body("example : 1 = 1 := by simp (disch := decide (kernel := pwn))"),
     "kernel"),
    ("term-named-argument", with_body("theorem t : True := f (x := g y)"), "x"),
    ("priority-name", with_body("def i := f (priority := pwn)"), "priority"),
    *[(f"io-term-in-config-{name}", with_config(f"(kernel := ({term}) == ())"), "kernel")
      for name, term in IO_TERMS.items()],
    ("allocprof-io-anchor", with_body('def r := allocprof "" (.Process.spawn { cmd := "sh" })'), "allocprof"),
    ("include-str-evaluates-and-reads", with_body('def s := include_str "/etc/passwd"'), "include_str"),
    ("println-macro-is-io", with_body('def s := EStateM.run (println! "hi") ()'), "println"),
    ("by-elab", with_body("def x : Nat := by_elab pure (Lean.mkNatLit 1)"), "by_elab"),
    ("run-tac", with_body("example : True := by run_tac pure ()"), "run_tac"),
    ("idbg", with_body("def x : IO Unit := do idbg 1"), "IO"),
    ("simproc-decl", with_body("simproc_decl s (id _) := fun _ => pure .continue"), "simproc"),
    ("dsimproc-decl", with_body("dsimproc_decl s (id _) := fun _ => pure .continue"), "dsimproc"),
    ("cbv-simproc", with_body("cbv_simproc s (id _) := fun _ => pure .continue"), "simproc"),
    ("grind-propagator", with_body("grind_propagator ↑And := fun _ => pure ()"), "grind_propagator"),
    ("builtin-grind-propagator", with_body("builtin_grind_propagator p ↓And := fun _ => pure ()"), "builtin"),
    ("register-linter-set", with_body("register_linter_set linter.x := linter.y"), "register"),
    ("declare-config-elab", with_body("declare_config_elab elabX DecideCfg"), "declare"),
    ("ptr-addr-unsafe", with_body("def p := ptrAddrUnsafe 1"), "unsafe"),
    ("dbg-sleep", with_body("def p := dbgSleep 1000 fun _ => 1"), "dbg"),
    ("grind-attribute-with-code-word", with_body("@[grind tactic] theorem x : True := trivial"), "tactic"),
    ("grind-word-outside-grind", with_body("@[simp cases] theorem x : True := trivial"), "cases"),
    # Init commands that expand to syntax extensions / attributes outside the allow-list.
    ("declare-simp-like-tactic", with_body('declare_simp_like_tactic mysimp "theorem " (decide := true)'),
     "declare_simp_like_tactic"),
    ("unif-hint", with_body("unif_hint (n : Nat) where n =?= 0 |- n + 0 =?= 0"), "unif_hint"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "word"), [(t, w) for _, t, w in BYPASSES], ids=[i for i, _, _ in BYPASSES])
def test_redteam_bypass_is_rejected(text: str, word: str) -> None:
    verdict = check_guard(text)
    assert not verdict.passed, word
    assert verdict.word == word, verdict.reason


@pytest.mark.parametrize("term", list(IO_TERMS.values()), ids=list(IO_TERMS))
def test_io_terms_outside_configs_are_inert(term: str) -> None:
    # A definition is compiled, never run, while the file builds: the leading dot only names.
    assert check_guard(with_body(f"def act := {term}")).passed


# A literal configuration value is elaborated in the file's scope (lean4
# src/Lean/Elab/Tactic/Config.lean `elabConfig`), and the surrounding namespaces are searched before
# the `Bool.true` alias (src/Lean/ResolveName.lean `resolveGlobalName`), so each of these would make
# `decide (kernel := true)` (or a numeral option) compile and run the file's own code.
SHADOW_BODY = "(List.range 1000).length > 0"
NS = ("namespace LeanCheckedNetwork.Net\n", "\nend LeanCheckedNetwork.Net")
SHADOWS: list[tuple[str, str, str]] = [
    # (id, declarations before the proof, the word the verdict must name)
    ("namespace-def", f"{NS[0]}def true : Bool := {SHADOW_BODY}{NS[1]}", "true"),
    ("qualified-def", f"def LeanCheckedNetwork.Net.true : Bool := {SHADOW_BODY}", "true"),
    ("enclosing-namespace", f"def LeanCheckedNetwork.true : Bool := {SHADOW_BODY}", "true"),
    ("private-def", f"{NS[0]}private def true : Bool := {SHADOW_BODY}{NS[1]}", "true"),
    ("protected-def", f"protected def LeanCheckedNetwork.Net.true : Bool := {SHADOW_BODY}", "true"),
    ("root-def", f"def _root_.true : Bool := {SHADOW_BODY}", "true"),
    ("opened-namespace", f"def Evil.true : Bool := {SHADOW_BODY}\nopen Evil", "true"),
    ("abbrev-false", f"abbrev LeanCheckedNetwork.Net.false : Bool := {SHADOW_BODY}", "false"),
    ("theorem-true", "theorem LeanCheckedNetwork.Net.true : True := trivial", "true"),
    ("guillemets", f"def LeanCheckedNetwork.Net.«true» : Bool := {SHADOW_BODY}", "«"),
    ("where-aux", f"def helper : Nat := 0\nwhere true : Bool := {SHADOW_BODY}", "true"),
    ("let-rec", f"def helper : Nat := let rec true : Bool := {SHADOW_BODY}; 0", "true"),
    ("class-field-with-instance",
     "namespace LeanCheckedNetwork.Net\nclass C where\n  n : Nat\n  true : Bool\n"
     "instance : C := ⟨0, (List.range 9).length > 0⟩\nend LeanCheckedNetwork.Net", "true"),
    ("class-field", f"{NS[0]}class C where\n  n : Nat\n  true : Bool{NS[1]}", "true"),
    ("structure-constructor", "structure S where\n  true ::\n  x : Nat", "true"),
    ("inductive-constructor", "inductive T where\n  | true\n  | false", "true"),
    ("open-renaming", "def evil : Bool := false\nopen LeanCheckedNetwork renaming evil → true", "renaming"),
    ("export", "def Evil.true : Bool := false\nexport Evil (true)", "export"),
    # numerals and coercions: instance synthesis, where the file's instance could win
    ("ofnat-instance", "instance : OfNat Nat n := ⟨(List.range n).length⟩", "instance"),
    ("ofnat-bool-instance", "instance : OfNat Bool n := ⟨n > 0⟩", "instance"),
    ("coe-instance", "instance : Coe Bool Nat := ⟨fun b => (List.range 9).length⟩", "instance"),
    ("coedep-instance", "instance : CoeDep Bool true Nat := ⟨0⟩", "instance"),
    ("natcast-instance", "instance : NatCast Bool := ⟨fun n => n > 0⟩", "instance"),
    ("abbrev-class-instance", "abbrev MyOfNat := OfNat Nat 5\ninstance : MyOfNat := ⟨7⟩", "instance"),
    ("instance-attribute", "@[instance] def evil : OfNat Nat 5 := ⟨7⟩", "instance"),
    ("attribute-command", "def evil : OfNat Nat 5 := ⟨7⟩\nattribute [instance] evil", "instance"),
    ("default-instance", "@[default_instance] def evil : OfNat Nat 5 := ⟨7⟩", "default_instance"),
    ("class-parent-instance", "class Evil extends OfNat Nat 5\ninstance : Evil := ⟨⟨7⟩⟩", "instance"),
]  # fmt: skip


@pytest.mark.parametrize(("before", "word"), [c[1:] for c in SHADOWS], ids=[c[0] for c in SHADOWS])
@pytest.mark.parametrize("config", ["(kernel := true)", "(config := { kernel := true })", "+kernel"])
def test_a_literal_shadow_is_rejected(before: str, word: str, config: str) -> None:
    verdict = check_guard(with_config(config, before=before))
    assert not verdict.passed
    assert verdict.word == word, verdict.reason


def test_the_shadow_spelling_without_the_declaration_passes() -> None:
    # The same proof, config and namespace, with nothing declared as `true`: the rule is about the
    # declaration, not the use.
    for config in ("(kernel := true)", "(config := { kernel := true })", "+kernel", "(kernel := false)"):
        assert check_guard(with_config(config, before=NS_OPEN + NS_CLOSE)).passed


def test_new_rules_are_shown_to_the_model() -> None:
    assert {"timeit", "allocprof", "include_str", "println", "lcProof", "by_elab", "idbg"} <= set(
        BANNED_WORDS
    )
    assert any("(config := {" in rule and "(name := value)" in rule for rule in GUARD_RULES)
    assert any("`%`" in rule and "`lcCast`" in rule for rule in GUARD_RULES)
    assert any("1 MiB" in rule for rule in GUARD_RULES)
    assert not any("leading-dot" in rule for rule in GUARD_RULES)


# --- honest files --------------------------------------------------------------------------------

NS_OPEN = "namespace LeanCheckedNetwork.Net\n"
NS_CLOSE = "end LeanCheckedNetwork.Net\n"
SHORT = "theorem adds_mod_7 : ∀ a, a < 7 → ∀ b, b < 7 → answer a b = (a + b) % 7"


def submission(body: str) -> str:
    return f"{HEADER}\n{body}"


def rows(tactic: str, prefix: str = "") -> str:
    """Seven per-row lemmas proved by `tactic`, and the theorem combining them by `match`."""
    lemmas = "".join(
        f"{prefix}theorem row_{a} : ∀ b, b < 7 → answer {a} b = ({a} + b) % 7 := by\n  {tactic}\n\n"
        for a in range(7)
    )
    alts = "".join(f"  | {a}, _ => exact row_{a}\n" for a in range(7))
    return (
        f"{NS_OPEN}\n{lemmas}{SHORT} := by\n  intro a ha\n  match a, ha with\n{alts}"
        f"  | n + 7, h => exact absurd h (by omega)\n\n{NS_CLOSE}"
    )


HONEST_FILES: dict[str, str] = {
    "reference-p5": reference_submission(5),
    "reference-p7": reference_submission(7),
    "reference-p23": reference_submission(23),
    "decide-kernel": submission(f"{SIGNATURE} := by\n  decide +kernel\n"),
    "decide-kernel-named": submission(f"{SIGNATURE} := by\n  decide (kernel := true)\n"),
    "decide-kernel-config": submission(f"{SIGNATURE} := by\n  decide (config := {{ kernel := true }})\n"),
    "decide-config-multiline": submission(
        f"{SIGNATURE} := by\n  decide (config := {{\n    kernel := true\n    zetaReduce := false,\n  }})\n"
    ),
    "heartbeats-and-depth": submission(
        "set_option maxHeartbeats 0 in\nset_option maxRecDepth 100000 in\n"
        f"{SIGNATURE} := by\n  decide +kernel\n"
    ),
    "namespace-short-name": submission(f"{NS_OPEN}\n{SHORT} := by\n  decide +kernel\n\n{NS_CLOSE}"),
    "intro-revert": submission(
        f"{SIGNATURE} := by\n  intro a ha b hb\n  revert a ha b hb\n  decide +kernel\n"
    ),
    "rows-by-decide": submission(rows("decide +kernel")),
    "rows-private": submission(rows("decide (kernel := true)", prefix="private ")),
    "rows-simp-attr": submission(rows("decide +kernel", prefix="@[simp] ")),
    "rows-grind-attr": submission(rows("decide +kernel", prefix="@[grind] ")),
    "rows-heartbeats": submission(rows("decide +kernel", prefix="set_option maxHeartbeats 400000 in\n")),
    "match-on-b": submission(
        f"{NS_OPEN}\ntheorem row_0 (b : Nat) (hb : b < 7) : answer 0 b = (0 + b) % 7 := by\n"
        "  match b, hb with\n  | 0, _ => rfl\n  | 1, _ => rfl\n  | 2, _ => rfl\n  | 3, _ => rfl\n"
        "  | 4, _ => rfl\n  | 5, _ => rfl\n  | 6, _ => rfl\n\n"
        f"{SHORT} := by\n  decide +kernel\n{NS_CLOSE}"
    ),
    "cases-with-inl-inr": submission(
        "theorem aux (n : Nat) (h : n < 7 ∨ n = 7) : n ≤ 7 := by\n"
        "  cases h with\n  | inl h => exact Nat.le_of_lt h\n  | inr h => exact Nat.le_of_eq h\n\n"
        f"{SIGNATURE} := by\n  decide +kernel\n"
    ),
    "leading-dots": submission(
        "theorem t1 (h : 1 = 1) : 1 = 1 ∨ False := .inl h\n"
        "theorem t2 : ∃ n : Nat, n = 0 := ⟨0, .refl 0⟩\n"
        "theorem t3 (h : 1 = 1 ∨ False) : True := by\n  match h with\n"
        "  | .inl _ => trivial\n  | .inr f => exact f.elim\n"
        "theorem t4 : (1 : Nat) = 1 :=\n  .rfl\n"
        "def first (l : List Nat) : Nat :=\n  if let .some x := l.head? then x else 0\n"
        f"{SIGNATURE} := by\n  exact fun a ha b hb => by decide +kernel\n"
    ),
    "exact-inl": submission(
        "theorem lt_or (n : Nat) (h : n < 7) : n < 7 ∨ n = 7 := by\n  exact .inl h\n\n"
        f"{SIGNATURE} := by\n  decide +kernel\n"
    ),
    "omega-and-simp": submission(
        "theorem mod_self_add (a : Nat) : (a + 7) % 7 = a % 7 := by simp\n"
        "theorem small (a : Nat) (h : a < 7) : a % 7 = a := Nat.mod_eq_of_lt h\n"
        "theorem bound (a b : Nat) (ha : a < 7) (hb : b < 7) : a + b < 14 := by omega\n\n"
        f"{SIGNATURE} := by\n  decide +kernel\n"
    ),
    "simp-options": submission(
        "theorem s (a : Nat) : a + 0 = a := by simp (config := { zeta := false, maxSteps := 100000 })\n"
        "theorem s' (a : Nat) : 0 + a = a := by simp +arith -zeta (maxDischargeDepth := 2)\n"
        "theorem s'' (a : Nat) (h : a < 3) : a < 7 := by simp (disch := omega) [Nat.lt_of_lt_of_le]\n\n"
        f"{SIGNATURE} := by\n  decide +kernel\n"
    ),
    "rfl-and-nat-dec-eq": submission(
        "theorem r : (2 + 3) % 7 = 5 := rfl\n"
        "theorem d : Nat.decEq 1 1 = isTrue rfl := rfl\n"
        "example : (3 + 5) % 7 = 1 := by decide\n\n"
        f"{SIGNATURE} := by\n  decide +kernel\n"
    ),
    "helper-defs-structural": submission(
        "def sumTo : Nat → Nat\n  | 0 => 0\n  | n + 1 => (n + 1) + sumTo n\n\n"
        "def allBelow (p : Nat → Bool) : Nat → Bool\n  | 0 => true\n  | n + 1 => p n && allBelow p n\n\n"
        "theorem sumTo_three : sumTo 3 = 6 := by decide\n\n"
        f"{SIGNATURE} := by\n  decide +kernel\n"
    ),
    "decidable-abbrev": submission(
        "abbrev Good (a : Nat) : Prop := ∀ b, b < 7 → LeanCheckedNetwork.Net.answer a b = (a + b) % 7\n\n"
        "theorem good_3 : Good 3 := by decide +kernel\n"
        "def Good' (a : Nat) : Prop := ∀ b, b < 7 → LeanCheckedNetwork.Net.answer a b = (a + b) % 7\n"
        "theorem good'_3 : Good' 3 := by\n  unfold Good'\n  decide +kernel\n\n"
        f"{SIGNATURE} := by\n  decide +kernel\n"
    ),
    "bool-helpers": submission(
        "def rowOk (a : Nat) : Bool :=\n"
        "  (List.range 7).all fun b => LeanCheckedNetwork.Net.answer a b == (a + b) % 7\n"
        "theorem rowOk_3 : rowOk 3 = true := by decide +kernel\n"
        "def toNat : Bool → Nat\n  | true => 1\n  | false => 0\n"
        "theorem toNat_true : toNat true = 1 := rfl\n"
        "theorem is_true_of (b : Bool) (h : b = true) : (b && true) = true := by simp [h]\n"
        "theorem trueRow : (match (3 : Nat), true with\n  | 0, _ => false\n  | _, b => b) = true := rfl\n\n"
        f"{SIGNATURE} := by\n  decide (config := {{ kernel := true }})\n"
    ),
    "anonymous-constructor-fun": submission(
        "theorem fin_pairs : ∀ x : Fin 7 × Fin 7, x.1.val < 7 := fun ⟨a, _⟩ => a.isLt\n"
        "theorem pair (h : 1 = 1 ∧ 2 = 2) : 2 = 2 := h.2\n"
        "theorem pipe : ([1, 2].map id |>.length) = 2 := rfl\n\n"
        f"{SIGNATURE} := by\n  decide +kernel\n"
    ),
    "open-in-and-sections": submission(
        "section helpers\nvariable (n : Nat)\n\n"
        "open Nat in\ntheorem h1 : n % 7 < 7 := Nat.mod_lt n (by decide)\n"
        "end helpers\n\n"
        f"{SIGNATURE} := by\n  decide +kernel\n"
    ),
    "comments-and-docstrings": submission(
        "/-!\n# Adding modulo 7\nThe kernel checks all 49 pairs; 100% of the work is `decide +kernel`.\n"
        "Rows are split so that the kernel's cache is freed between them\n"
        "(see /.lake/build for the olean).\n-/\n\n"
        "/-- The main theorem. -/\n"
        f"{SIGNATURE} := by\n  -- evaluate the network on every pair\n  decide +kernel /- kernel only -/\n"
    ),
    "example-and-check": submission(
        "example : LeanCheckedNetwork.Net.answer 3 4 = 0 := by decide\n"
        "#check LeanCheckedNetwork.Net.answer\n#print axioms Nat.add_comm\n#reduce (3 + 4) % 7\n\n"
        f"{SIGNATURE} := by\n  decide +kernel\n"
    ),
    "named-arguments-literal": submission(
        "theorem n1 : Nat.succ 2 = 3 := rfl\n"
        "theorem n2 (h : 2 < 7) : (⟨2, h⟩ : Fin 7).val = 2 := rfl\n"
        "theorem n3 : (Fin.mk (n := 7) 2 (by decide)).val = 2 := rfl\n\n"
        f"{SIGNATURE} := by\n  decide +kernel\n"
    ),
    "grind-attributes": submission(
        "@[grind =] theorem g1 (a : Nat) : a + 0 = a := rfl\n"
        "@[grind →] theorem g2 (a : Nat) (h : a < 7) : a < 8 := by omega\n"
        "@[grind ←] theorem g3 (a : Nat) : a ≤ a := Nat.le_refl a\n"
        "@[grind _=_] theorem g4 (a : Nat) : a * 1 = a := Nat.mul_one a\n"
        "@[grind ext] theorem g5 : True := trivial\n"
        "@[grind cases eager] theorem g6 : True := trivial\n"
        "@[simp, grind =_] theorem g7 (a : Nat) : a = a + 0 := rfl\n"
        "@[grind! ←] theorem g8 (a : Nat) : a ≤ a + 1 := Nat.le_succ a\n"
        "attribute [grind cases] Or\nattribute [local simp] Nat.add_comm\n\n"
        f"{SIGNATURE} := by\n  decide +kernel\n"
    ),
    "match-with-motive-free-generalizing": submission(
        "def pred' (n : Nat) : Nat :=\n  match (generalizing := false) n with\n  | 0 => 0\n  | k + 1 => k\n\n"
        f"{SIGNATURE} := by\n  decide +kernel\n"
    ),
    "percent-spaced": submission(
        "theorem m (a b : Nat) : (a + b) % 7 = (a % 7 + b % 7) % 7 := Nat.add_mod a b 7\n"
        "theorem m' (a : Nat) : (a)%7 < 7 := Nat.mod_lt _ (by decide)\n\n"
        f"{SIGNATURE} := by\n  decide +kernel\n"
    ),
    "unicode-names": submission(
        "theorem h₁ (α : Type) (x : α) : x = x := rfl\ntheorem lemma' (n : Nat) : n = n := rfl\n\n"
        f"{SIGNATURE} := by\n  decide +kernel\n"
    ),
    "words-containing-banned-words": submission(
        "theorem native_ok_free : True := trivial\ntheorem initial_step : 0 < 1 := by decide\n"
        "theorem sorry_free_lemma : True := trivial\ndef prefix_sum : Nat := 0\ndef partial_sum : Nat := 0\n"
        "-- an alternative route, elaborated carefully\n\n"
        f"{SIGNATURE} := by\n  decide +kernel\n"
    ),
    "crlf-line-endings": submission(f"{SIGNATURE} := by\n  decide +kernel\n").replace("\n", "\r\n"),
}


@pytest.mark.parametrize("text", list(HONEST_FILES.values()), ids=list(HONEST_FILES))
def test_honest_file_passes(text: str) -> None:
    verdict = check_guard(text)
    assert verdict.passed, verdict.reason


def test_honest_corpus_is_large() -> None:
    assert len(HONEST_FILES) >= 30
