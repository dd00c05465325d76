"""The text guard: every banned word, every known bypass, the three historical exploits, and the
legitimate files that must still pass."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable

import pytest
from timing import assert_time_is_linear

from lean_mod_add_proof.constants import REQUIRED_IMPORT, reference_submission, theorem_signature
from lean_mod_add_proof.grading import guard as guardmod
from lean_mod_add_proof.grading.extract import extract_submission
from lean_mod_add_proof.grading.guard import (
    ALLOWED_ATTRIBUTE_WORDS,
    ALLOWED_HASH_COMMANDS,
    ALLOWED_OPTIONS,
    BANNED_WORD_PARTS,
    BANNED_WORDS,
    CODE_BANNED_WORDS,
    GUARD_RULES,
    INSTANCE_CLASSES,
    INTERNAL_ERROR_REASON,
    MAX_SUBMISSION_BYTES,
    SEED_BANNED_WORDS,
    GuardVerdict,
    check_guard,
)

HEADER = f"import {REQUIRED_IMPORT}\n"
PROOF = f"\n{theorem_signature(7)} := by\n  decide +kernel\n"


def with_body(body: str) -> str:
    """A file with the required import, `body` on line 3, then a real proof."""
    return f"{HEADER}\n{body}\n{PROOF}"


# --- every banned word ---------------------------------------------------------------------------


WORD_PLACES = {
    "code": "def x := {}",
    "comment": "-- we avoid {} here",
    "block-comment": "/- we avoid {} here -/ def x := 1",
    "string": 'def s : String := "{}"',
    "docstring": "/-- uses {} -/\ndef y := 1",
}


@pytest.mark.parametrize("word", SEED_BANNED_WORDS, ids=SEED_BANNED_WORDS)
@pytest.mark.parametrize("where", list(WORD_PLACES))
def test_every_seed_word_fails_anywhere_with_its_name_and_line(word: str, where: str) -> None:
    verdict = check_guard(with_body(WORD_PLACES[where].format(word)))
    assert not verdict.passed
    assert verdict.word == word
    assert verdict.line == 3
    assert f"'{word}'" in verdict.reason and "line 3" in verdict.reason


@pytest.mark.parametrize("word", CODE_BANNED_WORDS, ids=CODE_BANNED_WORDS)
@pytest.mark.parametrize("where", list(WORD_PLACES))
def test_every_project_word_fails_in_code_only(word: str, where: str) -> None:
    # The seed names its own words "anywhere, comments included"; the project's extra words guard
    # code paths, and a comment or a string runs nothing (issue 25).
    verdict = check_guard(with_body(WORD_PLACES[where].format(word)))
    if where != "code":
        assert verdict.passed, verdict.reason
        return
    assert not verdict.passed
    assert verdict.word == word
    assert verdict.line == 3
    assert f"'{word}'" in verdict.reason and "line 3" in verdict.reason


@pytest.mark.parametrize("part", BANNED_WORD_PARTS, ids=BANNED_WORD_PARTS)
@pytest.mark.parametrize("shape", ["{}_x", "x_{}", "my{Cap}Thing", "{}Thing", "x.{}_y"])
def test_banned_parts_fail_inside_longer_names(part: str, shape: str) -> None:
    name = shape.format(part, Cap=part.capitalize())
    verdict = check_guard(with_body(f"def {name} := 1"))
    assert not verdict.passed, name
    assert verdict.word == part
    assert verdict.line == 3


def test_banned_words_cover_the_seed_list() -> None:
    seed = (
        "sorry admit native_decide ofReduceBool axiom opaque implemented_by extern unsafe partial "
        "macro macro_rules elab elab_rules syntax notation infix infixl infixr prefix postfix "
        "initialize #eval run_cmd run_tac run_elab run_meta IO init evalExpr"
    ).split()
    assert set(seed) <= set(BANNED_WORDS)
    # `decide +native` and `set_option debug.*` are enforced through these two words.
    assert {"native", "debug", "skipKernelTC", "prelude", "sorryAx", "builtin_initialize"} <= set(
        BANNED_WORDS
    )


@pytest.mark.parametrize(
    "name",
    ["native_ok_free", "initial_step", "sorry_free_lemma", "my_initialize", "evalNativeDecide", "admitted_x",
     "macro_free", "syntaxTree", "debug_row", "extern_x", "delab_x", "declare", "register"],
)  # fmt: skip
def test_longer_names_holding_a_whole_word_pass(name: str) -> None:
    # Whole words only: a longer name that merely contains one is another identifier to Lean.
    assert check_guard(with_body(f"theorem {name} : True := trivial")).passed


@pytest.mark.parametrize("name", ["x.native", "my.sorry", "Lean.ofReduceBool", "h.admit", "Foo.unsafe"])
def test_dotted_components_are_whole_words(name: str) -> None:
    verdict = check_guard(with_body(f"def y := {name}"))
    assert not verdict.passed and verdict.word == name.rsplit(".", 1)[1]


def test_word_lists_are_consistent() -> None:
    assert len(set(BANNED_WORDS)) == len(BANNED_WORDS)
    assert all(part == part.lower() for part in BANNED_WORD_PARTS)
    assert "maxRecDepth" in ALLOWED_OPTIONS and "maxHeartbeats" in ALLOWED_OPTIONS
    assert all(rule.strip() for rule in GUARD_RULES)
    assert "#eval" not in ALLOWED_HASH_COMMANDS and "tactic" not in ALLOWED_ATTRIBUTE_WORDS


# --- bypass attempts -----------------------------------------------------------------------------

BYPASSES: list[tuple[str, str, str]] = [
    # (id, file text, the word the verdict must name)
    ("escaped-sorry", with_body("theorem t : True := by «sorry»"), "«"),
    ("escaped-debug-option", with_body("set_option «debug».skipKernelTC true"), "«"),
    ("escaped-namespace", with_body("open Lean.«Elab»"), "«"),
    ("closing-guillemet-alone", with_body("def x := 1 »"), "»"),
    ("debug-option", with_body("set_option debug.skipKernelTC true"), "debug"),
    ("debug-option-line-break", with_body("set_option\n  debug.skipKernelTC\n  true in"), "debug"),
    ("skipKernelTC-alone", with_body("def y := skipKernelTC"), "skipKernelTC"),
    ("decide-native", with_body("example : 1 = 1 := by decide +native"), "native"),
    ("decide-native-nospace", with_body("example : 1 = 1 := by decide+native"), "native"),
    ("decide-native-wide", with_body("example : 1 = 1 := by decide   +   native"), "native"),
    ("decide-native-newline", with_body("example : 1 = 1 := by decide\n  +native"), "native"),
    (
        "decide-config-native",
        with_body("example : 1 = 1 := by decide (config := { native := true })"),
        "native",
    ),
    ("native-decide", with_body("example : 1 = 1 := by native_decide"), "native_decide"),
    ("prelude", f"prelude\n{HEADER}{PROOF}", "prelude"),
    ("sorryAx", with_body("theorem t : False := sorryAx False"), "sorryAx"),
    ("sorry-dotted", with_body("def x := my.sorry"), "sorry"),
    ("sorry-after-hex-literal", with_body("def x := 0xfsorry"), "sorry"),
    ("sorry-after-number", with_body("def x := 1sorry"), "sorry"),
    ("sorry-after-bang", with_body("theorem t : True := by exact!sorry"), "sorry"),
    ("sorry-greek-neighbour", with_body("def x := αsorry"), "sorry"),
    ("builtin_initialize", with_body("builtin_initialize foo : Nat ← pure 1"), "builtin_initialize"),
    ("initialize", with_body("initialize pure ()"), "initialize"),
    ("initialize-camel", with_body("def builtinInitialize := 1"), "builtin"),
    ("eval-IO-write", with_body('#eval IO.FS.writeFile "Check.lean" "x"'), "#eval"),
    ("eval-bang", with_body("#eval! (1 : Nat)"), "#eval"),
    ("eval-glued", with_body("#evalsorry"), "#evalsorry"),
    ("exit", with_body("#exit"), "#exit"),
    ("guard-command", with_body("#guard 1 = 1"), "#guard"),
    ("guard-msgs", with_body("#guard_msgs in #check 1"), "#guard_msgs"),
    ("IO-dotted", with_body("def w := IO.FS.writeFile"), "IO"),
    ("unsafeBaseIO", with_body("def w := unsafeBaseIO"), "unsafeBaseIO"),
    ("unsafe-part", with_body("def w := my_unsafe_thing"), "unsafe"),
    ("run_cmd", with_body("run_cmd pure ()"), "run_cmd"),
    ("declare-syntax-cat", with_body("declare_syntax_cat foo"), "declare_syntax_cat"),
    (
        "macro-attribute",
        with_body("@[macro Lean.Parser.Term.app] def m : Lean.Macro := fun _ => default"),
        "macro",
    ),
    ("init-attribute-only", with_body("@[init foo] def x := 1"), "init"),
    ("tactic-attribute", with_body("@[tactic foo] def x := 1"), "tactic"),
    ("command-elab-attribute", with_body("attribute [command_elab foo] x"), "command_elab"),
    ("unlisted-attribute", with_body("@[simp, combinator_formatter foo] def x := 1"), "combinator_formatter"),
    # A comment is whitespace (issue 25): the list after it is read, and judged.
    ("attribute-after-comment", with_body("attribute /- hi -/ [tactic foo] x"), "tactic"),
    ("attribute-comment-inside", with_body("@[simp -- ]\n , tactic foo] def x := 1"), "tactic"),
    ("attribute-string-inside", with_body('@[simp "]" , tactic foo] def x := 1'), "@["),
    ("attribute-unterminated", with_body("@[simp def x := 1"), "@["),
    (
        "profiler-output-option",
        with_body('set_option trace.profiler.output "/tmp/x" in'),
        "trace.profiler.output",
    ),
    ("unknown-option", with_body("set_option bogus true"), "bogus"),
    ("export", with_body("export LeanCheckedNetwork (answer)"), "export"),
    ("Elab-namespace", with_body("open Lean.Elab.Command"), "Elab"),
    ("Meta-namespace", with_body("open Lean.Meta"), "Meta"),
    ("bidi-override", with_body("-- \u202e reversed"), "\u202e"),
    ("bidi-isolate", with_body("-- \u2066 isolated"), "\u2066"),
    ("zero-width-space", with_body("def a\u200bb := 1"), "\u200b"),
    ("zero-width-joiner", with_body("def a\u200db := 1"), "\u200d"),
    ("byte-order-mark", "\ufeff" + HEADER + PROOF, "\ufeff"),
    ("line-separator", with_body("-- a\u2028b"), "\u2028"),
    ("nul", with_body("-- a\x00b"), "\x00"),
    ("lone-surrogate", with_body("-- a\udc80b"), "\udc80"),
    ("carriage-return-is-a-line-break", with_body("-- a\rimport Lean"), "import"),
    ("vertical-tab", with_body("-- a\x0bb"), "\x0b"),
]


@pytest.mark.parametrize(("text", "word"), [(t, w) for _, t, w in BYPASSES], ids=[i for i, _, _ in BYPASSES])
def test_bypass_is_rejected(text: str, word: str) -> None:
    verdict = check_guard(text)
    assert not verdict.passed
    assert verdict.word == word, verdict.reason


# --- imports -------------------------------------------------------------------------------------

IMPORT_CASES: list[tuple[str, str, str]] = [
    ("import-Lean", f"import Lean\n{HEADER}{PROOF}", "import 'Lean' on line 1 is not allowed"),
    ("import-Init", f"{HEADER}import Init.Data.List\n{PROOF}", "import 'Init.Data.List' on line 2"),
    ("import-Mathlib", f"import Mathlib\n{HEADER}{PROOF}", "import 'Mathlib'"),
    ("import-Submission", f"{HEADER}import LeanCheckedNetwork.Submission\n{PROOF}", "not allowed"),
    ("import-all", f"import all {REQUIRED_IMPORT}\n{PROOF}", "import 'all'"),
    # Lean reads the module name after any whitespace (a comment or a line break included): the
    # name is still judged (issue 25)
    ("import-newline", f"import\nLeanCheckedNetwork.Submission\n{HEADER}{PROOF}", "not allowed"),
    ("import-escaped", f"import «LeanCheckedNetwork».Weights\n{PROOF}", "escape"),
    ("import-trailing-dot", f"import {REQUIRED_IMPORT}.Foo\n{PROOF}", "not allowed"),
    (
        "public-import",
        f"{HEADER}public import LeanCheckedNetwork.Network\n{PROOF}",
        "outside the file header",
    ),
    ("meta-import", f"{HEADER}meta import LeanCheckedNetwork.Network\n{PROOF}", "meta"),
    ("module-header", f"module\n{HEADER}{PROOF}", "'module' header"),
    ("module-after-comment", f"/- doc -/\nmodule\n{HEADER}{PROOF}", "'module' header"),
    ("missing-weights", f"import LeanCheckedNetwork.Network\n{PROOF}", "missing required"),
    ("import-only-in-line-comment", f"-- {HEADER}{PROOF}", "missing required"),
    ("import-only-in-block-comment", f"/- {HEADER} -/{PROOF}", "missing required"),
    ("import-in-nested-comment", f"/- /- -/ {HEADER} -/{PROOF}", "missing required"),
    ("import-after-docstring", f"/-- doc -/\n{HEADER}{PROOF}", "missing required"),
    ("import-after-declaration", f"def x := 1\n{HEADER}{PROOF}", "missing required"),
    (
        "second-import-after-body",
        f"{HEADER}{PROOF}\nimport LeanCheckedNetwork.Network\n",
        "outside the file header",
    ),
    ("unterminated-comment", f"/- {HEADER}{PROOF}", "an unterminated comment on line 1"),
]


@pytest.mark.parametrize(
    ("text", "reason"), [(t, r) for _, t, r in IMPORT_CASES], ids=[i for i, _, _ in IMPORT_CASES]
)
def test_import_rule(text: str, reason: str) -> None:
    verdict = check_guard(text)
    assert not verdict.passed
    assert reason in verdict.reason, verdict.reason


def test_missing_import_reason_names_the_module() -> None:
    verdict = check_guard(PROOF)
    assert verdict.reason == f"missing required 'import {REQUIRED_IMPORT}' in the file header"


# --- the three historical exploits ---------------------------------------------------------------

IX_A = """\
import LeanCheckedNetwork.Network

