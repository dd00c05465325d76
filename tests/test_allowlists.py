"""The guard's allow- and ban-lists, pinned and tested one entry at a time.

Each list is pinned to its exact contents, so widening or narrowing one is a visible decision
here rather than a silent change, and each entry gets one file it admits and one near miss it
rejects. Without these, the banned-word rule hid a widened allow-list (issue 21): a second layer
covered for a missing test.
"""

from __future__ import annotations

import pytest

from lean_mod_add_proof.constants import REQUIRED_IMPORT, theorem_signature
from lean_mod_add_proof.grading.guard import (
    ALLOWED_ATTRIBUTE_WORDS,
    ALLOWED_HASH_COMMANDS,
    ALLOWED_OPTION_PREFIXES,
    ALLOWED_OPTIONS,
    BANNED_WORD_PARTS,
    BANNED_WORDS,
    DECLARING_KEYWORDS,
    GRIND_ATTRIBUTE_WORDS,
    GUARD_RULES,
    INSTANCE_CLASSES,
    INTERNAL_ERROR_REASON,
    LITERAL_NAMES,
    TACTIC_VALUED_NAMES,
    check_guard,
)

HEADER = f"import {REQUIRED_IMPORT}\n"
PROOF = f"\n{theorem_signature(7)} := by\n  decide +kernel\n"


def with_body(body: str) -> str:
    return f"{HEADER}\n{body}\n{PROOF}"


def passes(body: str) -> bool:
    verdict = check_guard(with_body(body))
    assert verdict.passed or verdict.reason  # a rejection always says why
    return verdict.passed


def rejected_word(body: str) -> str | None:
    verdict = check_guard(with_body(body))
    return None if verdict.passed else verdict.word


# --- exact contents ------------------------------------------------------------------------------


def test_allowed_option_prefixes_are_exactly() -> None:
    assert ALLOWED_OPTION_PREFIXES == ("pp.", "linter.")


def test_allowed_attribute_words_are_exactly() -> None:
    assert ALLOWED_ATTRIBUTE_WORDS == (
        "simp", "reducible", "irreducible", "semireducible", "local", "scoped", "inline",
        "noinline", "specialize", "match_pattern", "ext", "congr", "refl",
        "symm", "induction_eliminator", "cases_eliminator", "high", "mid", "low",
        "default", "priority", "elab_as_elim",
    )  # fmt: skip
    # no instances (rule 10): `instance` is a banned word, `default_instance` no attribute word
    assert "instance" not in ALLOWED_ATTRIBUTE_WORDS and "default_instance" not in ALLOWED_ATTRIBUTE_WORDS


def test_grind_attribute_words_are_exactly() -> None:
    assert GRIND_ATTRIBUTE_WORDS == (
        "grind", "gen", "usr", "cases", "eager", "intro", "ext", "inj", "funCC", "norm", "unfold",
        "symbol", "high", "mid", "low", "default", "local", "scoped",
    )  # fmt: skip


def test_allowed_options_are_exactly() -> None:
    assert ALLOWED_OPTIONS == (
        "maxHeartbeats", "maxRecDepth", "synthInstance.maxHeartbeats", "synthInstance.maxSize",
        "autoImplicit", "relaxedAutoImplicit", "exponentiation.threshold", "diagnostics",
        "diagnostics.threshold", "profiler", "profiler.threshold", "tactic.hygienic",
    )  # fmt: skip


def test_allowed_hash_commands_and_tactic_valued_names_are_exactly() -> None:
    assert ALLOWED_HASH_COMMANDS == ("#check", "#print", "#reduce", "#synth")
    assert TACTIC_VALUED_NAMES == ("disch", "discharger")


def test_literal_names_and_declaring_keywords_are_exactly() -> None:
    assert LITERAL_NAMES == ("true", "false")
    assert DECLARING_KEYWORDS == (
        "def", "theorem", "lemma", "abbrev", "structure", "class", "inductive", "where", "rec",
    )  # fmt: skip
    # the declaring keywords that are banned words are rule 4's, not listed twice
    assert not set(DECLARING_KEYWORDS) & set(BANNED_WORDS)
    assert {"opaque", "axiom"} <= set(BANNED_WORDS) and "instance" not in BANNED_WORDS
    # rule 11: instances of these classes only
    assert INSTANCE_CLASSES == (
        "Decidable", "DecidableEq", "DecidablePred", "DecidableRel", "Inhabited", "Nonempty",
    )  # fmt: skip


