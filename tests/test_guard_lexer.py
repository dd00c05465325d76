"""The guard's lexical layer (`grading/lexer.py`): where Lean's lexer puts comments and literals
(lean4 `src/Lean/Parser/Basic.lean`, `src/Lean/Parser/StrInterpolation.lean`), and the files it
refuses because they could be read two ways."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lean_mod_add_proof.grading.lexer import lex


def kinds(text: str) -> list[tuple[str, str]]:
    lexed = lex(text)
    assert lexed.problem is None, lexed.problem
    return [(x.kind, text[x.start : x.end]) for x in lexed.lexemes]


def code(text: str) -> str:
    lexed = lex(text)
    assert lexed.problem is None, lexed.problem
    return lexed.code


CASES: list[tuple[str, str, list[tuple[str, str]]]] = [
    # (id, text, the lexemes as (kind, text))
    ("line-comment", "x -- a\ny", [("line_comment", "-- a")]),
    ("nested", "x /- a /- b -/ c -/ y", [("block_comment", "/- a /- b -/ c -/")]),
    # `whitespace` skips the character after `/-` unread: `/-/-/` is one comment
    ("skipped-third", "/-/-/ y", [("block_comment", "/-/-/")]),
    ("closer-first", "/- --/ y", [("block_comment", "/- --/")]),
    ("doc", "/-- d /- n -/ e -/ def x", [("doc_comment", "/-- d /- n -/ e -/")]),
    ("module-doc", "/-! m -/ x", [("module_doc", "/-! m -/")]),
    # the `/--` token's trailing whitespace eats a line comment before the body is read
    (
        "doc-then-line-comment",
        "/-- -- -/\n body -/ x",
        [("line_comment", "-- -/"), ("doc_comment", "/-- -- -/\n body -/")],
    ),
    ("string", 'x "a -- b /- c" y', [("string", '"a -- b /- c"')]),
    ("string-escape", 'x "a\\"b" y', [("string", '"a\\"b"')]),
    ("string-gap", 'x "a\\\n   b" y', [("string", '"a\\\n   b"')]),
    ("char-quote", "x '\"' y", [("char", "'\"'")]),
    ("char-escape", "x '\\'' y", [("char", "'\\''")]),
    ("char-hex", "x '\\x41' '\\u03b1' y", [("char", "'\\x41'"), ("char", "'\\u03b1'")]),
    ("prime-name", 'h\' "s"', [("string", '"s"')]),
    ("prime-name-then-char", "h' 'c'", [("char", "'c'")]),
    ("raw", 'r"a\\"', [("string", 'r"a\\"')]),
    ("raw-hashes", 'r#"a "b" c"# x', [("string", 'r#"a "b" c"#')]),
    ("name-ending-r", 'xr"s"', [("string", '"s"')]),
    ("number-then-raw", '0x1r"s"', [("string", 'r"s"')]),
    ("interpolated", 's!"a{x}b" y', [("string", 's!"a{'[2:]), ("string", '}b"')]),
    ("interpolated-nested", 's!"{f "}" {1}}" y', [("string", '"{'), ("string", '"}"'), ("string", '}"')]),
    (
        "interpolated-after-comment",
        's! /- c -/ "{x}"',
        [("block_comment", "/- c -/"), ("string", '"{'), ("string", '}"')],
    ),
    ("plain-brace", 'f "{" x', [("string", '"{"')]),
    ("format-interpolated", 'f! "a{b}"', [("string", '"a{'), ("string", '}"')]),
    (
        "interpolated-after-line-comment",
        's!  -- c\n  "{y}"',
        [("line_comment", "-- c"), ("string", '"{'), ("string", '}"')],
    ),
    ("bang-name-without-brace", 'panic! "no brace"', [("string", '"no brace"')]),
    ("escaped-name", '«a " b» x', []),
    ("dash-op", "a - b / c --x", [("line_comment", "--x")]),
    ("name-bang-comment", "s!-- c\n", [("line_comment", "-- c")]),
    # `'` followed by `'` starts no character literal (`tokenFnAux`)
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_lexemes(text: str, expected: list[tuple[str, str]]) -> None:
    assert kinds(text) == expected


def test_a_comment_right_after_a_doc_opener_is_blanked_with_the_doc() -> None:
    # `/--` is a token whose trailing whitespace holds `-- c`; the body goes on to `-/`
    assert "body" not in code("/---- c\n body -/ x") and code("/---- c\n body -/ x").endswith(" x")


def test_code_view_keeps_positions_and_blanks_the_rest() -> None:
    text = "def x := 1 -- instance\n/- true :\n -/ s!\"{y} true\" 'c'"
    view = code(text)
    assert len(view) == len(text) and view.count("\n") == text.count("\n")
    assert (
        "instance" not in view and "true" not in view and "c" not in view.split("\n")[-1].replace("{y}", "")
    )
    assert view.split("\n")[-1] == "    s!\"{y}     \" ' '"


PROBLEMS: list[tuple[str, str, str]] = [
    ("operator-then-comment", "a <--b", "right after '<'"),
    ("backslash-then-comment", "a \\/-b -/", "right after '\\'"),
    ("colon-then-comment", "x :=-- c", "right after '='"),
    ("raw-after-dot", 'x.r"s"', "raw string right after '.'"),
    ("raw-after-backquote", '`r"s"', "raw string right after '`'"),
    ("unterminated-comment", "x /- a", "unterminated comment"),
    ("unterminated-nested", "x /- /- -/", "unterminated comment"),
    ("unterminated-doc", "/-- a", "unterminated doc comment"),
    ("unterminated-string", 'x "a', "unterminated string"),
    ("unterminated-interpolation", 's!"{x', "unterminated string interpolation"),
    ("unterminated-raw", 'r#"a"', "unterminated raw string"),
    ("bad-char", "x 'ab'", "malformed character literal"),
    # `''` is no character literal and no token of Lean's table: Lean reports an error there
    ("two-apostrophes", "x '' 'c'", "two apostrophes that start no token"),
    ("two-apostrophes-then-string", "x ''\"s\"", "two apostrophes that start no token"),
    ("unterminated-escape", "x «a", "unterminated '«'"),
    # Lean reads `panic! "{"` as a plain string; a lexer that guessed "interpolated" would hide the
    # code up to the next quote (and the other way round for an unknown interpolating syntax)
    (
        "brace-after-other-bang-name",
        'def x := panic! "{"\ndef true := 1\n-- "}" "\n-- "',
        "other than s! or f!",
    ),
    ("brace-after-dotted-s-bang", 'x.s! "{"', "other than s! or f!"),
    ("brace-after-longer-s-bang", 'ss! "{x}"', "other than s! or f!"),
    ("nested-too-deep", 's!"{' * 17, "nested too deep"),
]


@pytest.mark.parametrize(("text", "reason"), [c[1:] for c in PROBLEMS], ids=[c[0] for c in PROBLEMS])
def test_ambiguous_or_broken_files_are_refused(text: str, reason: str) -> None:
    problem = lex(text).problem
    assert problem is not None and reason in problem.reason


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=list("ab \n-/\"'r#{}!s\\«»x.`"), max_size=60))
def test_lex_is_total_and_keeps_length(text: str) -> None:
    lexed = lex(text)
    assert len(lexed.code) == len(text)
    for lexeme in lexed.lexemes:
        assert 0 <= lexeme.start < lexeme.end <= len(text)


# --- exact problems and code views (each reason and position is what the guard reports) ----------

PROBLEMS: list[tuple[str, str, int]] = [
    ('x "abc', "an unterminated string literal", 2),
    ("x /- abc", "an unterminated comment", 2),
    ("x /-", "an unterminated comment", 2),
    ("x /-- abc", "an unterminated doc comment", 2),
    ("x /--", "an unterminated doc comment", 2),
    ('x r#"abc"', "an unterminated raw string literal", 2),
    ("x «abc", "an unterminated '«' name", 2),
    ("x 'ab'", "a malformed character literal", 2),
    ('x s!"a {b', "an unterminated string interpolation", 7),
    ('x s!"a {b}', "an unterminated string literal", 4),
    ('x s!"a', "an unterminated string literal", 4),
    ('a.r"x"', "a raw string right after '.' (there `r` may continue a name)", 2),
    ('a`r"x"', "a raw string right after '`' (there `r` may continue a name)", 2),
    (
        "x <-- c",
        "a comment opened right after '<' (Lean may read '<-' as one token; put a space before the comment)",
        3,
    ),
    ('panic! "{x}"', "a string with '{' right after a name ending in '!' other than s! or f!", 7),
]


@pytest.mark.parametrize(("text", "reason", "pos"), PROBLEMS, ids=[p[0] for p in PROBLEMS])
def test_each_problem_is_reported_with_its_reason_and_position(text: str, reason: str, pos: int) -> None:
    problem = lex(text).problem
    assert problem is not None and (problem.reason, problem.pos) == (reason, pos)


def _nested(levels: int) -> str:
    return 'x := s!"' + '{s!"' * (levels - 1) + "{y}" + '"}' * (levels - 1) + '"'


def test_interpolations_nest_exactly_sixteen_deep() -> None:
    assert lex(_nested(16)).problem is None
    problem = lex(_nested(17)).problem
    assert problem is not None and (problem.reason, problem.pos) == (
        "string interpolations nested too deep",
        72,
    )


VIEWS: list[tuple[str, str]] = [
    ('x "a\\"b" y', 'x "    " y'),
    ('r#"a"b"# y', '"      " y'),
    ('x := r"ab" ++ r#"cd"#', 'x := "   " ++ "     "'),
    ("c := '\\x41' z", "c := '    ' z"),
    ('s!"a{b}c" d', 's!" {b} " d'),
    ('f!"{ {a} }" -- c', 'f!"{ {a} }"     '),
    ("/-- doc -/ x", "/--     -/ x"),
    ("/-! m -/ x", "/-!   -/ x"),
    ("/-- /- a -/ doc -/ x", "/--" + " " * 13 + "-/ x"),
    ("/-- /- a -/ doc -/ x -- c", "/--" + " " * 13 + "-/ x     "),
    ("a «b c» d", "a «b c» d"),
    ("x -- c\ny", "x     \ny"),
    ("a /- b\nc -/ d", "a     \n     d"),
    ("a /-/ b -/ d", "a          d"),
    ("{a} -- c\n}", "{a}     \n}"),
]


@pytest.mark.parametrize(("text", "view"), VIEWS, ids=[v[0] for v in VIEWS])
def test_code_view_exactly(text: str, view: str) -> None:
    assert code(text) == view


@pytest.mark.parametrize(
    "text",
    [
        'x := s! /- a -/ /- b -/ /- c -/ "{y}"',
        'x := s!\n  -- a\n  -- b\n  "{y}"',
        'x := f!   \n\n   "{y}"',
    ],
)
def test_comments_between_s_bang_and_its_string_keep_it_interpolated(text: str) -> None:
    # Lean's `whitespace` skips any number of comments between the `s!` token and its string, so
    # `{y}` is code; a lexer that forgot `s!` behind them would blank `y` out of the code view.
    assert code(text).endswith('"{y}"')


def test_comments_between_another_bang_name_and_a_brace_string_are_refused() -> None:
    problem = lex('panic! /- a -/ /- b -/ "{x}"').problem
    assert problem is not None and problem.reason.startswith("a string with '{' right after a name")


@pytest.mark.parametrize("text", ['x := ab.s! "{y}"', 'x := as! "{y}"'])
def test_a_name_merely_ending_in_s_bang_is_not_s_bang(text: str) -> None:
    problem = lex(text).problem
    assert problem is not None and problem.reason.startswith("a string with '{' right after a name")


# (text, its lexemes as (kind, text), its code view): each pins one reading that a lexer slip changes
READINGS: list[tuple[str, list[tuple[str, str]], str]] = [
    ("-- a\n/-- doc -/ x", [("line_comment", "-- a"), ("doc_comment", "/-- doc -/")], "    \n/--     -/ x"),
    ("-- a\n/-! m -/ x", [("line_comment", "-- a"), ("module_doc", "/-! m -/")], "    \n/-!   -/ x"),
    ("/---/ x", [("doc_comment", "/---/")], "/---/ x"),
    ("x --- c\ny", [("line_comment", "--- c")], "x      \ny"),
    ("-- c\nx <|>", [("line_comment", "-- c")], "    \nx <|>"),
    ("}\n-- c", [("line_comment", "-- c")], "}\n    "),
    ('x := s!"{ { {a} } } z"', [("string", '"{'), ("string", '} z"')], 'x := s!"{ { {a} } }  "'),
    ("x {-- c\n}", [("line_comment", "-- c")], "x {    \n}"),
    ("«a» -- c\n«b»", [("line_comment", "-- c")], "«a»     \n«b»"),
    ('«a»"s"', [("string", '"s"')], '«a»" "'),
    ("(a!-- c\n)", [("line_comment", "-- c")], "(a!    \n)"),
    ('x := s!"{a}"-- c', [("string", '"{'), ("string", '}"'), ("line_comment", "-- c")], 'x := s!"{a}"    '),
    ('x := s!"{"x"}y"', [("string", '"{'), ("string", '"x"'), ("string", '}y"')], 'x := s!"{" "} "'),
]


@pytest.mark.parametrize(("text", "lexemes", "view"), READINGS, ids=[r[0] for r in READINGS])
def test_readings_exactly(text: str, lexemes: list[tuple[str, str]], view: str) -> None:
    # A doc comment after a comment is still a doc comment; `/---/` is `/--` closed by `-/`;
    # `---` is a line comment; a stray `}` outside a string ends nothing; braces nest inside an
    # interpolation; `«a»` and `a!` are passed whole.
    assert kinds(text) == lexemes
    assert code(text) == view


def test_a_string_ending_in_s_then_bang_is_not_s_bang() -> None:
    # After a literal, what precedes `!` is its closing quote, not the literal's last character.
    assert code('x := "as"!"{y}"') == 'x := "  "!"   "'


@pytest.mark.parametrize("before", ["{a}", "x {", "«a»"])
def test_s_bang_right_after_a_brace_or_an_escaped_name_is_interpolated(before: str) -> None:
    # `}`, `{` and `»` end a token, so the `s!` after them is the whole token.
    assert code(f'x := {before}s!"{{y}}"').endswith('s!"{y}"')


def test_lexeme_kinds_are_exactly() -> None:
    # The guard's rules and traces name these kinds; a new one must be a decision made here too.
    from typing import get_args

    from lean_mod_add_proof.grading.lexer import LexemeKind

    assert get_args(LexemeKind) == (
        "line_comment",
        "block_comment",
        "doc_comment",
        "module_doc",
        "string",
        "char",
    )
