"""Which names a Lean file declares, read over Lean's tokens (the guard's rules 10 and 11).

A tactic option's literal value (`true`, `false`, a numeral) is elaborated in the file's scope,
so the file may declare nothing named `true` or `false`, nor like a class it may declare
instances of (`guard.py` says why). This module finds the places where a name is *declared*, as
Lean's parser files them, and only those: a name that is merely used (`b = true`, `| true =>`,
`true :: bs`) is never a declaration.

It reads the guard's code view (`lexer.lex`: comments blanked, a literal kept as its quotes
around blanks) in Lean's tokens, never in patterns over lines of text:

- a *chunk* is what `identFnAux` reads as one name (lean4 `src/Lean/Parser/Basic.lean`):
  identifier characters (`isIdRest`), joined by `.` only when an identifier character follows
  (`isIdCont`); connectives and binder symbols (`→ ↔ ∧ ∨ ∀ ∃ λ Σ ×`) are never name characters,
  and the apostrophe of a token such as `×'` or `]'` belongs to that token
  (`lean_tokens.APOSTROPHE_TOKENS`), not to the name after it;
- a *run* is a sequence of chunks that are identifiers and no keyword, separated only by
  whitespace (comments are whitespace, as in Lean): Lean reads every name of a binder group, or
  of a declaration's name and its simple binders, as one such run;
- a run declares its names when the token before it says so:
  - a declaring keyword (`DECLARING_KEYWORDS`, or `instance` after an optional
    `(priority := ...)`, never `deriving instance`), skipping doc comments, attribute lists and
    `private`/`protected`/`noncomputable`/`nonrec`: its first name is the declared one (`declId`,
    `instance := ... "instance" >> optNamedPrio >> optional declId`,
    `src/Lean/Parser/Command.lean`), the rest are binders;
  - a binder keyword or symbol (`∀`, `∃`, `λ`, `fun`, `let`, `have`, `Σ`, `Σ'`): binders up to
    the `:`, `,`, `=>` or `:=` that ends the run;
  - an opening bracket, when a lone `:` follows the run: a binder group `(a b : T)`,
    `{a : T}`, `[inst : C]`, `⦃a : T⦄` (a type ascription `(x : T)` has the same tokens and is
    read the same way, unless a relation or connective no binder group stands beside is right
    before or after it: `b = (true : Bool)`, `_Reader.ascription`);
  - a lone `|` at bracket depth 0 of an `inductive` (up to the next command): a constructor
    (`ctor := "\\n| " >> declModifiers >> rawIdent >> optDeclSig`);
  - a line of a *layout block*, the fields after a structure's `where` or `:=` (and an
    optional `ctor ::`) and the declarations after any `where`: Lean reads them with
    `manyIndent`/`sepByIndent` (`checkColGe` at the column of the first), and a name starts a
    new item only at exactly that column and only where the term before it is complete (an
    application takes a further argument only at a greater column, `checkColGt`; after `then`,
    `:=`, an operator or an opening bracket a term must follow). So `true` alone on a line
    after `then` is a field's default value, and a line at a smaller column ends the block;
  - a structure's `:= ctor ::` names its constructor.

Everything is linear: only chunks holding a protected name are looked at, each run is read once
(candidates inside a run already read are skipped), the regions looked back over never
overlap, and the blocks and bodies are found on first need and kept.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from typing import NamedTuple

from lean_mod_add_proof.grading.lean_tokens import APOSTROPHE_TOKEN_TEXTS, LEAD_CHARACTERS
from lean_mod_add_proof.grading.lexer import ID_FIRST_CLASS, ID_REST_CLASS, IDENTIFIER

#: Words after which the next name is a new declaration's (rule 10); `instance`, `opaque` and
#: `axiom` are not here: the first two are banned words, `instance` is read on its own (after an
#: optional priority, and never after `deriving`).
DECLARING_KEYWORDS: tuple[str, ...] = (
    "def", "theorem", "lemma", "abbrev", "structure", "class", "inductive", "where", "rec",
)  # fmt: skip
#: Words and symbols after which the names up to `:`, `,`, `=>` or `:=` are binders.
BINDER_KEYWORDS: tuple[str, ...] = ("fun", "let", "have", "forall")
BINDER_SYMBOLS: tuple[str, ...] = ("∀", "∃", "λ", "Σ", "Σ'", "∃!")
#: Modifiers that may stand between a declaring word (or `|`) and the name.
MODIFIERS: tuple[str, ...] = ("private", "protected", "noncomputable", "nonrec")
#: Words that start a command: they end an inductive's constructors and a layout block.
COMMAND_KEYWORDS: tuple[str, ...] = (
    "def", "theorem", "lemma", "abbrev", "structure", "class", "inductive", "instance", "example",
    "namespace", "section", "end", "open", "variable", "universe", "set_option", "attribute",
    "deriving", "mutual", "noncomputable", "opaque", "axiom", "termination_by", "decreasing_by",
)  # fmt: skip
#: Words after which a term must follow: a line after one continues it, never starts an item.
CONTINUING_KEYWORDS: tuple[str, ...] = (
    "then", "else", "do", "by", "fun", "if", "match", "with", "at", "from", "in", "have", "let",
    "show", "suffices", "return", "calc", "where", "deriving", "using", "generalizing", "extends",
    "forall", "for", "unless", "mut", "try", "catch", "finally", "instance", "open",
)  # fmt: skip
#: Every word that is no name in a run (keywords, and the tactic words a line may start with, so
#: that a run never reaches across a tactic into the previous line).
RUN_BREAKERS: frozenset[str] = frozenset(
    (
        *DECLARING_KEYWORDS, *BINDER_KEYWORDS, *MODIFIERS, *COMMAND_KEYWORDS, *CONTINUING_KEYWORDS,
        "Type", "Prop", "Sort", "partial", "unsafe", "exact", "refine", "apply", "intro",
        "intros", "simp", "rw", "decide", "omega", "cases", "induction", "rcases", "obtain",
        "constructor", "next", "case", "unfold", "specialize", "replace", "generalize", "exists",
        "nomatch", "nofun",
    )
)  # fmt: skip

#: A protected name found where it is declared: (where the name starts, which reading found it
#: (lower wins at one position), what to show, the protected name, a hint for the reason).
Hit = tuple[int, int, str, str, str]
#: The protected name a name holds, if any (`true` in `Net.true`, a class as the last component).
Finder = Callable[[str], "str | None"]

_KEYWORD_RANK, _CONSTRUCTOR_RANK, _BINDER_RANK, _FIELD_RANK = 0, 1, 2, 3
_BINDER_HINT = " (a field, binder or type ascription)"
_CONSTRUCTOR_HINT = " (a constructor; a match alternative `| true => ...` or `| true | false => ...` is fine)"

# A character of a chunk: an identifier character, the apostrophe only when no lead character of
# an apostrophe token stands before it (`×'` is a token, `h'` a name).
_LEADS = "".join(re.escape(c) for c in sorted(LEAD_CHARACTERS))
_REST = ID_REST_CLASS.replace("'", "")
_CH = rf"(?:[{_REST}]|(?<![{_LEADS}])')"
_CH_REV = rf"(?:[{_REST}]|'(?![{_LEADS}]))"  # the same, on the reversed text
_CHUNK_AFTER_RE = re.compile(rf"(?:{_CH}|\.(?={_CH}))*+")
_CHUNK_BEFORE_RE = re.compile(rf"(?:{_CH_REV}|\.(?={_CH_REV}))*+")  # on the reversed text
_BLANKS_RE = re.compile(r"[ \t\n]*+")  # forwards, or backwards on the reversed text
_INDENT_BEFORE_RE = re.compile(r"[ \t]*+")  # on the reversed text
_RUN_BEFORE_RE = re.compile(rf"(?:[ \t\n]*+{_CH_REV}(?:{_CH_REV}|\.(?={_CH_REV}))*+)*+")  # reversed
_KEYWORD_ALT = "|".join(sorted(RUN_BREAKERS, key=len, reverse=True))
_NOT_CHUNK = rf"(?![{ID_REST_CLASS}]|\.[{ID_REST_CLASS}])"
_RUN_AFTER_RE = re.compile(rf"(?:[ \t\n]++(?!(?:{_KEYWORD_ALT}){_NOT_CHUNK}){IDENTIFIER}{_NOT_CHUNK})*+")
# A chunk of a run region that ends the run: a keyword, or a chunk that is no identifier.
_BREAKER_RE = re.compile(
    rf"(?<=[ \t\n])(?:(?:{_KEYWORD_ALT}){_NOT_CHUNK}|(?![{ID_FIRST_CLASS}]){_CH}(?:{_CH}|\.(?={_CH}))*+)"
)
_IDENTIFIER_RE = re.compile(IDENTIFIER)
_BRACKET_RE = re.compile(r"[\[\]]")
_PAREN_RE = re.compile(r"[()]")
_LINE_BREAK_RE = re.compile(r"\n[ \t]*+")
_PRIORITY_RE = re.compile(r"\([ \t\n]*+priority[ \t\n]*+:=")
_HEADER_END_RE = re.compile(rf"(?<![{ID_REST_CLASS}.])where(?![{ID_REST_CLASS}]|\.[{ID_REST_CLASS}])|:=")
# Symbols read whole where the token before a run matters (longest first).
_SYMBOLS = tuple(
    sorted(
        {*APOSTROPHE_TOKEN_TEXTS, ":=", "::", "=>", "<|", "||", "|||", "|>", "@[", "#[", "%[", ".{",
         ".(", "∃!"},
        key=len,
        reverse=True,
    )
)  # fmt: skip
_OPENERS = frozenset("([{⦃")
_CLOSERS = frozenset(")]}⦄")
# Characters right before a run that may make it a declaration in a way `plainly_used` does not
# settle: the closing brackets (`instance (priority := p) name`, an attribute list, simple binders
# after bracketed ones), `:` (a structure's `ctor ::` before its first field), `/` (a doc comment's
# `-/`), the binder symbols, `'` (`Σ'`), `!` (`∃!`).
_LIVE_BEFORE = frozenset(")]}⦄/∀∃λΣ'!:")
_CHUNK_CHAR_RE = re.compile(rf"[{ID_REST_CLASS}.]")
_TERM_END_SYMBOLS = frozenset(')]}⟩⦄›"')
# A type ascription `(e : T)` that cannot be a binder group (`_Reader.ascription`): the `: T)`,
# with no bracket, comma, colon or line break in `T` (so found in bounded time), and the binary
# relations and connectives around it, each of precedence above 25 on the side of the group
# (lean4 `src/Init/Core.lean`, `src/Init/Prelude.lean` notation: `=`, `≠`, `==`, `!=` 50, `∧`,
# `&&` 35, `∨`, `||` 30; `↔` (20) only after the group, where precedence does not matter).
_ASCRIBED_TYPE_RE = re.compile(
    r"[ \t\n]*+:[^()\[\]{}⦃⦄⟨⟩\n,:]{1,100}\)(?P<relation>[ \t\n]*+(?:=(?!>)|≠|!=|∧|∨|&&|\|\||↔))?"
)
_RELATION_BEFORE_RE = re.compile(r"[ \t\n]*+(?:=(?!:)|≠|∧|∨|&&|\|\|)")  # reversed: `:=` is no relation


def _depth_change(code: str, start: int, end: int) -> int:
    """Opening minus closing brackets in `code[start:end]` (C-level counts, no copy per bracket)."""
    return sum(code.count(c, start, end) for c in "([{⦃⟨") - sum(code.count(c, start, end) for c in ")]}⦄⟩")


def _words_re(words: tuple[str, ...]) -> re.Pattern[str]:
    """Any of `words` as a whole chunk (not part of a longer name, not after a `.`); `re` keeps
    the compiled pattern in its own cache."""
    alt = "|".join(sorted(words, key=len, reverse=True))
    return re.compile(rf"(?<![{ID_REST_CLASS}.])(?:{alt}){_NOT_CHUNK}")


class _Token(NamedTuple):
    kind: str  # "word", "sym", "doc" or "start"
    text: str
    start: int
    end: int


class _Block(NamedTuple):
    first: int  # the first item's first token
    column: int
    end: int  # where the block ends (the first line left of `column`, or the next command)


class _TokenReader:
    """One file's code view, read backwards and forwards in Lean's tokens: chunks, runs, and what
    stands before a run."""

    def __init__(self, code: str) -> None:
        self.code = code
        self.n = len(code)
        self.rev = code[::-1]
        self._keywords: dict[str, list[int]] = {}

    # --- tokens ---------------------------------------------------------------------------------

    def chunk_around(self, start: int, end: int) -> tuple[int, int]:
        """The chunk (one name as Lean reads it) holding `code[start:end]`."""
        back = _CHUNK_BEFORE_RE.match(self.rev, self.n - start)
        after = _CHUNK_AFTER_RE.match(self.code, end)
        return start - (back.end() - back.start()), after.end()  # type: ignore[union-attr]

    def blanks_before(self, pos: int) -> int:
        """`pos` moved back over whitespace (and so over comments, blank in the code view)."""
        m = _BLANKS_RE.match(self.rev, self.n - pos)
        return pos - (m.end() - m.start())  # type: ignore[union-attr]

    def blanks_after(self, pos: int) -> int:
        """`pos` moved on over whitespace."""
        return _BLANKS_RE.match(self.code, pos).end()  # type: ignore[union-attr]

    def previous(self, pos: int) -> _Token:
        """The token that ends right before `pos` (whitespace skipped)."""
        code, p = self.code, self.blanks_before(pos)
        if p == 0:
            return _Token("start", "", 0, 0)
        m = _CHUNK_BEFORE_RE.match(self.rev, self.n - p)
        length = m.end() - m.start()  # type: ignore[union-attr]
        if length:
            return _Token("word", code[p - length : p], p - length, p)
        if code.startswith("-/", p - 2):  # a doc comment: `/--`, blanks, `-/` in the code view
            opener = code.rfind("/-", 0, p - 2)
            if (
                opener >= 0
                and code[opener + 2 : opener + 3] in ("-", "!")
                and not code[opener + 3 : p - 2].strip()
            ):
                return _Token("doc", "", opener, p)
        for symbol in _SYMBOLS:
            if code.startswith(symbol, p - len(symbol)):
                return _Token("sym", symbol, p - len(symbol), p)
        return _Token("sym", code[p - 1], p - 1, p)

    def line_start(self, pos: int) -> int | None:
        """The column of `pos` when only blanks stand before it on its line, else None."""
        m = _INDENT_BEFORE_RE.match(self.rev, self.n - pos)
        before = pos - (m.end() - m.start())  # type: ignore[union-attr]
        # (only asked inside a layout block: its opener stands before `pos`, so `before > 0`)
        if self.code[before - 1] == "\n":
            return pos - before
        return None

    def keyword_positions(self, words: tuple[str, ...]) -> list[int]:
        key = " ".join(words)
        if key not in self._keywords:
            self._keywords[key] = [m.start() for m in _words_re(words).finditer(self.code)]
        return self._keywords[key]

    def last_before(self, words: tuple[str, ...], pos: int) -> int | None:
        positions = self.keyword_positions(words)
        at = bisect.bisect_left(positions, pos) - 1
        return positions[at] if at >= 0 else None

    def next_command(self, pos: int) -> int:
        positions = self.keyword_positions(COMMAND_KEYWORDS)
        at = bisect.bisect_left(positions, pos)
        return positions[at] if at < len(positions) else self.n

    # --- runs -----------------------------------------------------------------------------------

    def run_start(self, start: int, floor: int) -> int:
        """Where the run holding the chunk at `start` begins (never before `floor`)."""
        m = _RUN_BEFORE_RE.match(self.rev, self.n - start, self.n - floor)
        region = max(start - (m.end() - m.start()), floor)  # type: ignore[union-attr]
        region = region + (len(self.code[region:start]) - len(self.code[region:start].lstrip()))
        if region == start:
            return start
        first = _CHUNK_AFTER_RE.match(self.code, region).end()  # type: ignore[union-attr]
        begin = region
        if self.code[region:first] in RUN_BREAKERS or not _IDENTIFIER_RE.fullmatch(self.code, region, first):
            begin = first
        for breaker in _BREAKER_RE.finditer(self.code, first, start):
            begin = breaker.end()
        return (
            begin
            if begin == start
            else begin + (len(self.code[begin:start]) - len(self.code[begin:start].lstrip()))
        )

    def run_end(self, end: int) -> int:
        return _RUN_AFTER_RE.match(self.code, end).end()  # type: ignore[union-attr]

    def lone_colon_after(self, pos: int) -> bool:
        p = self.blanks_after(pos)
        return self.code.startswith(":", p) and not self.code.startswith((":=", "::"), p)

    def double_colon_after(self, pos: int) -> bool:
        return self.code.startswith("::", self.blanks_after(pos))

    # --- what stands before a run ----------------------------------------------------------------

    def attribute_open(self, close: int) -> int | None:
        """The `@[` whose list ends with the `]` at `close`, if that `]` closes an attribute list:
        the brackets are matched one by one, back from `close` (on the reversed text)."""
        at = self._opener(close, _BRACKET_RE, "]")
        return at - 1 if at is not None and self.code[at - 1 : at] == "@" else None

    def _opener(self, close: int, brackets: re.Pattern[str], closer: str) -> int | None:
        """Where the bracket matching the closing one at `close` opens (on the reversed text)."""
        depth = 1
        for m in brackets.finditer(self.rev, self.n - close):
            depth += 1 if m.group(0) == closer else -1
            if depth == 0:
                return self.n - 1 - m.start()
        return None

    def skip_modifiers(self, token: _Token) -> tuple[_Token, int | None]:
        """Back over doc comments, attribute lists and modifiers before a declared name: the token
        before them, and where the first of them starts (None if there was none)."""
        first: int | None = None
        while True:
            if token.kind == "doc" or (token.kind == "word" and token.text in MODIFIERS):
                first = token.start
            elif (
                token.kind == "sym"
                and token.text == "]"
                and (at := self.attribute_open(token.start)) is not None
            ):
                first = at
            else:
                return token, first
            token = self.previous(first)

    def priority_instance(self, close: _Token) -> bool:
        """Whether the `)` token closes `instance (priority := ...)`."""
        opener = self._opener(close.start, _PAREN_RE, ")")  # `(priority := (default + 1))`
        if opener is None or _PRIORITY_RE.match(self.code, opener) is None:
            return False
        before = self.previous(opener)
        return before.kind == "word" and before.text == "instance" and not self.after_deriving(before)

    def after_deriving(self, token: _Token) -> bool:
        before = self.previous(token.start)
        return before.kind == "word" and before.text == "deriving"

    def ends_term(self, token: _Token) -> bool:
        """Whether a layout item may start right after `token` (the term before it is complete)."""
        if token.kind == "word":
            return token.text not in CONTINUING_KEYWORDS
        return token.kind == "sym" and token.text in _TERM_END_SYMBOLS  # `xs[i]!`: `!` is a word


class _Reader(_TokenReader):
    """How Lean files the runs that matter: an inductive's constructors, layout blocks (fields and
    `where` declarations), and the reading of a run from what stands before it."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self._blocks: dict[int, _Block] = {}
        self._depth: dict[int, tuple[int, int]] = {}  # inductive start -> (position, depth there)
        self._headers: dict[int, int | None] = {}  # structure keyword -> its header's end

    # --- inductive bodies ------------------------------------------------------------------------

    def constructor_bar(self, bar: _Token) -> bool:
        """Whether the lone `|` starts a constructor: it is at bracket depth 0 of an inductive's
        body (which runs to the next command)."""
        inductive = self.last_before(("inductive",), bar.start)
        if inductive is None or self.next_command(inductive + len("inductive")) < bar.start:
            return False
        done, depth = self._depth.get(inductive, (inductive, 0))
        if done > bar.start:
            done, depth = inductive, 0
        depth += _depth_change(self.code, done, bar.start)
        self._depth[inductive] = (bar.start, depth)
        return depth <= 0

    # --- layout blocks ---------------------------------------------------------------------------

    def block_for(self, pos: int) -> _Block | None:
        """The layout block whose item may start at `pos`: after the last `where`, or the last
        structure's `:=`, before it."""
        where = self.last_before(("where",), pos)
        opener = where + len("where") if where is not None else None
        structure = self.last_before(("structure", "class"), pos)
        if structure is not None and (opener is None or structure > opener - len("where")):
            header_end = self.structure_header_end(structure)
            if header_end is not None and header_end <= pos:
                opener = header_end
        if opener is None:
            return None
        if opener not in self._blocks:
            self._blocks[opener] = self.block_after(opener)
        block = self._blocks[opener]
        return block if block is not None and block.first <= pos < block.end else None

    def structure_header_end(self, keyword: int) -> int | None:
        """Just after the `where` or `:=` ending the header of the structure or class whose
        keyword is at `keyword` (at bracket depth 0, before the next command), if any."""
        if keyword in self._headers:
            return self._headers[keyword]
        code = self.code
        start = keyword + len("class" if code.startswith("class", keyword) else "structure")
        found: int | None = None
        depth, done = 0, start
        # `class inductive` and `class abbrev` end here at once: their second word is a command's
        for m in _HEADER_END_RE.finditer(code, start, self.next_command(start)):
            depth += _depth_change(code, done, m.start())
            done = m.start()
            if depth <= 0:
                found = m.end()
                break
        self._headers[keyword] = found
        return found

    def block_after(self, opener: int) -> _Block:
        """The items after a `where` or a structure's `:=` ending at `opener`: the first item
        (after an optional `ctor ::`), its column, and where the block ends."""
        code = self.code
        first = self.blanks_after(opener)
        name_end = _CHUNK_AFTER_RE.match(code, first).end()  # type: ignore[union-attr]
        if self.double_colon_after(name_end):  # `mk ::`
            first = self.blanks_after(self.blanks_after(name_end) + 2)
        # (an inductive's `| ctor` lines are read as constructors before any field; a first
        # item that is a command ends the block where it starts: `next_command` below)
        column = first - (code.rfind("\n", 0, first) + 1)
        # a line left of the column (fewer blanks before its first token) ends the block
        drop = re.compile(rf"\n(?![ \t]{{{column}}})(?=[ \t]*+[^ \t\n])").search(code, first)
        end = min(drop.start() if drop is not None else self.n, self.next_command(first))
        return _Block(first, column, end)

    def ascription(self, opener: _Token, stop: int) -> bool:
        """Whether the group `( run : T )` opened at `opener` (the run ending at `stop`) is a type
        ascription that no binder reading can take: its type is short and on the line, and a
        relation or connective binding tighter than a dependent arrow stands right before the
        `(` or right after the `)`. A bracketed binder is followed by `→`, `×`, `×'`, another
        binder, `:`, `:=`, `,` or `=>` (`depArrow`, `bracketedBinder`; `src/Lean/Parser/Term.lean`),
        never by one of these; and after one of these Lean parses a term above precedence 25,
        where `depArrow` (`leading_parser:25`) cannot start."""
        if opener.text != "(":
            return False
        group = _ASCRIBED_TYPE_RE.match(self.code, stop)  # (a lone `:` follows `stop`: the caller)
        if group is None:
            return False
        return (
            group["relation"] is not None
            or _RELATION_BEFORE_RE.match(self.rev, self.n - opener.start) is not None
        )

    # --- the reading -----------------------------------------------------------------------------

    def plainly_used(self, start: int, end: int) -> int | None:
        """Where the run of the chunk `code[start:end]` ends, when the symbol right before it on
        its line shows at once that it declares nothing (most uses: `= true`, `| true =>` outside
        an inductive, `(true)`); None when the full reading is needed. Only a shortcut: every
        case it settles, `reading` settles the same way."""
        code = self.code
        m = _INDENT_BEFORE_RE.match(self.rev, self.n - start)
        before = start - (m.end() - m.start())  # type: ignore[union-attr]
        c = code[before - 1] if before else "\n"
        if c == "\n" or c in _LIVE_BEFORE or _CHUNK_CHAR_RE.match(c) is not None:
            return None
        if c in _OPENERS and self.lone_colon_after(end):  # `(true : T)`: the run is the chunk
            return end if self.ascription(_Token("sym", c, before - 1, before), end) else None
        stop = self.cut_at_items(start, start, self.run_end(end))[1]
        if c in _OPENERS:
            if not self.lone_colon_after(stop):
                return stop
            return stop if self.ascription(_Token("sym", c, before - 1, before), stop) else None
        if c == "|":
            bar = _Token("sym", "|", before - 1, before)
            plain = code[before - 2 : before - 1] in ("|", "<") or not self.constructor_bar(bar)
            return stop if plain else None
        if c == "=" and code.startswith(":=", before - 2):
            return None if self.double_colon_after(stop) else stop
        return stop

    def item_start(self, pos: int) -> bool:
        """Whether a layout block's item starts at `pos` (the first token of a line)."""
        block = self.block_for(pos)
        if block is None:
            return False
        return pos == block.first or (
            self.line_start(pos) == block.column and self.ends_term(self.previous(pos))
        )

    def cut_at_items(self, begin: int, start: int, stop: int) -> tuple[int, int]:
        """The run `code[begin:stop]` (holding the chunk at `start`) cut where a layout item
        starts on a later line: an item never continues the line before it."""
        for m in _LINE_BREAK_RE.finditer(self.code, begin, stop):
            line = m.end()
            if line >= stop or not self.item_start(line):
                continue
            if line <= start:
                begin = line
            else:
                return begin, self.blanks_before(line)
        return begin, stop

    def declaration(self, start: int, end: int, floor: int, find: Finder) -> tuple[Hit | None, int]:
        """Whether the run holding the chunk `code[start:end]` declares a protected name: the hit
        for its first such name, and where the run ends."""
        code = self.code
        begin, stop = self.cut_at_items(self.run_start(start, floor), start, self.run_end(end))
        reading = self.reading(begin, stop)
        if reading is None:
            return None, stop
        rank, shown, hint, first_only = reading
        for m in _IDENTIFIER_RE.finditer(code, begin, stop):
            first = m.start() == begin
            if first_only and not first:
                break
            name = m.group(0)
            if name in RUN_BREAKERS or (found := find(name)) is None:
                continue
            if first or rank == _BINDER_RANK:
                return (m.start(), rank, shown.format(name=name[:80]), found, hint), stop
            # a later name of a declaration's or an item's run: one of its simple binders
            return (m.start(), _BINDER_RANK, f"'{name[:80]}'", found, " (a binder)"), stop
        return None, stop

    def reading(self, begin: int, stop: int) -> tuple[int, str, str, bool] | None:
        """How the run `code[begin:stop]` is filed: (rank, what to show, hint, whether only its
        first name is declared), or None when it declares nothing."""
        before = self.previous(begin)
        context, first_modifier = self.skip_modifiers(before)
        if context.kind == "word" and context.text in DECLARING_KEYWORDS:
            return _KEYWORD_RANK, f"'{context.text} {{name}}'", "", False
        if context.kind == "word" and context.text == "instance" and not self.after_deriving(context):
            return _KEYWORD_RANK, "'instance {name}'", "", False
        if context.kind == "sym" and context.text == ")" and self.priority_instance(context):
            return _KEYWORD_RANK, "'instance {name}'", "", False
        if context.kind == "sym" and context.text == "|" and self.constructor_bar(context):
            return _CONSTRUCTOR_RANK, "'| {name}'", _CONSTRUCTOR_HINT, False
        item = first_modifier if first_modifier is not None else begin
        block = self.block_for(item)
        if block is not None and (
            item == block.first
            or (self.line_start(item) == block.column and self.ends_term(self.previous(item)))
            # a doc comment, an attribute list or `private` cannot go on a term: after a complete
            # term it starts the next item (`checkColGe`: every line of the block is at least at
            # its column, or the block has ended)
            or (first_modifier is not None and self.ends_term(self.previous(item)))
        ):
            return _FIELD_RANK, "'{name} ...'", " (a structure or class field)", False
        if before.kind == "sym" and before.text == ":=" and self.double_colon_after(stop):
            header = self.last_before(("structure", "class"), begin)
            if header is not None and self.structure_header_end(header) == before.end:
                return _FIELD_RANK, "':= {name} ::'", " (a structure constructor)", True
        if (before.kind == "word" and before.text in BINDER_KEYWORDS) or (
            before.kind == "sym" and before.text in BINDER_SYMBOLS
        ):
            return _BINDER_RANK, f"'{before.text} {{name}}'", " (a binder)", False
        if before.kind == "sym" and before.text in _OPENERS and self.lone_colon_after(stop):
            if self.ascription(before, stop):
                return None
            return _BINDER_RANK, "'{name} :'", _BINDER_HINT, False
        # simple binders after bracketed ones: `def f (x : Nat) true : Bool`
        if before.kind == "sym" and before.text in _CLOSERS and self.lone_colon_after(stop):
            return _BINDER_RANK, "'{name} :'", _BINDER_HINT, False
        return None


