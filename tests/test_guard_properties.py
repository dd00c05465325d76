"""Properties of the extractor and the text guard, checked on generated inputs (hypothesis).

Each property also bounds the time of a single call: every path of both functions is linear, so
a few kilobytes must take milliseconds; the bounds are loose so that a slow machine does not flake.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from timing import MARGIN_S

from lean_mod_add_proof.constants import reference_submission
from lean_mod_add_proof.grading.extract import Extraction, extract_submission, normalise_newlines
from lean_mod_add_proof.grading.guard import (
    BANNED_WORD_PARTS,
    BANNED_WORDS,
    INTERNAL_ERROR_REASON,
    LITERAL_NAMES,
    SEED_BANNED_WORDS,
    GuardVerdict,
    check_guard,
)

T = TypeVar("T")

#: Seconds one call may take on the small inputs generated here (milliseconds on a quiet machine;
#: a catastrophic backtrack takes far longer; MARGIN_S: a loaded machine can stall one call).
CALL_BOUND_S = MARGIN_S

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def timed(fn: Callable[[str], T], text: str) -> T:
    started = time.perf_counter()
    result = fn(text)
    assert time.perf_counter() - started < CALL_BOUND_S
    return result


def guard(text: str) -> GuardVerdict:
    verdict = timed(check_guard, text)
    assert isinstance(verdict, GuardVerdict)
    assert verdict.reason and not verdict.reason.startswith(INTERNAL_ERROR_REASON), verdict.reason
    assert verdict.passed == (verdict.reason == "ok")
    return verdict


def extract(reply: str) -> Extraction:
    result = timed(extract_submission, reply)
    assert isinstance(result, Extraction)
    if result.code is not None:
        assert "\r" not in result.code and "\x00" not in result.code and result.code.endswith("\n")
    return result


# --- strategies ----------------------------------------------------------------------------------

#: Any code point, lone surrogates included.
any_char = st.characters(exclude_categories=())
any_text = st.text(any_char, max_size=400)
#: Text as it may arrive from bytes of unknown encoding.
decoded_bytes = st.builds(
    lambda data, errors: data.decode("utf-8", errors),
    st.binary(max_size=400),
    st.sampled_from(["replace", "surrogateescape", "ignore", "backslashreplace"]),
)
#: Pieces Lean, Markdown and the guard care about, mixed with arbitrary text.
PIECES = [
    "```", "```lean", "```lean4", "~~~", "~~~lean", "\n", "\r\n", "\r", " ", "\t", "`", "import ",
    "import LeanCheckedNetwork.Weights\n", "--", "/-", "-/", "/--", "@[", "]", "attribute", "(", ")",
    ":=", "{", "}", "set_option ", "#check", "#eval", "%", "type_of%", "lcCast", "sorry", ".inl",
    "«", "»", "\x00", "\udc80", "α", "₁", "→", "decide +kernel", "(kernel := true)", "module",
    "def true", "| true", "| true =>", "true :", "where ", "instance", "@[instance]", "inductive T",
]  # fmt: skip
pieces_text = st.lists(st.sampled_from(PIECES) | st.text(max_size=8), max_size=60).map("".join)
fenced = st.builds(
    lambda info, body, close: f"```{info}\n{body}\n{close}",
    st.sampled_from(["lean", "lean4", "Lean", "", "python", "lean title=x"]),
    pieces_text,
    st.sampled_from(["```", "````", "~~~", "", "```lean"]),
)
any_input = any_text | decoded_bytes | pieces_text | fenced


# --- nothing crashes -----------------------------------------------------------------------------


@PROPERTY
@given(any_input)
def test_extractor_never_crashes(reply: str) -> None:
    extract(reply)


@PROPERTY
@given(any_input)
def test_guard_never_crashes(text: str) -> None:
    guard(text)
    guard("import LeanCheckedNetwork.Weights\n" + text)


@PROPERTY
@given(any_input)
def test_guard_never_crashes_on_extracted_code(reply: str) -> None:
    result = extract(reply)
    if result.code is not None:
        guard(result.code)


# --- line endings --------------------------------------------------------------------------------


@PROPERTY
@given(any_input | st.sampled_from([reference_submission(7), reference_submission(11)]))
def test_guard_is_idempotent_under_crlf(raw: str) -> None:
    text = normalise_newlines(raw)
    verdict = guard(text)
    assert guard(raw) == verdict
    assert guard(text.replace("\n", "\r\n")) == verdict
    assert guard(text.replace("\n", "\r")) == verdict


@PROPERTY
@given(st.text(st.characters(exclude_characters="`~"), max_size=300) | pieces_text)
def test_guard_judges_a_file_as_the_pipeline_does(text: str) -> None:
    # `lean-mod-add-proof guard FILE` reads the file itself; the pipeline reads the block.
    assume("`" not in text and "~" not in text)
    text = normalise_newlines(text)
    for eol in ("\n", "\r\n"):
        result = extract(f"```lean{eol}{text.replace(chr(10), eol)}{eol}```")
        if result.code is not None:
            assert guard(result.code) == guard(text)


# --- banned words in comments, honest noise ------------------------------------------------------

HONEST = [reference_submission(5), reference_submission(7)]


def _insert(text: str, line: int, addition: str) -> str:
    lines = text.split("\n")
    at = line % (len(lines) + 1)
    return "\n".join([*lines[:at], addition, *lines[at:]])


@PROPERTY
@given(
    st.sampled_from(HONEST),
    st.sampled_from(SEED_BANNED_WORDS),
    st.integers(min_value=0, max_value=200),
    st.sampled_from(["-- {}", "-- note: {} here", "/- {} -/", "/-- {} -/", "/-! {}\n-/", "  -- ({})"]),
)
def test_a_banned_word_in_a_comment_is_always_rejected(base: str, word: str, line: int, shape: str) -> None:
    verdict = guard(_insert(base, line, shape.format(word)))
    assert not verdict.passed


#: Comment text that holds no banned word, part, `import`, `%`, bracket or comment marker.
SAFE_ALPHABET = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKMNOPQRSTUVWXYZ0123456789 ,.;:!?=+<>αβ→"
_FORBIDDEN_SUBSTRINGS = tuple(
    w.lower().lstrip("#")
    for w in (*BANNED_WORDS, *BANNED_WORD_PARTS, "import", "module", "lc", "meta", *LITERAL_NAMES)
)
safe_comment = st.text(st.sampled_from(SAFE_ALPHABET), max_size=60)
noise = st.one_of(
    safe_comment.map(lambda t: f"-- {t}"),
    safe_comment.map(lambda t: f"/- {t} -/"),
    safe_comment.map(lambda t: f"/-- {t} -/\nexample : True := trivial"),
    st.text(st.sampled_from(" \t"), max_size=6),
    st.just(""),
)


@PROPERTY
@given(
    st.sampled_from(HONEST),
    st.lists(st.tuples(st.integers(min_value=0, max_value=200), noise), max_size=8),
    st.text(st.sampled_from(" \t"), max_size=4),
)
def test_honest_proof_with_noise_passes(base: str, additions: list[tuple[int, str]], trailing: str) -> None:
    text = base
    for line, addition in additions:
        assume(not any(bad in addition.lower() for bad in _FORBIDDEN_SUBSTRINGS))
        if addition.startswith("/--"):
            line = len(text.split("\n"))  # a docstring documents a declaration: put it at the end
        elif line % (len(text.split("\n")) + 1) == 0 and not addition.startswith(("--", "/-")):
            line = 1  # only comments may come before the imports
        text = _insert(text, line, addition)
    text = text.replace("\n", trailing + "\n")
    verdict = guard(text)
    assert verdict.passed, (verdict.reason, text)


# --- literal names (rule 10) ---------------------------------------------------------------------

#: Declarations that would make `(kernel := true)` run the file's own code (or that name a literal
#: where the guard looks), each spelled so that it is the only reason to reject the file.
SHADOWS = [
    "def true : Bool := false", "def LeanCheckedNetwork.Net.false : Bool := true",
    "private def true : Bool := false", "protected def LeanCheckedNetwork.true : Bool := false",
    "abbrev true : Bool := false", "theorem false : True := trivial", "def _root_.true := false",
    "structure S where\n  true : Bool", "inductive T | a | false", "class C where\n  n : Nat\n  true : Bool",
    "def helper : Nat := 0\nwhere true : Bool := false", "def /- c -/ true := false",
    "def -- c\n  false := true", "instance : OfNat Nat n := ⟨0⟩", "attribute [instance] Nat.add",
]  # fmt: skip
#: Honest uses of the literals, and the spellings of the configuration a proof may use.
LITERAL_USES = [
    "theorem use_1 : decide (1 = 1) = true := rfl", "def use_2 : Bool → Nat\n  | true => 1\n  | false => 0",
    "theorem use_3 (b : Bool) (h : b = true) : (b || false) = true := by simp [h]",
    "theorem trueRow_4 : [true, false].length = 2 := rfl", "def is_true_5 (b : Bool) : Bool := b && true",
]  # fmt: skip
CONFIGS = ["+kernel", "(kernel := true)", "(config := { kernel := true })", "(config := {kernel := true})"]


@PROPERTY
@given(st.sampled_from(HONEST), st.sampled_from(SHADOWS), st.integers(min_value=1, max_value=200))
def test_a_literal_declaration_is_always_rejected(base: str, shadow: str, line: int) -> None:
    text = _insert(base, 1 + line % len(base.split("\n")), shadow)  # after the import line
    verdict = guard(text)
    assert not verdict.passed
    assert verdict.word in (*LITERAL_NAMES, "instance"), verdict.reason


@PROPERTY
@given(st.sampled_from(HONEST), st.lists(st.sampled_from(LITERAL_USES), max_size=5), st.sampled_from(CONFIGS))
def test_honest_literal_uses_pass(base: str, uses: list[str], config: str) -> None:
    text = base.replace("decide +kernel", f"decide {config}") + "\n" + "\n".join(dict.fromkeys(uses)) + "\n"
    verdict = guard(text)
    assert verdict.passed, (verdict.reason, text)
