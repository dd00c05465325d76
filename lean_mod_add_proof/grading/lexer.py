"""Lean's lexical layer, as far as the guard needs it: which characters of a file are code and
which are comments, string literals and character literals.

The guard's own structural rules (everything the seed does not name) read only code, so a
comment or a string can never trigger them and a name or a class is never read out of one; the
seed's banned words still match anywhere. `lex` splits the text the way Lean's lexer does
(lean4 `src/Lean/Parser/Basic.lean`) and returns the non-code lexemes with their kind and a *code
view*: the text with every comment and the inside of every literal blanked (newlines kept, so
positions and line numbers are those of the original).

What is followed, and where (all in `src/Lean/Parser/Basic.lean` unless named):

- `whitespace`: `--` starts a line comment up to the newline; `/-` starts a block comment that
  `finishCommentBlock` closes, counting nested `/-` and `-/`. The character right after `/-` is
  skipped unread (`s.next input i`), so `/-/-` opens one comment, not two. `/--` and `/-!` are
  not whitespace but tokens (doc comment, module doc; `docComment` and `moduleDoc` in
  `src/Lean/Parser/Command.lean` read them with `commentBody`, which is `finishCommentBlock`), and
  a token is followed by `whitespace` (`mkTokenAndFixPos`), so comments right after `/--` are
  skipped before the body is read.
- `tokenFnAux`: `"` starts a string (`strLitFnAux`: `\\` escapes the next character, so `\\"` does
  not end it); `'` starts a character literal unless another `'` follows (`charLitFnAux`: one
  character or escape, `\\x` + 2 or `\\u` + 4 hex digits, then `'`); `r` followed by `#`s and
  `"` starts a raw string (`isRawStrLitStart`, `rawStrLitFnAux`: it ends at `"` followed by as
  many `#`s); a digit starts a number (`numberFnAux`); anything else is an identifier or the
  longest token of the table there (`c.tokens.matchPrefix`). The tokens that hold an apostrophe
  (`×'`, `⊕'`, `Σ'`, `]'`, `#'`: `lean_tokens.APOSTROPHE_TOKENS`, cited there and checked on the
  toolchain by `lean-check`) are read whole, so `×'"…"` is a token and then a string; `''` is no
  character literal and starts no token, so Lean reports an error there, and the file is
  refused. These are tried only where a token starts: inside an identifier `'` is a name
  character (`isIdRest`, `src/Init/Meta/Defs.lean`), so `h'` is a name and `x'"` a name then a
  string.
- `identFnAux`: `«` starts an escaped name part running to `»`.
- `interpolatedStrFn` (`src/Lean/Parser/StrInterpolation.lean`): in `s!"..."` and `f!"..."` (the
  `interpolatedStr` users in Init; `dbg_trace` is a banned word) `{` opens a term, read as code up
  to its `}`. A string holding `{` after any other name ending in `!` is refused.

Where a file could be read two ways by a lexer that holds only the apostrophe tokens of Lean's
token table, the file is refused instead (`LexProblem`): a comment opened right after an
operator character (Lean may read `<--x` as the token `<-` then `-x`, not a comment), a raw
string right after `.` or a
backquote (there `r` continues a name). An unterminated comment, string, character literal or
`«` is refused too: Lean reports an error for each, so the file could not build anyway. Honest
files meet none of these, and refusing them keeps the code view from ever hiding code Lean reads.

`lex` is linear: code between lexemes is passed by one possessive regex match, each lexeme is
read once, and nested comments are matched with one `finditer` over their openers and closers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, NamedTuple

from lean_mod_add_proof.grading.lean_tokens import APOSTROPHE_TOKENS_LONGEST_FIRST

LexemeKind = Literal["line_comment", "block_comment", "doc_comment", "module_doc", "string", "char"]


class Lexeme(NamedTuple):
    """A non-code lexeme: `text[start:end]` is a comment or a literal of this `kind`. An
    interpolated string is one lexeme per literal part (its `{...}` terms are code)."""

    kind: LexemeKind
    start: int
    end: int


@dataclass(frozen=True)
class LexProblem:
    """Why the file cannot be split safely; `pos` is where."""

    reason: str
    pos: int


@dataclass(frozen=True)
class Lexed:
    """The result of `lex`: the code view, the non-code lexemes in order, and a problem if any
    (then the code view is only valid before `problem.pos`)."""

    code: str
    lexemes: tuple[Lexeme, ...]
    problem: LexProblem | None


# `isLetterLike` and `isSubScriptAlnum` (src/Init/Meta/Defs.lean): Greek without λ Π Σ, Coptic,
# polytonic Greek, the letterlike block, mathematical alphanumerics, Latin-1 letters without
# × ÷, Latin Extended-A; subscripts.
_LETTER_LIKE = (
    "\u03b1-\u03ba\u03bc-\u03c9\u0391-\u039f\u03a1\u03a2\u03a4-\u03a9\u03ca-\u03fb\u1f00-\u1ffe"
    "\u2100-\u214f\U0001d49c-\U0001d59f\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u00ff\u0100-\u017f"
)
_SUBSCRIPT = "\u2080-\u2089\u2090-\u209c\u1d62-\u1d6a\u2c7c"
_ID_FIRST = f"A-Za-z_{_LETTER_LIKE}"
_ID_REST = f"A-Za-z0-9_'!?{_LETTER_LIKE}{_SUBSCRIPT}"
#: Character classes (for `[...]`) of the first and later characters of an identifier (Lean's
#: `isIdFirst`, `isIdRest`), and an identifier with its dotted components (`identFnAux`).
ID_FIRST_CLASS = _ID_FIRST
ID_REST_CLASS = _ID_REST
IDENTIFIER = rf"[{_ID_FIRST}][{_ID_REST}]*+(?:\.[{_ID_FIRST}][{_ID_REST}]*+)*+"

# Code between lexemes: whitespace, names (never one that starts a raw string: `r"`, `r#"`),
# numbers (`numberFnAux`: `0b`, `0o`, `0x`, decimals with `.` and exponent), and every other
# character except the ones that may start a lexeme (`-` and `/` only when a comment follows).
_NUMBER = (
    r"0[bB][01_]*+|0[oO][0-7_]*+|0[xX][0-9a-fA-F_]*+|[0-9][0-9_]*+(?:\.[0-9_]*+)?+(?:[eE][+-]?[0-9_]++)?+"
)
_CODE_RE = re.compile(
    rf"(?:[ \t\n]++|(?!r#*+\")[{_ID_FIRST}][{_ID_REST}]*+|(?:{_NUMBER})|-(?!-)|/(?!-)"
    rf"|[^\-/\"'«r{{}}{_ID_FIRST}0-9 \t\n])*+"
)
_STRING_RE = re.compile(r'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_INTERP_PART_RE = re.compile(r'(?:[^"\\{]++|\\.)*+', re.DOTALL)  # up to `"`, `{` or the end
_CHAR_RE = re.compile(r"'(?:\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)|[^\\])'", re.DOTALL)
_RAW_START_RE = re.compile(r'r(#*+)"')
_LINE_END_RE = re.compile(r"[^\n]*+")
#: Deepest nesting of interpolated strings read (`s!"{s!"{...}"}"`); deeper is refused, which
#: keeps the reading's recursion bounded.
MAX_INTERPOLATION_DEPTH = 16
_COMMENT_TOKEN_RE = re.compile(r"/-|-/")
_WHITESPACE_RE = re.compile(r"[ \t\n]*+")
#: Characters after which a comment opener might instead end a multi-character token (`<-`, `\/`).
_OPERATOR_CHARS = frozenset("!#$%&*+-./:;<=>?@\\^|~")
#: A string right after a name ending in `!` (`s!`, `f!`, after optional whitespace) is interpolated.
_BANG_NAME_END_RE = re.compile(f"[{_ID_REST}]!$")
# The `interpolatedStr` users a submission can reach: `s!` (`src/Init/Data/ToString/Macro.lean`)
# and `f!` (`src/Init/Data/Format/Macro.lean`), as whole tokens (`x.s!` is a name, not `s!`).
_INTERPOLATING_RE = re.compile(f"(?:^|[^{_ID_REST}.])[sf]!$")
_ID_REST_RE = re.compile(f"[{_ID_REST}]")
_NOT_NEWLINE_RE = re.compile(r"[^\n]")
#: Every character that stands right before the apostrophe in a token holding one.
_BEFORE_APOSTROPHE = frozenset(t[t.index("'") - 1] for t in APOSTROPHE_TOKENS_LONGEST_FIRST if t.index("'"))


class _Lexer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.lexemes: list[Lexeme] = []
        # (start, end, quote) of each blanked span, in order; see `code_view`
        self.spans: list[tuple[int, int, str | None]] = []
        # the last characters of code read, whitespace and comments as one space: a string
        # after `s!` or `f!` is interpolated
        self.last_code = ""
        # where the code read now began (the end of the last comment or literal): a token
        # starts no earlier
        self.code_from = 0

    def note_code(self, chunk: str) -> None:
        """Keep the last characters of code read, whitespace (and so comments) as one space."""
        # Collapsed across calls too: comments between `s!` and its string (Lean's `whitespace`
        # skips any number of them) must not push `s!` out of the window.
        joined = self.last_code + chunk
        self.last_code = (" ".join(joined.split()) + (" " if joined[-1:].isspace() else ""))[-6:]

    def add(self, kind: LexemeKind, start: int, end: int, quote: str | None = None) -> None:
        """Record a lexeme; the code view blanks it (newlines kept). A literal keeps a quote at
        each end (`quote`, or with "" its own delimiters: an interpolated part's `{` and `}`), so
        the code view still shows that a literal stands there, never a name or a numeral."""
        self.lexemes.append(Lexeme(kind, start, end))
        self.spans.append((start, end, quote))
        self.code_from = end
        self.note_code(self.text[end - 1] if quote is not None else " ")

    def code_view(self) -> str:
        text = self.text
        parts: list[str] = []
        done = 0
        for start, end, quote in sorted(self.spans, key=lambda span: (span[0], -span[1])):
            if start < done:  # a comment inside a doc comment's span: blanked with it
                continue
            parts.append(text[done:start])
            lo, hi = (start, end) if quote is None else (start + 1, end - 1)
            if quote is not None:
                parts.append(quote or text[start])
            inner = text[lo:hi]
            parts.append(_NOT_NEWLINE_RE.sub(" ", inner) if "\n" in inner else " " * len(inner))
            if quote is not None:
                parts.append(quote or text[end - 1])
            done = end
        parts.append(text[done:])
        return "".join(parts)

    def apostrophe_token_end(self, pos: int) -> int | None:
        """Just after the token holding the apostrophe at `pos`, if one does (`×'`, `Σ'`, `]'`,
        `⊕'`, `#'`: `lean_tokens.APOSTROPHE_TOKENS`), else None. Its first character is code
        read since the last literal or comment, and it starts a token there: it is never part
        of a name or of a longer token, and Lean takes the longest match (`tokenFn`)."""
        text = self.text
        if pos == 0 or text[pos - 1] not in _BEFORE_APOSTROPHE:  # most apostrophes: no token
            return None
        for token in APOSTROPHE_TOKENS_LONGEST_FIRST:
            start = pos - token.index("'")
            if start >= self.code_from and text.startswith(token, start):
                return start + len(token)
        return None

    def finish_block(self, pos: int) -> int | None:
        """`finishCommentBlock 1` from `pos`: just after the closing `-/`, or None at the end."""
        depth = 1
        for m in _COMMENT_TOKEN_RE.finditer(self.text, pos):
            # `finditer` never reports overlapping tokens; Lean reads `/-/` as an opener followed
            # by `/`, and `-/-` as a closer followed by `-`, the same left-to-right way.
            depth += 1 if m.group(0) == "/-" else -1
            if depth == 0:
                return m.end()
        return None

    def whitespace(self, pos: int) -> int | LexProblem:
        """Lean's `whitespace` from `pos`: past spaces and plain comments (recording them)."""
        text = self.text
        while True:
            pos = _WHITESPACE_RE.match(text, pos).end()  # type: ignore[union-attr]
            if text.startswith("--", pos):
                end = _LINE_END_RE.match(text, pos).end()  # type: ignore[union-attr]
                self.add("line_comment", pos, end)
                pos = end
            elif text.startswith("/-", pos) and text[pos + 2 : pos + 3] not in ("-", "!"):
                end = self.finish_block(pos + 3)  # the character after `/-` is skipped unread
                if end is None or pos + 3 > len(text):
                    return LexProblem("an unterminated comment", pos)
                self.add("block_comment", pos, end)
                pos = end
            else:
                return pos

    def comment(self, pos: int) -> int | LexProblem:
        """A comment of any kind at `pos` (`--`, `/-`, `/--`, `/-!`): just after it."""
        text = self.text
        if text.startswith("--", pos) or text[pos + 2 : pos + 3] not in ("-", "!"):
            return self.whitespace(pos)
        kind: LexemeKind = "doc_comment" if text[pos + 2] == "-" else "module_doc"
        body = self.whitespace(pos + 3)  # the `/--` token's trailing whitespace
        if isinstance(body, LexProblem):
            return body
        end = self.finish_block(body)
        if end is None:
            return LexProblem("an unterminated doc comment", pos)
        # A doc comment is a token, not whitespace: the code view keeps its `/--` (`/-!`) and
        # `-/`, so that the header rule still sees that it ends the header.
        self.lexemes.append(Lexeme(kind, pos, end))
        self.spans.append((pos + 3, end - 2, None))  # the code view keeps `/--` and `-/`
        self.code_from = end
        return end

    def interpolated(self, pos: int, depth: int) -> int | LexProblem:
        """An interpolated string at `pos` (its `"`): literal parts are lexemes, `{...}` is code."""
        text = self.text
        part_start = pos
        i = pos + 1
        while True:
            i = _INTERP_PART_RE.match(text, i).end()  # type: ignore[union-attr]
            if i >= len(text):
                return LexProblem("an unterminated string literal", pos)
            if text[i] == '"':
                self.add("string", part_start, i + 1, "")
                return i + 1
            # `{`: the literal part ends; a term follows, up to its `}`.
            self.add("string", part_start, i + 1, "")
            if depth >= MAX_INTERPOLATION_DEPTH:
                return LexProblem("string interpolations nested too deep", i)
            end = self.code(i + 1, depth + 1)
            if isinstance(end, LexProblem):
                return end
            if end >= len(text):  # no `}`
                return LexProblem("an unterminated string interpolation", i)
            part_start = end  # the `}` opens the next literal part
            i = end + 1

    def code(self, pos: int, depth: int = 0) -> int | LexProblem:
        """Read code from `pos` to the end, or inside `depth` interpolated strings to the `}`
        closing the innermost term (its position)."""
        interpolation = depth > 0
        text, n = self.text, len(self.text)
        braces = 0
        while True:
            start = pos
            pos = _CODE_RE.match(text, pos).end()  # type: ignore[union-attr]
            if pos > start:
                self.note_code(text[start:pos])
            if pos >= n:
                return pos
            ch = text[pos]
            before = text[pos - 1] if pos > 0 else "\n"
            if ch == "{":
                braces += 1
                pos += 1
                self.note_code("{")
            elif ch == "}":
                if interpolation and braces == 0:
                    return pos
                braces = max(braces - 1, 0)
                pos += 1
                self.note_code("}")
            elif ch in "-/":  # `--` or `/-`, by construction of the code pattern
                # `!` and `?` may end a name (`s!`, `isIdRest`), which Lean reads whole first.
                in_name = before in "!?" and pos > 1 and _ID_REST_RE.match(text, pos - 2) is not None
                if before in _OPERATOR_CHARS and not in_name:
                    return LexProblem(
                        f"a comment opened right after '{before}' (Lean may read '{before}{ch}' as one "
                        "token; put a space before the comment)",
                        pos,
                    )
                result = self.comment(pos)
                if isinstance(result, LexProblem):
                    return result
                pos = result
            elif ch == '"':
                if _INTERPOLATING_RE.search(self.last_code.rstrip()) is not None:
                    result = self.interpolated(pos, depth)
                    if isinstance(result, LexProblem):
                        return result
                    pos = result
                else:
                    m = _STRING_RE.match(text, pos)
                    if m is None:
                        return LexProblem("an unterminated string literal", pos)
                    if "{" in m.group(0) and _BANG_NAME_END_RE.search(self.last_code.rstrip()) is not None:
                        # `panic! "{..}"`: whether Lean reads it interpolated depends on syntax
                        # the lexer does not hold; refuse rather than guess.
                        return LexProblem(
                            "a string with '{' right after a name ending in '!' other than s! or f!", pos
                        )
                    self.add("string", pos, m.end(), '"')
                    pos = m.end()
            elif ch == "'":
                if before in _BEFORE_APOSTROPHE and (token_end := self.apostrophe_token_end(pos)) is not None:
                    self.note_code(text[pos:token_end])
                    pos = token_end
                    continue
                if text.startswith("''", pos):
                    # Not a character literal (`tokenFnAux`), and no token of the table starts
                    # with `''` (`lean_tokens`): Lean reports an error here, whatever follows.
                    return LexProblem(
                        "two apostrophes that start no token (Lean reads no literal there)", pos
                    )
                m = _CHAR_RE.match(text, pos)
                if m is None:
                    return LexProblem("a malformed character literal", pos)
                self.add("char", pos, m.end(), "'")
                pos = m.end()
            elif ch == "«":
                end = text.find("»", pos)
                if end < 0:
                    return LexProblem("an unterminated '«' name", pos)
                pos = end + 1
                self.note_code("»")
            else:  # `r` before `#`s and `"`: a raw string
                m = _RAW_START_RE.match(text, pos)
                if m is None:  # cannot happen: the code pattern stops at `r` only before one
                    pos += 1
                    continue
                if before in ".`":
                    return LexProblem(
                        f"a raw string right after '{before}' (there `r` may continue a name)", pos
                    )
                close = text.find('"' + m.group(1), m.end())
                if close < 0:
                    return LexProblem("an unterminated raw string literal", pos)
                end = close + 1 + len(m.group(1))
                self.add("string", pos, end, '"')
                pos = end


def lex(text: str) -> Lexed:
    """Split `text` into code and non-code lexemes as Lean does (see the module docstring)."""
    lexer = _Lexer(text)
    result = lexer.code(0)
    problem = result if isinstance(result, LexProblem) else None
    return Lexed(lexer.code_view(), tuple(lexer.lexemes), problem)