#: Where a name that may hold a protected name starts: `true`/`false` as an ASCII run of a name,
#: a class's name as its last dotted component (`Finder` decides exactly, on the whole chunk).
def candidates_re(literals: tuple[str, ...], classes: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(
        rf"(?<![A-Za-z0-9_])(?:{'|'.join(literals)})(?![A-Za-z0-9_])"
        rf"|(?<![A-Za-z0-9_'])(?:{'|'.join(classes)})(?![{ID_REST_CLASS}])"
    )


# Characters that, right before a candidate (blanks between), leave it open whether it is
# declared: a name character or `.` (the candidate may sit inside a longer name, or a run), and
# `_LIVE_BEFORE` and the openers (see `plainly_used`); `|` too when the file has an inductive.
_LIVE_CLASS = "".join(re.escape(c) for c in sorted(_LIVE_BEFORE | _OPENERS))
_LIVE_RE_CACHE: dict[tuple[str, bool], re.Pattern[str]] = {}


def _live_candidates_re(candidates: re.Pattern[str], bars: bool) -> re.Pattern[str]:
    """`candidates`, where the character before them (blanks skipped on their line) does not
    show at once that they are only used (C-level: most uses are never looked at in Python).
    Every candidate it leaves out `plainly_used` would settle as a use: after any other symbol,
    after `:=` with no `::` after the name, after `|` in a file without an inductive."""
    key = (candidates.pattern, bars)
    if key not in _LIVE_RE_CACHE:
        live = f"[{ID_REST_CLASS}.{_LIVE_CLASS}{'|' if bars else ''}]"
        ctor_ahead = r"(?<=:=)(?=[ \t]*+(?:[^ \t\n:]++[ \t\n]*+)*+::)"  # `:= name ::`
        _LIVE_RE_CACHE[key] = re.compile(
            rf"(?:(?<={live})|^|{ctor_ahead})[ \t]*+(?:{candidates.pattern})", re.MULTILINE
        )
    return _LIVE_RE_CACHE[key]


def first_declaration(code: str, find: Finder, candidates: re.Pattern[str]) -> Hit | None:
    """The first place `code` (a code view) declares a name that `find` protects, as Lean files
    it (see the module docstring), or None."""
    reader: _Reader | None = None
    live = _live_candidates_re(candidates, bars="inductive" in code)
    pos = floor = 0
    while (m := live.search(code, max(pos - 1, 0))) is not None:
        reader = reader or _Reader(code)
        word = candidates.search(code, m.start(), m.end())
        start, end = reader.chunk_around(word.start(), word.end())  # type: ignore[union-attr]
        pos = max(end, pos + 1)
        if find(code[start:end]) is None:
            continue
        if (stop := reader.plainly_used(start, end)) is None:
            hit, stop = reader.declaration(start, end, floor, find)
            if hit is not None:
                return hit
        pos = floor = max(pos, stop)
    return None
