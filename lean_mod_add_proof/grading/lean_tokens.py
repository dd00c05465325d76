"""The tokens of the pinned toolchain that the guard's lexer must know, and the check of that
belief against the real toolchain's token table.

Lean has no separate lexer: `tokenFn` (lean4 `src/Lean/Parser/Basic.lean`, read at index id
52317537067, commit 00c1b82722b50e9b1ae4999ccc97f932b2788b51) reads, at a token start, a string
(`"`), a character literal (`'` not followed by `'`: `charLitFnAux`), a number, a name literal,
a raw string, or else the longest token of the token table that matches there
(`c.tokens.matchPrefix`, `Lean.Data.Trie.matchPrefix` in `src/Lean/Data/Trie.lean` @791e1393),
an identifier winning only when it is longer (`identFnAux`, `mkIdResult`, `isToken`). So where
a token holds an apostrophe, `×'"…"` is the token `×'` and then a string, never `×` and a
character literal: a lexer that does not know `×'` reads Lean's code as a literal and its
literal as code. That is what this table is for.

Which tokens can hold an apostrophe. An atom of a `syntax`/`macro`/`notation` may not start with
`'` (unless with `''`) or `"` (`isValidAtom`, `src/Lean/Elab/Syntax.lean` @83febb95), and the
first atom of a syntax in a category whose leading identifiers are not reserved (`tactic`,
`conv`) is made a non-reserved symbol (`processAtom`, same file), which never enters the token
table: tactic names such as `refine'`, `case'`, `rfl'`, `have'`, `let'`, `repeat'` are read as
identifiers, exactly as the lexer reads any name (`isIdRest` holds `'`). What remains are the
reserved tokens of term syntax below. Each starts with a character that is never part of an
identifier (`isIdFirst`/`isIdRest`, `isLetterLike` in `src/Init/Meta/Defs.lean`: `×` and `Σ` are
left out of the letter-like ranges on purpose) and, by `APOSTROPHE_TOKENS`' claim checked on the
real table, never inside a longer token; so in code that character always starts a token, and
the longest match there decides whether the apostrophe after it is code.

Nothing here was read from a toolchain. `TOKEN_TABLE_LEAN` prints the toolchain's own table
(builtin tokens, and every token `Init`'s modules declare, scoped ones included) and
`compare_token_table` checks the three beliefs the lexer rests on; `lean-check` and
`doctor --selftest` report the result (docs/trust-model.md, "The guard's token table").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TokenSource:
    """A token of the pinned toolchain's table, and where it was read."""

    token: str
    path: str
    """In leanprover/lean4."""
    read_at: str
    """The stored commit read, or the look-up index id where the index reported no commit."""
    declaration: str
    """The declaration as read there."""
    scoped: str = ""
    """The namespace whose `open` activates the token; "" for a global token."""


#: Every token of the toolchain's table holding an apostrophe (the lexer reads them whole).
APOSTROPHE_TOKENS: tuple[TokenSource, ...] = (
    TokenSource(
        "×'",
        "src/Init/Notation.lean",
        "index id 1412359262 (commit not reported)",
        '@[inherit_doc] infixr:35 " ×\' " => PProd',
    ),
    TokenSource(
        "⊕'",
        "src/Init/Core.lean",
        "f4a05a01b54c99a2b2fa8f44a557a69c98b1ec20",
        '@[inherit_doc] infixr:30 " ⊕\' " => PSum',
    ),
    TokenSource(
        "Σ'",
        "src/Init/NotationExtra.lean",
        "0036111db9d6ef99842e728ff91b030a9a14fa4e",
        'macro "Σ\'" xs:explicitBinders ", " b:term : term => expandExplicitBinders `PSigma xs b',
    ),
    TokenSource(
        "]'",
        "src/Init/GetElem.lean",
        "39bc28f6726a55bf8e57e47b918f5c82cf521906",
        'syntax term noWs "[" withoutPosition(term) "]\'" term:max : term',
    ),
    TokenSource(
        "#'",
        "src/Init/Data/BitVec/Basic.lean",
        "341151854854ebc3526d74832bb56febce14c32a",
        'scoped syntax:max term:max noWs "#\'" noWs term:max : term',
        scoped="BitVec",
    ),
)