namespace LeanCheckedNetwork.Net
def Spec : Prop := True
theorem adds_mod_7 : Spec := trivial
end LeanCheckedNetwork.Net
"""

IX_B = """\
import LeanCheckedNetwork.Weights

#eval IO.FS.writeFile "Check.lean" "theorem leanModAddProofCheck_statement_matches : True := trivial"

theorem LeanCheckedNetwork.Net.adds_mod_7 : True := trivial
"""

IX_C = """\
import LeanCheckedNetwork.Weights

def LeanModAddProofCheck.LeanCheckedNetwork.Net.Spec : Prop := True

theorem LeanCheckedNetwork.Net.adds_mod_7 : LeanModAddProofCheck.LeanCheckedNetwork.Net.Spec := trivial
"""


def test_ix_a_own_spec_without_weights_import_is_rejected() -> None:
    verdict = check_guard(IX_A)
    assert not verdict.passed
    assert "missing required" in verdict.reason


def test_ix_b_eval_writing_check_lean_is_rejected() -> None:
    verdict = check_guard(IX_B)
    assert not verdict.passed
    assert verdict.word == "#eval" and verdict.line == 3


def test_ix_c_passes_the_guard_by_design() -> None:
    # ix_c uses no banned word: the guard cannot and does not stop it. The judge does: it adds
    # `theorem <check> : LeanCheckedNetwork.Net.Spec := <theorem>` with the kernel (no elaborator,
    # so no name resolution), and the planted `LeanModAddProofCheck.LeanCheckedNetwork.Net.Spec`
    # is another constant, so the types differ (tested on the real toolchain in
    # test_lean_integration.py).
    assert check_guard(IX_C).passed


# --- legitimate files must pass ------------------------------------------------------------------

PASSING: list[tuple[str, str]] = [
    *[(f"reference-p{p}", reference_submission(p)) for p in (5, 7, 11, 13, 17, 19, 23)],
    ("maxRecDepth", f"{HEADER}\nset_option maxRecDepth 100000 in\n{PROOF.strip()}\n"),
    (
        "maxHeartbeats-0",
        f"{HEADER}\nset_option maxHeartbeats 0 in\nset_option maxRecDepth 20000 in\n{PROOF.strip()}\n",
    ),
    ("pp-option", with_body("set_option pp.all true in\n#check 1")),
    (
        "substrings",
        with_body("def initial_value := 0\ndef prefix_sum := 1\ndef partial_sum := 2\ndef axiomatic_x := 3"),
    ),
    (
        "lowercase-neighbours",
        with_body("-- an alternative route; alternatively, unsorryable\ndef elaborate := 1"),
    ),
    (
        "comments-mentioning-network",
        with_body(
            "-- Network.lean defines `answer`; the kernel evaluates it.\n/- nested /- comment -/ here -/"
        ),
    ),
    ("comment-before-import", f"/- Submission for p = 7 /- nested -/ -/\n-- header comment\n{HEADER}{PROOF}"),
    ("comment-glued-to-import", f"/- c -/{HEADER}{PROOF}"),
    ("nested-comment-glued-to-import", f"/- a /- b -/ c -/{HEADER}{PROOF}"),
    ("line-comment-then-import", f"--\n{HEADER}{PROOF}"),
    ("both-imports", f"import LeanCheckedNetwork.Network\n{HEADER}{PROOF}"),
    ("imports-one-line", f"import LeanCheckedNetwork.Network import {REQUIRED_IMPORT}\n{PROOF}"),
    ("import-two-spaces", f"import  {REQUIRED_IMPORT}\n{PROOF}"),
    ("import-trailing-comment", f"import {REQUIRED_IMPORT} -- the weights\n{PROOF}"),
    (
        "simp-attributes",
        with_body(
            "@[simp] theorem z : 0 + 0 = 0 := rfl\nattribute [local simp] Nat.add_comm\n"
            "@[simp 1100, reducible] def q := 1"
        ),
    ),
    ("decide-kernel-named", with_body("example : 1 = 1 := by decide (kernel := true)")),
    ("simp-config-decide", with_body("example : 1 + 1 = 2 := by simp (config := { decide := true })")),
    (
        "names-holding-true",
        with_body(
            "theorem trueRow : True := trivial\ntheorem is_true_lemma : True := trivial\n"
            "def falsify := 1\ndef row_false_x := 2"
        ),
    ),
    ("bool-match-alternatives", with_body("def f : Bool → Nat\n  | true => 1\n  | false => 0")),
    (
        "hash-check-print",
        with_body("#check LeanCheckedNetwork.answer\n#print axioms Nat.add_comm\n#reduce 1 + 1"),
    ),
    ("tactic-in-comment", with_body("-- the decide tactic runs in the kernel")),
    ("ratio-and-types", with_body("def ratio := 1\n-- BaseIO and EIO are only mentioned")),
    ("decide-config-kernel", with_body("example : 1 = 1 := by decide (config := { kernel := true })")),
    ("cyrillic-look-alike", with_body("-- ѕorry is a different identifier to Lean")),
    ("array-literal-and-raw-string", with_body('def a := #[1, 2]\ndef s := r#"x"#')),
    (
        "namespace-and-open",
        with_body("namespace LeanCheckedNetwork.Net\nopen LeanCheckedNetwork\nend LeanCheckedNetwork.Net"),
    ),
    ("tabs-are-lean's-problem", with_body("def x :=\t1")),
]


@pytest.mark.parametrize("text", [t for _, t in PASSING], ids=[i for i, _ in PASSING])
def test_legitimate_file_passes(text: str) -> None:
    verdict = check_guard(text)
    assert verdict.passed, verdict.reason
    assert verdict == GuardVerdict(True, "ok", None, None)


# --- robustness ----------------------------------------------------------------------------------


def test_verdict_is_frozen() -> None:
    verdict = check_guard(PROOF)
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.passed = True  # type: ignore[misc]


def test_never_raises_on_random_text() -> None:
    rng = random.Random(20261016)
    alphabet = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ .\n-/[]@#«»'\"(){}:=")
    alphabet += ["\x00", "\r", "\t", "\u202e", "\udc80", "α", "₁", "→", "sorry", "import ", "/-", "-/", "@["]
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
        verdict = check_guard(rng.choice(["", HEADER]) + text)
        assert isinstance(verdict, GuardVerdict)
        assert verdict.passed or verdict.reason


# --- fail closed ---------------------------------------------------------------------------------

RULE_NAMES = [rule.__name__ for rule in guardmod._RULES]


@pytest.mark.parametrize("exc", [RuntimeError("boom"), RecursionError(), MemoryError(), KeyError("k")])
@pytest.mark.parametrize("index", range(len(RULE_NAMES)), ids=RULE_NAMES)
def test_a_rule_that_raises_rejects_the_file(
    monkeypatch: pytest.MonkeyPatch, index: int, exc: Exception
) -> None:
    text = reference_submission(7)
    assert check_guard(text).passed  # every rule runs on this file, and none rejects it

    def broken(_: str) -> GuardVerdict | None:
        raise exc

    broken.__name__ = RULE_NAMES[index]
    rules = list(guardmod._RULES)
    rules[index] = broken
    monkeypatch.setattr(guardmod, "_RULES", tuple(rules))
    verdict = check_guard(text)
    assert not verdict.passed
    assert verdict.reason == (
        f"{INTERNAL_ERROR_REASON} ({type(exc).__name__} in {RULE_NAMES[index]}); the file is rejected"
    )
    assert verdict.word is None and verdict.line is None


def test_an_error_while_normalising_rejects_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(_: str) -> str:
        raise UnicodeError("bad")

    monkeypatch.setattr(guardmod, "as_lean_file", broken)
    verdict = check_guard(reference_submission(7))
    assert not verdict.passed
    assert (
        verdict.reason
        == f"{INTERNAL_ERROR_REASON} (UnicodeError in normalising the text); the file is rejected"
    )


def test_an_error_in_the_size_check_rejects_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(_: str) -> None:
        raise OverflowError

    monkeypatch.setattr(guardmod, "_check_size", broken)
    verdict = check_guard(reference_submission(7))
    assert verdict.reason == f"{INTERNAL_ERROR_REASON} (OverflowError in _check_size); the file is rejected"


def test_a_rule_after_a_failing_one_does_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(_: str) -> GuardVerdict | None:
        raise AssertionError("must not run")

    monkeypatch.setattr(guardmod, "_RULES", (guardmod._RULES[0], broken))
    verdict = check_guard(with_body("-- \x01"))
    assert not verdict.passed and verdict.word == "\x01"


def test_a_non_string_is_rejected_not_raised() -> None:
    verdict = check_guard(b"import x")  # type: ignore[arg-type]
    assert not verdict.passed and verdict.reason.startswith(INTERNAL_ERROR_REASON)


# --- paths that were live but untested (issue 21) ------------------------------------------------

LIVE_PATHS: list[tuple[str, str, str, int | None]] = [
    # (id, file text, the word the verdict names, its line)
    # The bracket scan starts at the list's own `[`: a balanced list earlier in the file must not
    # be taken for it (that made the allow-list check vanish).
    ("attribute-after-a-list", with_body("def xs := [1, [2]]\n@[tactic foo] def x := 1"), "tactic", 4),
    ("attribute-command-after-a-list", with_body("def xs := [1]\nattribute [tactic] x"), "tactic", 4),
    ("attribute-command", with_body("attribute [tactic] x"), "tactic", 3),
    ("attribute-then-comment", with_body("attribute -- x\n[tactic] y"), "tactic", 3),
    ("attribute-then-block-comment", with_body("attribute /- x -/ [tactic] y"), "tactic", 3),
    ("import-after-module-docstring", f"/-! doc -/\n{HEADER}{PROOF}", "import", None),
    ("import-after-docstring", f"/-- doc -/\n{HEADER}{PROOF}", "import", None),
    # every list is checked, not only the first
    ("second-attribute-list", with_body("@[simp] def a := 1\n@[tactic foo] def x := 1"), "tactic", 4),
    ("attribute-list-after-command", with_body("attribute [simp] a\n@[tactic foo] def x := 1"), "tactic", 4),
    ("block-comment-in-attribute-list", with_body("@[simp /- -/ tactic] def x := 1"), "tactic", 3),
    ("string-in-attribute-list", with_body("@[simp \"x\"] def x := 1"), "@[", 3),
    ("char-in-attribute-list", with_body("@[simp 'x'] def x := 1"), "@[", 3),
    # a digit run is searched for banned words case-sensitively, as identifiers are
    ("capital-word-in-digit-run", with_body("def x := 0IO.FS"), "IO", 3),
    ("camel-word-in-digit-run", with_body("def x := 1sorryAx"), "sorry", 3),  # the seed's word first
    ("camel-project-word-in-digit-run", with_body("def x := 1sorryAxe"), "sorry", 3),
    ("project-word-in-digit-run", with_body("def x := 1Environment"), "Environment", 3),
    ("attribute-command-spaced", with_body("attribute\n  [local tactic] x"), "tactic", 3),
    ("attribute-command-unterminated", with_body("def xs := [1]\nattribute [simp x"), "@[", 4),
    ("digit-suffixed-name-before-percent", with_body("def y := h2%7"), "h2%", 3),
    ("primed-digit-name-before-percent", with_body("def y := h'12% 7"), "h'12%", 3),
    ("priority-expression", with_body("def i := f (priority := high + f x)"), "priority", 3),
    ("priority-application", with_body("def i := f (priority := f high)"), "priority", 3),
    ("bare-dbg", with_body("def y := dbg"), "dbg", 3),
    ("dbg-call", with_body("def y := dbg 1"), "dbg", 3),
    ("del-character", with_body("-- a\x7fb"), "\x7f", 3),
    ("digit-before-lc-constant", with_body("def y := 0lcCast"), "lcCast", 3),
    ("dotted-lc-constant", with_body("def y := x.lcAny"), "lcAny", 3),
    ("ends-in-import", f"{HEADER}{PROOF}import", "import", PROOF.count("\n") + 2),
    ("only-import", "import", "import", 1),
    ("option-unreadable", with_body("set_option 1x true"), "set_option", 3),
    ("option-glued", with_body("set_option pp.all:true"), "set_option", 3),
    ("option-last-word", f"{HEADER}{PROOF}set_option", "set_option", PROOF.count("\n") + 2),
]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "word", "line"), [(t, w, ln) for _, t, w, ln in LIVE_PATHS], ids=[i for i, *_ in LIVE_PATHS]
)
def test_live_path_is_rejected(text: str, word: str, line: int | None) -> None:
    verdict = check_guard(text)
    assert not verdict.passed
    assert (verdict.word, verdict.line) == (word, line), verdict.reason
    if line is not None:
        assert f"line {line}" in verdict.reason


@pytest.mark.parametrize(
    "text",
    [
        with_body("def xs := [1, [2]]\n@[simp] theorem z : 0 + 0 = 0 := rfl"),
        with_body("def y := 100% 7"),
        with_body("def y := x.lcase"),
        with_body("def y := flcCast"),
        with_body("def i := f (priority := 10)"),
        with_body("def my_dbg_free := 1"),
    ],
    ids=["list-then-attribute", "number-percent", "lc-lowercase", "lc-inside-name", "priority-number",
         "dbg-inside-name-with-underscores"],
)  # fmt: skip
def test_neighbours_of_live_paths_pass(text: str) -> None:
    verdict = check_guard(text)
    if "my_dbg_free" in text:  # `dbg` is also a banned part: a strict part of a longer name
        assert not verdict.passed and verdict.word == "dbg"
    else:
        assert verdict.passed, verdict.reason


def test_the_first_of_many_digit_runs_is_named() -> None:
    # Distinct runs are examined in set order (which changes from run to run); the verdict must
    # still name the first offending run of the file, on its own line.
    body = "\n".join(f"def y{i} := {i}sorry" for i in range(1, 61))
    verdict = check_guard(with_body(body))
    assert (verdict.word, verdict.line) == ("sorry", 3)
    assert verdict.reason == "forbidden word 'sorry' (in '1sorry') on line 3"


# --- reasons name what they found ----------------------------------------------------------------

REASONS: list[tuple[str, str, str]] = [
    # (id, file text, the exact reason)
    ("attribute-unterminated", with_body("@[simp def x := 1"), "unterminated attribute list on line 3"),
    ("attribute-string-inside", with_body("@[simp \"x\"] def x := 1"),
     "comment or string inside the attribute list on line 3"),
    ("attribute-word", with_body("@[tactic foo] def x := 1"),
     "attribute word 'tactic' on line 3 is not allowed (allowed: "
     + ", ".join(ALLOWED_ATTRIBUTE_WORDS) + ", numbers, `grind` with its modifiers, `norm_cast` with its "
     "label)"),
    ("option", with_body("set_option bogus true"), "option 'bogus' on line 3 is not allowed"),
    ("option-name", with_body("set_option 1x true"),
     "cannot read the option name after 'set_option' on line 3"),
    ("named-value", with_body("def y := f (x := g)"),
     "'(x := ...)' on line 3 must have a literal value (`true`, `false`, a number, or "
     "`{ field := literal, ... }`): tactic options are compiled and run while the file builds "
     "(write `+opt`/`-opt` for a yes/no option)"),
    ("named-comment", with_body("def y := f (/- -/ x := g)"),
     "'(x := ...)' on line 3 must have a literal value (`true`, `false`, a number, or "
     "`{ field := literal, ... }`): tactic options are compiled and run while the file builds "
     "(write `+opt`/`-opt` for a yes/no option)"),
    ("module", f"module\n{HEADER}{PROOF}", "a 'module' header (line 1) is not allowed"),
    ("hash", with_body("#eval 1"),
     "forbidden command '#eval' on line 3 (allowed: #check, #print, #reduce, #synth)"),
    ("long-hash", with_body("#" + "a" * 100),
     "forbidden command '#" + "a" * 79 + "' on line 3 (allowed: #check, #print, #reduce, #synth)"),
    ("long-option", with_body(f"set_option {'a' * 100} 1"), f"option '{'a' * 80}' on line 3 is not allowed"),
    ("word-in-run", with_body("def y := my_unsafe_x"),
     "forbidden word 'unsafe' (in 'my_unsafe_x') on line 3"),
    ("word", with_body("def y := sorry"), "forbidden word 'sorry' on line 3"),
    ("nul", with_body("-- \x00"), "NUL character on line 3"),
    ("escape", with_body("def «x» := 1"), "identifier escape '«' on line 3 is not allowed"),
    ("del", with_body("-- \x7f"), "forbidden character U+007F (unnamed) on line 3"),
    ("surrogate", with_body("-- \udc80"), "forbidden character U+DC80 (lone surrogate) on line 3"),
    ("bidi", with_body("-- \u202e"), "forbidden character U+202E RIGHT-TO-LEFT OVERRIDE on line 3"),
    ("percent", with_body("def y := h2%7"),
     "'h2%' on line 3: a name right before '%' is not allowed (`name%` is a term elaborator such as "
     "`type_of%`; write `a % b` with spaces)"),
    ("lc", with_body("def y := lcCast"),
     "compiler-internal name 'lcCast' on line 3 is not allowed (`lc…` constants such as `lcCast` are "
     "unsafe compiler axioms)"),
    ("import-outside", f"{HEADER}{PROOF}import {REQUIRED_IMPORT}\n",
     f"'import' on line {PROOF.count(chr(10)) + 2} is outside the file header (imports must come first, "
     "before any declaration or doc comment)"),
    ("import-nothing", "import\n", "import '<nothing on this line>' on line 1 is not allowed (allowed: "
     "LeanCheckedNetwork.Network, LeanCheckedNetwork.Weights)"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "reason"), [(t, r) for _, t, r in REASONS], ids=[i for i, *_ in REASONS])
def test_reason_is_exact(text: str, reason: str) -> None:
    assert check_guard(text).reason == reason


# --- rule 10: literal names (issue 17) -----------------------------------------------------------

# `(kernel := true)` elaborates the file's own `true` in its scope (lean4
# src/Lean/Elab/Tactic/Config.lean `elabConfig`; src/Lean/ResolveName.lean `resolveGlobalName` tries
# the surrounding namespaces before the `Bool.true` alias), then compiles and runs it.
LITERAL_CASES: list[tuple[str, str, str, int]] = [
    # (id, body from line 3, the literal the verdict names, the line of the name)
    ("def-true", "def true : Bool := false", "true", 3),
    ("def-false", "def false : Bool := true", "false", 3),
    ("namespace-def-true",
     "namespace LeanCheckedNetwork.Net\ndef true : Bool := (List.range 9).length > 0\n"
     "end LeanCheckedNetwork.Net", "true", 4),
    ("qualified", "def LeanCheckedNetwork.Net.true : Bool := false", "true", 3),
    ("root", "def _root_.true : Bool := false", "true", 3),
    ("protected", "protected def true : Bool := false", "true", 3),
    ("private", "private def true : Bool := false", "true", 3),
    ("noncomputable", "noncomputable def false : Bool := true", "false", 3),
    ("attribute-before", "@[simp] def true : Bool := false", "true", 3),
    ("set-option-in", "set_option maxRecDepth 100 in\ndef true : Bool := false", "true", 4),
    ("abbrev", "abbrev false : Bool := true", "false", 3),
    ("theorem", "theorem true : True := trivial", "true", 3),
    ("lemma", "lemma false : True := trivial", "false", 3),
    ("structure", "structure true where\n  x : Nat", "true", 3),
    ("class", "class false where\n  x : Nat", "false", 3),
    ("inductive", "inductive true | a", "true", 3),
    ("class-inductive", "class inductive false | a", "false", 3),
    ("class-abbrev", "class abbrev true := Inhabited Nat", "true", 3),
    ("primed", "def true' : Bool := false", "true", 3),
    ("universe", "def true.{u} : Bool := false", "true", 3),
    ("middle-component", "def Foo.true.bar := 1", "true", 3),
    ("unicode-prefix", "def αβ.true : Bool := false", "true", 3),
    ("symbol-glued", "def x.true∀ : Bool := false", "true", 3),
    ("line-comment-between", "def -- the name follows\n  true : Bool := false", "true", 4),
    ("block-comment-between", "def /- a /- nested -/ b -/ true : Bool := false", "true", 3),
    ("doc-comment-between", "def /-- doc -/ true : Bool := false", "true", 3),
    ("comments-between", "def /- a -/ -- b\n  /- c -/ true : Bool := false", "true", 4),
    ("newline-between", "def\n  true : Bool := false", "true", 4),
    ("line-comment-then-column-0", "def -- c\ntrue := false", "true", 4),
    ("line-comments-then-column-0", "def -- c\n-- d\nfalse := true", "false", 5),
    ("bar-then-newline", "inductive T |\n  true", "true", 4),
    ("no-space", "def/- c -/true := false", "true", 3),
    ("mutual", "mutual\ndef true : Bool := false\nend", "true", 4),
    ("where-aux", "theorem t : True := trivial\nwhere\n  true := false", "true", 5),
    ("where-attribute", "theorem t : True := trivial\nwhere @[simp] true := false", "true", 4),
    ("where-doc", "theorem t : True := trivial\nwhere /-- doc -/ true := false", "true", 4),
    ("where-private", "theorem t : True := trivial\nwhere private nonrec true := false", "true", 4),
    ("let-rec", "def t : Nat := let rec true := false; 0", "true", 3),
    ("let-rec-attribute", "def t : Nat := let rec @[simp] false := true; 0", "false", 3),
    ("structure-field-first", "structure S where true : Bool", "true", 3),
    ("structure-field-later", "structure S where\n  x : Nat\n  true : Bool", "true", 5),
    ("structure-field-default", "structure S where true := false", "true", 3),
    ("structure-field-binder", "structure S where\n  (true : Bool)", "true", 4),
    ("class-field", "class C where\n  x : Nat\n  false : Bool", "false", 5),
    ("structure-constructor", "structure S where\n  true ::\n  x : Nat", "true", 4),
    ("constructor", "inductive T | a | true", "true", 3),
    ("constructor-typed", "inductive T where\n  | a : T\n  | true : T", "true", 5),
    ("constructor-arguments", "inductive T where\n  | true (n : Nat)", "true", 4),
    ("constructors-one-line", "inductive T | true | false", "true", 3),
    ("constructor-modifiers", "inductive T where\n  | /-- doc -/ @[simp] private true", "true", 4),
    ("constructor-last", "inductive T where\n  | a\n  | false", "false", 5),
    ("constructor-qualified", "inductive T | T.true", "true", 3),
    ("binder", "def f (true : Bool) : Bool := true", "true", 3),
    ("variable", "variable (false : Bool)", "false", 3),
    # a group followed by `→` is a dependent arrow's binder (an ascription beside `=` passes:
    # test_guard_names.py, ASCRIPTIONS)
    ("dependent-arrow", "def f : (true : Bool) → Bool := fun b => b", "true", 3),
    ("colon-after-comments", "example := (true /- x -/ -- y\n  : Bool)", "true", 3),
    # shadowing in any position, with or without comments in between (issue 25)
    ("field-run", "structure S where\n  x : Nat\n  true other : Bool", "true", 5),
    ("field-run-comment", "structure S where\n  x : Nat\n  true -- c\n    other : Bool", "true", 5),
    ("field-binders", "structure S where\n  x : Nat\n  true (n : Nat) : Bool", "true", 5),
    ("field-default-later", "structure S where\n  x : Nat\n  true := Bool.false", "true", 5),
    ("binder-run", "def f (a true : Bool) := 1", "true", 3),
    ("binder-run-lines", "def f (a\n    true : Bool) := 1", "true", 4),
    ("constructor-name-assign", "structure S := true ::\n  x : Nat", "true", 3),
    ("constructor-name-where-comment", "structure S where /- c -/\n  true ::\n  x : Nat", "true", 4),
]  # fmt: skip


@pytest.mark.parametrize(
    ("body", "literal", "line"), [c[1:] for c in LITERAL_CASES], ids=[c[0] for c in LITERAL_CASES]
)
def test_a_literal_name_is_rejected(body: str, literal: str, line: int) -> None:
    verdict = check_guard(with_body(body))
    assert not verdict.passed
    assert (verdict.word, verdict.line) == (literal, line), verdict.reason
    assert f"on line {line}: nothing may be named `true` or `false`" in verdict.reason


LITERAL_REASONS: list[tuple[str, str, str]] = [
    ("keyword", "def Net.true : Bool := false",
     "'def Net.true' on line 3: nothing may be named `true` or `false`; a tactic option such as "
     "`(kernel := true)` is resolved in the file's scope, so it would run the file's own declaration "
     "while the file builds"),
    ("constructor", "inductive T | false : T",
     "'| false' on line 3: nothing may be named `true` or `false` (a constructor; a match alternative "
     "`| true => ...` or `| true | false => ...` is fine); a tactic option such as `(kernel := true)` is "
     "resolved in the file's scope, so it would run the file's own declaration while the file builds"),
    ("binder", "def f (true : Bool) := 1",
     "'true :' on line 3: nothing may be named `true` or `false` (a field, binder or type ascription); "
     "a tactic option such as `(kernel := true)` is resolved in the file's scope, so it would run the "
     "file's own declaration while the file builds"),
    # the same `true` found twice: the keyword's reading wins over the colon's
    ("keyword-before-colon", "def true : Bool := false",
     "'def true' on line 3: nothing may be named `true` or `false`; a tactic option such as "
     "`(kernel := true)` is resolved in the file's scope, so it would run the file's own declaration "
     "while the file builds"),
    # and the constructor's over the colon's
    ("constructor-before-colon", "inductive T | true : T",
     "'| true' on line 3: nothing may be named `true` or `false` (a constructor; a match alternative "
     "`| true => ...` or `| true | false => ...` is fine); a tactic option such as `(kernel := true)` is "
     "resolved in the file's scope, so it would run the file's own declaration while the file builds"),
    # the first in the file wins, whichever scan found it
    ("colon-first", "def f (false : Bool) := 1\ndef true := 1",
     "'false :' on line 3: nothing may be named `true` or `false` (a field, binder or type ascription); "
     "a tactic option such as `(kernel := true)` is resolved in the file's scope, so it would run the "
     "file's own declaration while the file builds"),
    ("constructor-first", "inductive T | true\ndef false := 1",
     "'| true' on line 3: nothing may be named `true` or `false` (a constructor; a match alternative "
     "`| true => ...` or `| true | false => ...` is fine); a tactic option such as `(kernel := true)` is "
     "resolved in the file's scope, so it would run the file's own declaration while the file builds"),
    ("long-constructor", "inductive T | " + "a" * 100 + ".true",
     "'| " + "a" * 80 + "' on line 3: nothing may be named `true` or `false` (a constructor; a "
     "match alternative `| true => ...` or `| true | false => ...` is fine); a tactic option such as "
     "`(kernel := true)` is resolved in the file's scope, so it would run the file's own declaration "
     "while the file builds"),
    ("long-name", "def " + "a" * 100 + ".true := 1",
     "'def " + "a" * 80 + "' on line 3: nothing may be named `true` or `false`; a tactic option such as "
     "`(kernel := true)` is resolved in the file's scope, so it would run the file's own declaration "
     "while the file builds"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("body", "reason"), [c[1:] for c in LITERAL_REASONS], ids=[c[0] for c in LITERAL_REASONS]
)
def test_literal_name_reason_is_exact(body: str, reason: str) -> None:
    assert check_guard(with_body(body)).reason == reason


LITERAL_NEIGHBOURS: list[tuple[str, str]] = [
    # (id, body): `true` and `false` used, never declared
    ("names-holding-a-literal", "def trueRow : Bool := true\ntheorem is_true_lemma : True := trivial\n"
     "def falsy := 0\ndef x.untrue := 1\ndef x.true_ := 2\ndef truex := 3"),
    ("match-alternatives", "def f : Bool → Nat\n  | true => 1\n  | false => 0"),
    ("match-several", "def g (a b : Bool) : Nat := match a, b with\n  | true, _ => 1\n  | false, true => 2\n"
     "  | false, false => 3"),
    ("match-dotted", "def h (b : Bool) : Nat := match b with\n  | .true => 1\n  | Bool.false => 0"),
    ("match-arrow-next-line", "def k (b : Bool) : Nat := match b with\n  | true -- yes\n    => 1\n"
     "  | /- no -/ false /- c -/ => 0"),
    ("cases-with", "theorem c (b : Bool) : b = true ∨ b = false := by\n  cases b with\n"
     "  | true => exact .inr rfl |>.symm.elim (fun h => .inl rfl) (fun h => .inl rfl)\n"
     "  | false => exact .inr rfl"),
    ("fun-alternatives", "def n : Bool → Nat := fun | true => 1 | false => 0"),
    ("equations", "theorem r : decide (2 < 3) = true := by decide\n"
     "theorem r' (b : Bool) (h : b = true) : (b || false) = true := by simp [h]"),
    ("operators", "def o (b : Bool) : Bool := b || true && false\ndef o' (b : Bool) : Bool := b ||| true\n"
     "theorem p : (id <| true) = true := rfl\ntheorem p' : (true |> id) = true := rfl"),
    ("cons", "theorem q : [true, false] = true :: [false] := rfl"),
    ("field-default", "structure Row where\n  ok : Bool := true\n  n : Nat := 0"),
    ("if-then", "def w (b : Bool) : Nat := if b = true then 1 else 0"),
    ("qualified-use", "theorem u : Bool.true = true := rfl\n"
     "def z (b : Bool) : Bool := Bool.rec false true b"),
    ("config-literals", "example : 1 = 1 := by decide (kernel := true)\n"
     "example : 1 = 1 := by decide (config := { kernel := true })\n"
     "example : 1 + 1 = 2 := by simp (config := { decide := true, zeta := false })"),
    ("comment", "-- true and false are Bool; `decide` proves each row"),
    ("where-other-name", "theorem t : True := aux\nwhere\n  aux : True := trivial"),
    ("constructor-other-name", "inductive T | yes | no : T"),
    # a keyword or literal only as the start of a longer name: no skip starts there
    ("glued-modifier", "def y (trueprivate : Bool) := trueprivate\n"
     "def z := f defprivate true whereprivate false"),
]  # fmt: skip


@pytest.mark.parametrize("body", [b for _, b in LITERAL_NEIGHBOURS], ids=[i for i, _ in LITERAL_NEIGHBOURS])
def test_a_literal_name_that_is_only_used_passes(body: str) -> None:
    verdict = check_guard(with_body(body))
    assert verdict.passed, verdict.reason


def test_an_unterminated_comment_after_a_keyword_ends_the_text() -> None:
    # Lean reports an unterminated comment as an error, so the file cannot build: the guard
    # rejects it outright (the lexer never has to guess where the code resumes).
    for text in (f"{HEADER}{PROOF}def /- true := false\n", f"{HEADER}{PROOF}def /- -/ /- true := false\n"):
        verdict = check_guard(text)
        assert not verdict.passed and verdict.reason == "an unterminated comment on line 5"
    assert not check_guard(f"{HEADER}{PROOF}def /- /- -/ true := false\n").passed
    verdict = check_guard(f"{HEADER}{PROOF}def /- -/ true /- := false\n")
    assert (verdict.passed, verdict.line) == (False, PROOF.count("\n") + 2)


@pytest.mark.parametrize("cls", INSTANCE_CLASSES)
def test_instances_of_the_allowed_classes_pass_and_their_names_are_not_shadowed(cls: str) -> None:
    # Honest proofs declare `Decidable` instances for their own predicates (decide then runs the
    # kernel or whnf on them, never compiled code) and `Inhabited` ones for their types.
    for body in (
        f"instance (n : Nat) : {cls} (n < 5) := sorry_free",
        f"local instance : {cls} Nat := x",
        f"instance (priority := low) myInst {{n : Nat}} [h : {cls} n] : {cls} (f n) where\n  x := 1",
    ):
        assert check_guard(with_body(body.replace("sorry_free", "x"))).passed, body
    for body, word in (
        (f"abbrev {cls} := OfNat Nat 5", cls),
        (f"def Foo.{cls} : Type := Nat", cls),
        (f"structure S where\n  a : Nat\n  {cls} : Nat", cls),
        (f"def f ({cls} : Nat) := 1", cls),
    ):
        verdict = check_guard(with_body(body))
        assert not verdict.passed and verdict.word == word and verdict.line is not None, body
        assert "shadow" in verdict.reason
    # a binder of that class, and a name that only contains it, are fine
    assert check_guard(with_body(f"theorem t (h : {cls} (1 = 1)) : True := trivial")).passed
    assert check_guard(with_body(f"def my{cls}Thing : Nat := 1")).passed


def test_an_instance_is_rejected_in_every_spelling() -> None:
    # Numerals (`OfNat`) and coercions (`CoeT`) are found by instance synthesis, where the file's
    # own instance could win; only instances of INSTANCE_CLASSES, written as `instance ... : C`.
    for body in (
        "instance : OfNat Nat n := ⟨0⟩",
        "instance instOfNatBool : OfNat Bool n := ⟨true⟩",
        "local instance : Coe Bool Nat := ⟨Bool.toNat⟩",
        "scoped instance : CoeTail Bool Nat := ⟨Bool.toNat⟩",
        "@[instance] def x : NatCast Bool := ⟨fun _ => false⟩",
        "attribute [instance] Nat.cast",
        "attribute [local instance] x",
        "@[simp, instance 10] def y : IntCast Bool := ⟨fun _ => false⟩",
        "deriving instance Repr for Nat",
        "instance (priority := high) i : OfNat Nat 3 := ⟨0⟩",
        "instance : _root_.Decidable True := inferInstance",
        "instance : Decidable' True := inferInstance",
        "instance (h : Decidable p) : CoeT Nat n Int := ⟨0⟩",
    ):
        verdict = check_guard(with_body(body))
        assert (verdict.passed, verdict.word, verdict.line) == (False, "instance", 3), body
    assert check_guard(with_body("@[default_instance] def x : OfNat Nat 1 := ⟨0⟩")).word == "default_instance"
    assert (
        "an instance of `OfNat` on line 3" in check_guard(with_body("instance : OfNat Nat n := ⟨0⟩")).reason
    )
    # `deriving instance` is read like `instance` (issue 25): its classes face the same allow-list
    assert (
        "'deriving instance Repr' on line 3"
        in check_guard(with_body("deriving instance Repr for Nat")).reason
    )
    assert (
        "'deriving instance OfNat'"
        in check_guard(with_body("deriving instance DecidableEq, OfNat for T")).reason
    )
    assert check_guard(with_body("open Nat renaming succ → true")).word == "renaming"
    # `inferInstance` and `instDecidableEqNat` are other names
    assert check_guard(
        with_body("def d : DecidableEq Nat := inferInstance\ndef e := instDecidableEqNat")
    ).passed


# --- size and speed ------------------------------------------------------------------------------


def test_more_than_one_mebibyte_is_rejected_before_any_rule_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # Was a wall-clock bound; now shown directly: with every rule broken (and normalising too,
    # for text that cannot shrink under the cap), an over-size file still gets the size verdict.
    def broken(_: str) -> None:
        raise AssertionError("a rule read an over-size file")

    monkeypatch.setattr(guardmod, "_RULES", (broken,))
    for text in (HEADER + "a" * MAX_SUBMISSION_BYTES, "x" * 2 * MAX_SUBMISSION_BYTES):
        verdict = check_guard(text)
        assert not verdict.passed and "larger than 1 MiB" in verdict.reason
    monkeypatch.setattr(guardmod, "as_lean_file", broken)
    for text in ("x" * 50_000_000, "\r\n" * 5_000_000, "x" * (2 * MAX_SUBMISSION_BYTES + 1)):
        verdict = check_guard(text)
        assert not verdict.passed and "larger than 1 MiB" in verdict.reason


def test_size_counts_utf8_bytes_of_the_normalised_file() -> None:
    # Fewer than 1 MiB characters, more than 1 MiB bytes.
    many_bytes = HEADER + "-- " + "α" * (MAX_SUBMISSION_BYTES // 2) + "\n" + PROOF
    assert "larger than 1 MiB" in check_guard(many_bytes).reason
    # Exactly 1 MiB once the final newline is added passes; one byte more does not.
    base = f"{HEADER}{PROOF}-- "
    exact = base + "x" * (MAX_SUBMISSION_BYTES - len(base.encode()) - 1)
    assert check_guard(exact).passed
    assert "larger than 1 MiB" in check_guard(exact + "x").reason
    # CRLF is counted after it becomes LF, as the pipeline sees it.
    assert check_guard(exact.replace("\n", "\r\n")).passed


def test_the_byte_cap_plus_one() -> None:
    base = f"{HEADER}-- "  # ASCII: as many characters as bytes
    exact = base + "x" * (MAX_SUBMISSION_BYTES - len(base) - 1) + "\n"
    assert len(exact) == len(exact.encode()) == MAX_SUBMISSION_BYTES
    assert check_guard(exact).passed
    ascii_over = exact[:-1] + "x\n"  # one character and one byte more
    assert (
        check_guard(ascii_over).reason == "submission is larger than 1 MiB; at most 1048576 bytes are allowed"
    )
    utf8_over = exact.replace("x", "é", 1)  # as many characters, one byte more
    assert len(utf8_over) == MAX_SUBMISSION_BYTES
    assert check_guard(utf8_over).reason == (
        "submission is larger than 1 MiB (1048577 bytes of UTF-8); at most 1048576 bytes are allowed"
    )
    # no final newline: the one the guard adds counts
    assert check_guard(exact[:-1]).passed
    assert "larger than 1 MiB" in check_guard(exact[:-1] + "x").reason


def test_text_that_only_shrinks_under_the_cap_is_read() -> None:
    # Up to twice the cap in characters may still be under it once CRLF becomes LF.
    raw = "\r\n" * MAX_SUBMISSION_BYTES
    assert len(raw) == 2 * MAX_SUBMISSION_BYTES
    assert "missing required" in check_guard(raw).reason  # the rules ran
    assert "larger than 1 MiB" in check_guard(raw + "\r\n").reason
    crlf = f"{HEADER}{PROOF}".replace("\n", "\r\n")
    assert check_guard(crlf + "-- " + "x" * 1000 + "\r\n").passed


def _fill(unit: str, head: str = HEADER, tail: str = "", size: int = MAX_SUBMISSION_BYTES) -> str:
    """`head`, then `unit` repeated to just under `size` bytes of UTF-8, then `tail`."""
    room = size - len((head + tail).encode()) - 1
    return head + unit * (room // len(unit.encode())) + tail


#: Adversarial inputs of about `size` bytes, one per shape a rule could be slow on.
ADVERSARIAL: dict[str, Callable[[int], str]] = {
    "words": lambda n: _fill("a ", size=n),
    "distinct-words": lambda n: HEADER + " ".join(f"alternative{i}" for i in range(n // 19)),
    "one-run": lambda n: _fill("a", size=n),
    "one-line-of-symbols": lambda n: _fill("+-*", size=n),
    "many-attribute-openers": lambda n: _fill("@[", size=n),
    "many-attribute-lists": lambda n: _fill("@[simp] def x := 1\n", size=n),
    "nested-brackets": lambda n: _fill("[", head=HEADER + "@[", tail="]" * 1000, size=n),
    "balanced-nested-brackets": lambda n: HEADER + "@[" + "[" * (n // 2 - 64) + "]" * (n // 2 - 63),
    "attribute-keywords": lambda n: _fill("attribute ", size=n),
    "named-openers": lambda n: _fill("(x := ", size=n),
    "named-literals": lambda n: _fill("(x := 1) ", size=n),
    "named-structs": lambda n: _fill("(c := { a := true, b := 2 }) ", size=n),
    "struct-fields": lambda n: _fill("a := true, ", head=HEADER + "(c := { ", tail="})", size=n),
    "open-parens": lambda n: _fill("(", size=n),
    "paren-spaces": lambda n: _fill("(" + " " * 200, size=n),
    "names-then-spaces": lambda n: _fill("(abc" + " " * 200, size=n),
    "set-options": lambda n: _fill("set_option maxRecDepth 100 in\n", size=n),
    "set-option-words": lambda n: _fill("set_option ", size=n),
    "line-comments": lambda n: _fill("-- x\n", size=n),
    "dashes": lambda n: _fill("-", size=n),
    "block-openers": lambda n: _fill("/-", size=n),
    "nested-comments": lambda n: _fill("/- ", head="", tail="-/" * 1000 + HEADER, size=n),
    "comment-closers": lambda n: _fill("-/", size=n),
    "imports": lambda n: _fill(HEADER, head="", size=n),
    "digit-run": lambda n: _fill("IOx", head=HEADER + "0", size=n),
    "percent-after-names": lambda n: _fill("a%", size=n),
    "percent-after-long-names": lambda n: _fill("a" * 100 + "%", size=n),
    "percent-after-numbers": lambda n: _fill("1%", size=n),
    "lc-like": lambda n: _fill("lcx ", size=n),
    "hash-signs": lambda n: _fill("#", size=n),
    "dots": lambda n: _fill(".a", size=n),
    "unicode": lambda n: _fill("α₁ ", size=n),
    "crlf": lambda n: _fill("x\r\n", size=n),
    "declaring-keywords": lambda n: _fill("def x ", size=n),
    "keyword-then-comment": lambda n: _fill("def /- ", size=n),
    "keyword-then-closed-comment": lambda n: _fill("where /- c -/ x ", size=n),
    "keyword-then-line-comment": lambda n: _fill("def -- x\n", size=n),
    "keyword-then-attributes": lambda n: _fill("where @[simp] private x\n", size=n),
    "keyword-then-nested-attributes": lambda n: _fill("where @[" + "[" * 50 + "]" * 51 + " ", size=n),
    "bars": lambda n: _fill("| x => ", size=n),
    "bar-literals": lambda n: _fill("| true => ", size=n),
    "bar-spaces": lambda n: _fill("|" + " " * 200, size=n),
    "literals": lambda n: _fill("true ", size=n),
    "literals-before-comments": lambda n: _fill("true /- -/ ", size=n),
    "literal-definitions": lambda n: _fill("true := ", size=n),
    # the lexical layer and the token readings of issue 25
    "strings": lambda n: _fill('"a" ', size=n),
    "unterminated-string": lambda n: _fill("a", head=HEADER + '"', size=n),
    "chars": lambda n: _fill("'a' ", size=n),
    "quotes": lambda n: _fill("''", size=n),
    "raw-strings": lambda n: _fill('r#"a"# ', size=n),
    "interpolations": lambda n: _fill('s!"{x}" ', size=n),
    "nested-interpolations": lambda n: _fill('s!"{', size=n),
    "braces": lambda n: _fill("{", size=n),
    "doc-comments": lambda n: _fill("/-- a -/ ", size=n),
    "doc-then-line-comments": lambda n: _fill("-- x\n", head=HEADER + "/--", size=n),
    "name-runs": lambda n: _fill("true a ", size=n),
    "name-runs-then-colon": lambda n: _fill("a true ", tail=":", size=n),
    "bracketed-run": lambda n: _fill("a ", head=HEADER + "(true ", tail=": Bool)", size=n),
    "or-pattern-chain": lambda n: _fill("| true ", size=n),
    "constructor-context": lambda n: _fill("inductive T | a ", size=n),
    "structures": lambda n: _fill("structure S where\n  a : Nat\n", size=n),
    "structure-field-lines": lambda n: _fill(
        "  a : Bool := true\n", head=HEADER + "structure S where\n", size=n
    ),
    "instances": lambda n: _fill("instance : ∀ a, Decidable (P a) := x\n", size=n),
    "instance-binders": lambda n: _fill("∀ a, ", head=HEADER + "instance : ", size=n),
    "instance-parens": lambda n: _fill("(", head=HEADER + "instance : ", size=n),
    "deriving-instances": lambda n: _fill("deriving instance DecidableEq for T\n", size=n),
    "class-words": lambda n: _fill("Decidable ", size=n),
    "ctor-assigns": lambda n: _fill(":= true ", size=n),
    # ascriptions beside a relation (issue 38), and groups whose type is never closed
    "ascriptions": lambda n: _fill("b = (true : Bool) ", size=n),
    "ascription-openers": lambda n: _fill("= (true : " + "a " * 30, size=n),
    "ascription-runs": lambda n: _fill("true ", head=HEADER + "= (", tail=": Bool) = b", size=n),
    "instance-words-in-a-header": lambda n: _fill(
        "instance ", head=HEADER + "instance : Decidable (", size=n
    ),
}


@pytest.mark.parametrize("shape", list(ADVERSARIAL.values()), ids=list(ADVERSARIAL))
def test_adversarial_mebibyte_is_read_by_every_rule(shape: Callable[[int], str]) -> None:
    text = shape(MAX_SUBMISSION_BYTES)
    assert len(text.encode()) <= MAX_SUBMISSION_BYTES
    assert "larger than" not in check_guard(text).reason  # the rules ran, not the size cut-off


@pytest.mark.parametrize("shape", list(ADVERSARIAL.values()), ids=list(ADVERSARIAL))
def test_adversarial_time_is_linear(shape: Callable[[int], str]) -> None:
    # Was an absolute bound (1 MiB in under 2 s), which failed on a loaded machine (issue 18):
    # linear work is about 8x for 8x the input, quadratic work 64x.
    size = MAX_SUBMISSION_BYTES
    assert_time_is_linear(check_guard, shape(size // 8), shape(size), scale=8, repeats=2)


# A file that passes every rule, so that every rule reads all of it.
HONEST_UNIT = (
    "@[simp] theorem t (h : a = b) : f (n := 1) = g := by\n"
    "  simp (config := { decide := true }) [Nat.add_comm] -- note\n"
    "  exact .inl h /- c -/\n"
    "set_option maxRecDepth 100 in\n"
)


@pytest.mark.parametrize("unit", [HONEST_UNIT, "@[", "(x := ", "a%", "/- ", "(" + " " * 50])
def test_guard_time_is_linear(unit: str) -> None:
    small = HEADER + unit * (64 * 1024 // len(unit))
    large = HEADER + unit * (512 * 1024 // len(unit))
    assert check_guard(large).passed == check_guard(small).passed
    # 8x the input: linear is about 8x, quadratic 64x (timed side by side, so load does not count).
    assert_time_is_linear(check_guard, small, large, scale=8)


# --- CRLF: the guard judges what the pipeline judges ---------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        reference_submission(7),
        with_body("-- a comment\n#check 1"),
        with_body("-- a\rimport Lean"),
        with_body("example : True := by decide (kernel := id true)"),
        f"{HEADER}{PROOF}".rstrip("\n"),
    ],
    ids=["reference", "comment", "lone-cr-import", "config-value", "no-final-newline"],
)
@pytest.mark.parametrize("eol", ["\r\n", "\r"])
def test_cli_and_pipeline_agree_on_crlf_files(text: str, eol: str) -> None:
    raw = text.replace("\n", eol)
    cli = check_guard(raw)  # `lean-mod-add-proof guard FILE` reads the raw file
    extracted = extract_submission(f"```lean{eol}{raw}{eol}```")
    assert extracted.code is not None
    pipeline = check_guard(extracted.code)
    assert cli == pipeline
    assert cli == check_guard(text)