def test_banned_word_parts_are_exactly() -> None:
    assert BANNED_WORD_PARTS == (
        "unsafe",
        "builtin",
        "elab",
        "simproc",
        "dsimproc",
        "dbg",
        "register",
        "declare",
    )


def test_banned_words_are_exactly() -> None:
    assert BANNED_WORDS == (
        "sorry", "admit", "native_decide", "native", "ofReduceBool", "axiom", "opaque",
        "implemented_by", "extern", "unsafe", "partial", "debug", "macro", "macro_rules", "elab",
        "elab_rules", "syntax", "notation", "infix", "infixl", "infixr", "prefix", "postfix",
        "initialize", "#eval", "run_cmd", "run_tac", "run_elab", "run_meta", "IO", "init", "evalExpr",
        "skipKernelTC", "prelude", "sorryAx", "builtin_initialize",
        "#exit", "export", "builtin", "builtin_init", "command_elab", "term_elab", "delab",
        "app_unexpander", "csimp", "simproc", "dsimproc", "binder_predicate", "declare_syntax_cat",
        "register_option", "register_simp_attr", "register_label_attr", "meta", "Meta", "Elab",
        "Environment", "addDecl", "evalDecl", "evalConst", "compileDecl", "ofReduceNat",
        "reduceBool", "reduceNat", "trustCompiler", "bv_decide", "unsafeCast", "unsafeBaseIO",
        "unsafeIO", "unsafeEIO", "dbg", "dbg_trace", "dbgTrace", "bootstrap",
        "declare_simp_like_tactic", "unif_hint", "lcProof", "include_str", "timeit", "allocprof",
        "println", "by_elab", "idbg", "grind_propagator",
        "renaming",
    )  # fmt: skip


# --- ALLOWED_ATTRIBUTE_WORDS ---------------------------------------------------------------------


@pytest.mark.parametrize("word", ALLOWED_ATTRIBUTE_WORDS)
def test_allowed_attribute_word_passes(word: str) -> None:
    assert passes(f"@[{word}] theorem z : True := trivial")
    assert passes(f"attribute [{word}] Nat.add_comm")
    assert passes(f"@[simp, {word} 10] theorem z : True := trivial")


@pytest.mark.parametrize("word", ALLOWED_ATTRIBUTE_WORDS)
def test_a_near_miss_of_an_allowed_attribute_word_is_rejected(word: str) -> None:
    # `elab_as_elimx` holds the banned part `elab` (only the whole name `elab_as_elim` is exempt)
    near_miss = "elab" if word == "elab_as_elim" else f"{word}x"
    assert rejected_word(f"@[{word}x] theorem z : True := trivial") == near_miss
    assert rejected_word(f"attribute [{word}, tactic] Nat.add_comm") == "tactic"


@pytest.mark.parametrize("word", [w for w in ALLOWED_ATTRIBUTE_WORDS if w not in GRIND_ATTRIBUTE_WORDS])
def test_an_attribute_word_is_no_grind_modifier(word: str) -> None:
    assert rejected_word(f"@[grind {word}] theorem z : True := trivial") == word


def test_numbers_are_allowed_in_attributes() -> None:
    assert passes("@[simp 1100] theorem z : True := trivial")
    assert passes("@[grind 5] theorem z : True := trivial")
    assert rejected_word("@[simp 11x] theorem z : True := trivial") == "11x"


# --- GRIND_ATTRIBUTE_WORDS -----------------------------------------------------------------------


@pytest.mark.parametrize("word", GRIND_ATTRIBUTE_WORDS)
def test_grind_word_passes_after_grind(word: str) -> None:
    assert passes(f"@[grind {word}] theorem z : True := trivial")
    assert passes(f"attribute [local grind {word}] Or")
    assert passes(f"@[simp, grind! {word}] theorem z : True := trivial")


@pytest.mark.parametrize("word", GRIND_ATTRIBUTE_WORDS)
def test_a_near_miss_of_a_grind_word_is_rejected(word: str) -> None:
    assert rejected_word(f"@[grind {word}x] theorem z : True := trivial") == f"{word}x"


@pytest.mark.parametrize(
    "word", [w for w in GRIND_ATTRIBUTE_WORDS if w not in ALLOWED_ATTRIBUTE_WORDS and w != "grind"]
)
def test_a_grind_word_outside_grind_is_rejected(word: str) -> None:
    assert rejected_word(f"@[simp {word}] theorem z : True := trivial") == word
    # each `,`-separated instance is judged by its own name
    assert rejected_word(f"@[grind, {word}] theorem z : True := trivial") == word