#: The same tokens as strings.
APOSTROPHE_TOKEN_TEXTS: frozenset[str] = frozenset(t.token for t in APOSTROPHE_TOKENS)
#: The first character of each apostrophe token: never inside a longer token (checked on the
#: real table), never part of an identifier, so in code it always starts a token.
LEAD_CHARACTERS: frozenset[str] = frozenset(t.token[0] for t in APOSTROPHE_TOKENS)
#: Longest first, so that a longest match is the first that matches.
APOSTROPHE_TOKENS_LONGEST_FIRST: tuple[str, ...] = tuple(
    sorted(APOSTROPHE_TOKEN_TEXTS, key=lambda t: (-len(t), t))
)

#: The Lean program that prints the toolchain's token table (see its header).
TOKEN_TABLE_LEAN = Path(__file__).with_name("TokenTable.lean")


def parse_token_listing(output: str) -> frozenset[str] | None:
    """The tokens `TokenTable.lean` printed: one token a line, as the decimal code points of its
    characters separated by spaces (so that no character of a token needs quoting), between a
    `tokens-begin` and a `tokens-end` line. None when the listing is not all there."""
    lines = output.splitlines()
    try:
        begin = lines.index("tokens-begin")
        end = lines.index("tokens-end", begin)
    except ValueError:
        return None
    tokens: set[str] = set()
    for line in lines[begin + 1 : end]:
        try:
            points = [int(field) for field in line.split()]
            tokens.add("".join(chr(point) for point in points))
        except ValueError:  # a field that is no number, or a number that is no code point
            return None
    return frozenset(tokens) if tokens else None


@dataclass(frozen=True)
class TokenTableCheck:
    """The guard's beliefs about the token table, held against the toolchain's own."""

    missing: tuple[str, ...]
    """Apostrophe tokens the guard lists that the toolchain does not have."""
    unexpected: tuple[str, ...]
    """Tokens of the toolchain holding an apostrophe or a double quote that the guard does not list."""
    lead_inside: tuple[str, ...]
    """Tokens holding a lead character after their first character (that character might then
    not start a token, and the lexer's reading of the apostrophe after it would be a guess)."""

    @property
    def matches(self) -> bool:
        return not (self.missing or self.unexpected or self.lead_inside)

    def line(self) -> str:
        """The report line: `guard token table: matches` or `guard token table: differs: ...`."""
        if self.matches:
            return f"guard token table: matches ({len(APOSTROPHE_TOKENS)} apostrophe tokens)"
        parts = []
        if self.missing:
            parts.append(f"not in the toolchain: {' '.join(self.missing)}")
        if self.unexpected:
            parts.append(f"not in the guard's table: {' '.join(self.unexpected)}")
        if self.lead_inside:
            parts.append(f"a lead character inside a longer token: {' '.join(self.lead_inside)}")
        return "guard token table: differs: " + "; ".join(parts)


def compare_token_table(toolchain_tokens: frozenset[str]) -> TokenTableCheck:
    """Hold the guard's three beliefs against the toolchain's table (pure): its apostrophe
    tokens are exactly `APOSTROPHE_TOKENS`; no token holds a double quote; no token holds a
    lead character anywhere but first."""
    quoted = {t for t in toolchain_tokens if "'" in t or '"' in t}
    missing = sorted(APOSTROPHE_TOKEN_TEXTS - quoted)
    unexpected = sorted(quoted - APOSTROPHE_TOKEN_TEXTS)
    lead_inside = sorted(t for t in toolchain_tokens if any(c in LEAD_CHARACTERS for c in t[1:]))
    # Shown as Lean writes them: a token may hold spaces only if Lean's table does.
    return TokenTableCheck(tuple(missing), tuple(unexpected), tuple(lead_inside))