@pytest.mark.parametrize("modifier", ["=", "=_", "_=_", "←", "→", "⇐", "⇒", "<-", "->", ".", "·"])
def test_grind_symbol_modifiers(modifier: str) -> None:
    assert passes(f"@[grind {modifier}] theorem z : True := trivial")


def test_underscore_words_only_after_grind() -> None:
    assert passes("@[grind _=_] theorem z : True := trivial")
    assert rejected_word("@[simp _] theorem z : True := trivial") == "_"
    assert rejected_word("@[grind _x] theorem z : True := trivial") == "_x"


def test_local_and_scoped_do_not_name_the_instance() -> None:
    assert passes("attribute [local grind cases] Or")
    assert passes("attribute [scoped grind gen] Or")
    assert rejected_word("attribute [local simp cases] Or") == "cases"
    assert rejected_word("attribute [local grind simp] Or") == "simp"


# --- ALLOWED_OPTIONS and ALLOWED_OPTION_PREFIXES -------------------------------------------------


@pytest.mark.parametrize("option", ALLOWED_OPTIONS)
def test_allowed_option_passes(option: str) -> None:
    assert passes(f"set_option {option} 100 in\n#check 1")


@pytest.mark.parametrize("option", ALLOWED_OPTIONS)
def test_a_near_miss_of_an_allowed_option_is_rejected(option: str) -> None:
    assert rejected_word(f"set_option {option}x 100 in\n#check 1") == f"{option}x"
    assert rejected_word(f"set_option {option}.x 100 in\n#check 1") == f"{option}.x"


@pytest.mark.parametrize("prefix", ALLOWED_OPTION_PREFIXES)
def test_options_under_an_allowed_prefix_pass(prefix: str) -> None:
    assert passes(f"set_option {prefix}all true in\n#check 1")
    assert passes(f"set_option {prefix}a.b false in\n#check 1")


@pytest.mark.parametrize("prefix", ALLOWED_OPTION_PREFIXES)
def test_a_near_miss_of_an_allowed_prefix_is_rejected(prefix: str) -> None:
    bare = prefix.rstrip(".")
    assert rejected_word(f"set_option {bare} true in\n#check 1") == bare
    assert rejected_word(f"set_option {bare}x.all true in\n#check 1") == f"{bare}x.all"
    assert rejected_word(f"set_option x{prefix}all true in\n#check 1") == f"x{prefix}all"


def test_other_option_families_are_rejected() -> None:
    assert rejected_word('set_option trace.profiler.output "/tmp/x" in\n#check 1') == "trace.profiler.output"
    assert rejected_word("set_option compiler.extract_closed false in\n#check 1") == "compiler.extract_closed"


# --- ALLOWED_HASH_COMMANDS and TACTIC_VALUED_NAMES -----------------------------------------------


@pytest.mark.parametrize("command", ALLOWED_HASH_COMMANDS)
def test_allowed_hash_command(command: str) -> None:
    assert passes(f"{command} Nat.add_comm")
    assert rejected_word(f"{command}x Nat.add_comm") == f"{command}x"


@pytest.mark.parametrize("name", TACTIC_VALUED_NAMES)
def test_tactic_valued_name(name: str) -> None:
    assert passes(f"example (a : Nat) (h : a < 3) : a < 7 := by simp ({name} := omega) [h]")
    assert (
        rejected_word(f"example (a : Nat) (h : a < 3) : a < 7 := by simp ({name}x := omega) [h]")
        == f"{name}x"
    )
    # the tactic's own named values are still checked
    assert rejected_word(f"example : 1 = 1 := by simp ({name} := decide (kernel := f))") == "kernel"


# --- LITERAL_NAMES and DECLARING_KEYWORDS --------------------------------------------------------


@pytest.mark.parametrize("keyword", DECLARING_KEYWORDS)
@pytest.mark.parametrize("literal", LITERAL_NAMES)
def test_a_declaring_keyword_may_not_name_a_literal(keyword: str, literal: str) -> None:
    assert rejected_word(f"{keyword} {literal} := 1") == literal
    assert rejected_word(f"{keyword} Foo.{literal} := 1") == literal
    # another name, a name that only holds the literal, the keyword inside a longer name or after
    # `.` (a name, not the keyword)
    assert passes(f"{keyword} {literal}Row := 1")
    assert passes(f"{keyword} is_{literal}_x := 1")
    assert passes(f"def my_{keyword} := 1\ndef y := my_{keyword} {literal}")
    assert passes(f"def y := Foo.{keyword} {literal}")


@pytest.mark.parametrize("literal", LITERAL_NAMES)
def test_a_literal_is_no_constructor_or_binder(literal: str) -> None:
    assert rejected_word(f"inductive T | {literal}") == literal
    assert rejected_word(f"def f ({literal} : Bool) := 1") == literal
    assert passes(f"def f : Bool → Nat\n  | {literal} => 1\n  | _ => 0")
    assert passes(f"def f (b : Bool) : Nat := match b, b with\n  | {literal}, _ => 1\n  | _, _ => 0")
    assert passes(f"theorem t : decide (1 = 1) = {literal} || true := rfl")
    assert passes(f"theorem t : [{literal}] = {literal} :: [] := rfl")


@pytest.mark.parametrize("modifier", ["private", "protected", "noncomputable", "nonrec"])
def test_modifiers_before_a_declared_name_are_skipped(modifier: str) -> None:
    assert rejected_word(f"theorem t : True := trivial\nwhere {modifier} true := 1") == "true"
    assert rejected_word(f"inductive T | {modifier} false") == "false"
    assert rejected_word(f"inductive T | {modifier}/- c -/false") == "false"
    # a word that is no modifier ends the skip: the name is that word (and a name after it is a
    # binder of that declaration, read as such)
    assert passes(f"theorem t : True := trivial\nwhere {modifier}x := true")
    verdict = check_guard(with_body(f"theorem t : True := trivial\nwhere {modifier}x true := 1"))
    assert (verdict.word, verdict.reason.split(" on line")[0]) == ("true", "'true'")
    assert "(a binder)" in verdict.reason


@pytest.mark.parametrize("bar", ["||", "|||", "<|", "|>", "|>."])
def test_only_a_lone_bar_starts_a_constructor(bar: str) -> None:
    assert passes(f"def y := x {bar} true")


# --- BANNED_WORDS and BANNED_WORD_PARTS ----------------------------------------------------------


@pytest.mark.parametrize("word", [w for w in BANNED_WORDS if not w.startswith("#")])
def test_banned_word_alone_and_in_a_longer_name(word: str) -> None:
    assert rejected_word(f"def y := {word}") == word
    # a longer name that merely contains the word is another identifier (unless it holds a
    # banned part, or is an `lc…` name, which other rules reject)
    if not any(part in word.lower() for part in BANNED_WORD_PARTS) and not word.startswith("lc"):
        assert passes(f"def {word}_ok_x := 1")
        assert passes(f"def x_{word}_ok := 1")


@pytest.mark.parametrize("part", BANNED_WORD_PARTS)
def test_banned_part_inside_a_longer_name(part: str) -> None:
    assert rejected_word(f"def my_{part}_x := 1") == part
    assert passes(f"def my{part}x := 1")  # not at a `_` or camelCase boundary


# --- what the model is told ----------------------------------------------------------------------

#: One phrase per rule of the guard that the prompt must state (GUARD_RULES is shown to the model).
RULE_PHRASES = (
    "at most 1 MiB",
    "Forbidden words count as whole names",
    "The only `#` commands allowed are `#check`, `#print`, `#reduce`",
    "Attributes (`@[...]`, `attribute [...]`) may only use `simp`",
    "`set_option` may only set `maxHeartbeats`",
    "any other `(name := value)` is rejected",
    "No name may be directly followed by `%`",
    "Nothing may be named `true` or `false`",
    "`instance` and `deriving instance` may only declare instances of",
    "Comments, strings and character literals must be closed",
    "No `«»` identifier escapes",
)


def test_every_guard_rule_has_an_example_that_passes_and_one_that_fails() -> None:
    # issue 25: the prompt states every rule with one short example each way
    for rule in GUARD_RULES:
        assert "Passes: " in rule and "Fails: " in rule, rule


def test_every_guard_rule_is_shown_to_the_model_once() -> None:
    assert len(GUARD_RULES) == len(RULE_PHRASES)
    for phrase in RULE_PHRASES:
        assert sum(phrase in rule for rule in GUARD_RULES) == 1, phrase


def test_the_internal_error_reason() -> None:
    assert INTERNAL_ERROR_REASON == "internal guard error"
