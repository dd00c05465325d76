"""The text guard: a coarse, conservative filter that runs before Lean sees the submission.

Why a text guard at all: `lake build` executes whatever the submission asks for at build time
(`#eval`, `initialize`, macros, code-running attributes), and `Check.lean` imports the
submission, so its syntax extensions are live there too. Only the guard stops those, so it errs
towards rejecting: a false positive costs one rollout, a false negative can cost the grader.

How Lean reads the text, and so how the guard reads it (lean4 `src/Lean/Parser/Basic.lean`):

- Identifiers are maximal runs of identifier characters; `isIdRest` includes every ASCII letter,
  digit and `_`, so an ASCII run `[A-Za-z0-9_]+` that starts at a token boundary with a letter or
  `_` is never split by Lean. A keyword token wins only if it is at least as long as the
  identifier (`isToken`), so `sorry_x` is an identifier and `sorry` a keyword. The guard treats
  every other character (`.`, `'`, `!`, `?`, Greek letters, subscripts, ...) as a separator:
  that can only find *more* words than Lean does, never fewer.
- Numbers are lexed without needing a separator after them (`0xdeadbeefsorry` is the hex
  literal `0xdeadbeef` followed by the keyword `sorry`), so a run that starts with a digit is
  searched for banned words as substrings.
- `«…»` escapes any text into an identifier component (`«sorry»`, `«debug».skipKernelTC`).
  Models do not need it, so every `«` and `»` is rejected outright instead of being unescaped.
- Comments (`--`, nested `/- -/`) and strings are not exempt: words there count too (coarse on
  purpose), which also makes comment-parsing differences between the guard and Lean harmless
  everywhere except the header and attribute lists, where they are handled explicitly.

Rules (the first that fails gives the verdict, in this order):

1. Characters: no NUL or other control characters except newline and tab, no carriage return
   (the extractor turns CRLF into LF), no Unicode format characters (bidi overrides, zero-width
   characters, BOM), line/paragraph separators or lone surrogates, and no `«`/`»`.
2. Hash commands: `#` followed by a name is allowed only for `#check`, `#print` and `#reduce`
   (so `#eval`, `#eval!`, `#exit`, `#guard`, `#guard_msgs`... are all rejected).
3. Banned words (`BANNED_WORDS`), as whole words, case-sensitive, anywhere. Words in
   `BANNED_WORD_PARTS` are also banned, case-insensitively, as a part of a longer word, where
   parts are split at `_` and at camelCase humps: `native_decide`, `sorryAx`,
   `builtin_initialize`, `unsafeBaseIO`, `evalNativeDecide`, `declare_syntax_cat`. Words that
   merely contain a banned word without such a boundary pass (`initial_value`, `prefix_sum`,
   `alternative`, `axiomatic`).
4. Header: a `module` header is rejected; every `import` word in the file must read
   `import <allowed module>` with spaces only in between, must sit in the real header (Lean's
   header rules: only whitespace and comments before and between imports), and the header must
   import `LeanCheckedNetwork.Weights`. An import inside a comment therefore never counts, and
   `public import`, `meta import`, `import all` are rejected.
5. Attribute lists (`@[...]` and `attribute [...]`) may contain only the words in
   `ALLOWED_ATTRIBUTE_WORDS` and numbers, and no comment or string; `attribute` followed by a
   comment is rejected. This stops every code-running attribute (`init`, `command_elab`,
   `tactic`, `macro`, `delab`, `app_unexpander`, `csimp`, `export`, `extern`, parser
   attributes, ...) including ones nobody listed.
6. `set_option` may only name options in `ALLOWED_OPTIONS` (or under `ALLOWED_OPTION_PREFIXES`),
   e.g. `set_option maxRecDepth 100000 in`. Besides `debug.*` this keeps out
   `trace.profiler.output`, which writes a file at a path the submission chooses.
7. Leading-dot identifiers (`.inl h`, `.FS.writeFile`): a `.` followed by a name is allowed only
   as a projection right after a term (`h.1`, `(f x).symm`, `x |>.map f`) or as a pattern right
   after a single `|` (`| .inl h => ...`). Lean resolves `.x.y` in the namespace of the
   *expected type*, so under an `IO`-typed expected type (`timeit "" (.FS.writeFile p s)`)
   it reaches every `IO.*` function without writing `IO`. Patterns never run.
8. `(config := ...)` must be a structure instance `{ ... }`, and `DecideConfig` is a banned word:
   `decide (config := ⟨false, true, true, false⟩)` is `decide +native` without the word.

Why rules 3 and 7 matter beyond their words: tactic configuration values (`decide (kernel := e)`,
`simp (config := e)`) and the path of `include_str e` are *compiled and run* while the file
builds (lean4 `src/Lean/Elab/Tactic/Config.lean`: `Meta.evalExpr'`). Any code the submission
writes there runs; it is harmless only while it cannot reach `IO`. The guard therefore bans
every way in it knows: the word `IO`, leading dots (rule 7), `timeit`/`allocprof` (top-level
functions taking an `IO` action), `println` (`println!` expands to `IO.println`), `include_str`,
and the `unsafe*IO` escapes.

Defence-in-depth additions to the seed's word list and why:
`native` (`decide +native` with any spacing, `(config := { native := true })`), `debug` and
`skipKernelTC` (`set_option debug.skipKernelTC` however it is spelt), `prelude` (kernel
built-in names could be redefined), `sorryAx`, `builtin*`, `export` (alias planting),
`meta`/`Meta`/`Elab`/`Environment`/`addDecl`/`evalDecl`/`evalConst`/`compileDecl`
(metaprogramming and faked elaborator types for code-running attributes), `ofReduceNat`,
`reduceBool`, `reduceNat`, `trustCompiler`, `bv_decide` (compiler-trusting proofs), `dbg`/
`dbg_trace`/`dbgTrace` (evaluation side channels), `delab`, `app_unexpander`, `csimp`,
`simproc`, `dsimproc`, `binder_predicate`, `register_option`, `register_simp_attr`, `register_label_attr`
(commands that expand to banned ones), `bootstrap` (bootstrap options), `extern` as a part,
`declare_simp_like_tactic` (an Init command that expands to `syntax` + `macro_rules`, adding a
token that is live in Check.lean), `unif_hint` (expands to an attribute outside the allow-list),
`lcProof` (an axiom of Init proving any proposition), `include_str` (runs its argument as code
and reads a file at build time), `timeit`, `allocprof`, `println` (ways into `IO`, see below),
`DecideConfig` (rule 8).
Deliberately allowed: `tactic` (common in comments; its attribute is stopped by rule 5),
`maxHeartbeats`/`maxRecDepth` options, `local instance`, `attribute [simp]`, `partial_fixpoint`
(kernel-checked), `IO` only as a whole word (`ratio`, `BaseIO` as a type name pass).

Everything here is linear in the input: a few C-level regex scans, one pass over the distinct
words, and at most one scan per rule; a 5 MB input takes well under a second. No function here
raises on any `str`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

from lean_mod_add_proof.constants import ALLOWED_IMPORTS, REQUIRED_IMPORT


@dataclass(frozen=True)
class GuardVerdict:
    """The guard's decision. `word` is the offending word or character, `line` is 1-based."""

    passed: bool
    reason: str
    word: str | None = None
    line: int | None = None


#: Words rejected as whole words (case-sensitive), anywhere in the file. Entries starting with
#: `#` are enforced by the hash-command rule, which rejects every `#` command except
#: `ALLOWED_HASH_COMMANDS`. This exact tuple is shown to the model.
BANNED_WORDS: tuple[str, ...] = (
    # The seed's list (`decide +native` -> `native`, `set_option debug.*` -> `debug`).
    "sorry", "admit", "native_decide", "native", "ofReduceBool", "axiom", "opaque",
    "implemented_by", "extern", "unsafe", "partial", "debug", "macro", "macro_rules", "elab",
    "elab_rules", "syntax", "notation", "infix", "infixl", "infixr", "prefix", "postfix",
    "initialize", "#eval", "run_cmd", "run_tac", "run_elab", "run_meta", "IO", "init", "evalExpr",
    # Required bypass defences.
    "skipKernelTC", "prelude", "sorryAx", "builtin_initialize",
    # Defence in depth (see the module docstring).
    "#exit", "export", "builtin", "builtin_init", "command_elab", "term_elab", "delab",
    "app_unexpander", "csimp", "simproc", "dsimproc", "binder_predicate", "declare_syntax_cat",
    "register_option", "register_simp_attr", "register_label_attr", "meta", "Meta", "Elab",
    "Environment", "addDecl", "evalDecl", "evalConst", "compileDecl", "ofReduceNat",
    "reduceBool", "reduceNat", "trustCompiler", "bv_decide", "unsafeCast", "unsafeBaseIO",
    "unsafeIO", "unsafeEIO", "dbg", "dbg_trace", "dbgTrace", "bootstrap",
    # Red-team additions: code-running and IO entry points without a banned word.
    "declare_simp_like_tactic", "unif_hint", "lcProof", "include_str", "timeit", "allocprof",
    "println", "DecideConfig",
)  # fmt: skip

#: Words (lowercase) also banned case-insensitively as an `_`- or camelCase-separated part of a
#: longer word. Each is also a whole word in `BANNED_WORDS`.
BANNED_WORD_PARTS: tuple[str, ...] = (
    "sorry", "admit", "native", "unsafe", "initialize", "builtin", "macro", "elab", "syntax",
    "debug", "extern", "dbg", "delab", "simproc",
)  # fmt: skip

#: The only `#` commands allowed (all read-only).
ALLOWED_HASH_COMMANDS: tuple[str, ...] = ("#check", "#print", "#reduce")

#: The only words allowed inside `@[...]` and `attribute [...]` (numbers are allowed too).
ALLOWED_ATTRIBUTE_WORDS: tuple[str, ...] = (
    "simp", "reducible", "irreducible", "semireducible", "instance", "local", "scoped", "inline",
    "noinline", "specialize", "default_instance", "match_pattern", "ext", "congr", "refl",
    "symm", "induction_eliminator", "cases_eliminator", "high", "mid", "low", "default",
    "priority",
)  # fmt: skip

#: Options `set_option` may set.
ALLOWED_OPTIONS: tuple[str, ...] = (
    "maxHeartbeats", "maxRecDepth", "synthInstance.maxHeartbeats", "synthInstance.maxSize",
    "autoImplicit", "relaxedAutoImplicit", "exponentiation.threshold", "diagnostics",
    "diagnostics.threshold",
)  # fmt: skip
#: Option families `set_option` may set (printing and linters only).
ALLOWED_OPTION_PREFIXES: tuple[str, ...] = ("pp.", "linter.")

#: The guard's rules in words, for the prompt (beside `BANNED_WORDS`).
GUARD_RULES: tuple[str, ...] = (
    "The file starts with its imports (only comments and blank lines before them); the word "
    "`import` may appear nowhere else, not even in a comment.",
    "Forbidden words are matched as whole words, case-sensitively, in code, comments and strings "
    f"alike; {', '.join(f'`{w}`' for w in BANNED_WORD_PARTS)} are also forbidden as a part of a "
    "longer name split at `_` or a capital letter (`native_decide`, `sorryAx`, `unsafeCast`).",
    f"The only `#` commands allowed are {', '.join(f'`{c}`' for c in ALLOWED_HASH_COMMANDS)}.",
    "Attributes (`@[...]`, `attribute [...]`) may only use "
    f"{', '.join(f'`{w}`' for w in ALLOWED_ATTRIBUTE_WORDS)} and numbers.",
    f"`set_option` may only set {', '.join(f'`{o}`' for o in ALLOWED_OPTIONS)} and options under "
    f"{', '.join(f'`{p}`' for p in ALLOWED_OPTION_PREFIXES)}.",
    "No `«»` identifier escapes, no `module` header, no control, zero-width or bidirectional characters.",
    "No leading-dot names such as `.inl h` or `.refl` (write `Or.inl h`, `Eq.refl _`); a dot may "
    "follow a term (`h.1`, `(f x).symm`, `l |>.map f`) or start a pattern after `|` (`| .inl h =>`).",
    "`(config := ...)` must be a structure instance `{ ... }` (or use `+option`/`(option := value)`).",
)

_WORD_CHARS = "A-Za-z0-9_"
_RUN_RE = re.compile(rf"[{_WORD_CHARS}]+")
_DIGIT_LINE_RE = re.compile(r"^[0-9].*$", re.MULTILINE)
_HUMP_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_HASH_RE = re.compile(rf"#([A-Za-z_][{_WORD_CHARS}]*)")
_WORD_SET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_IMPORT_NAME_RE = re.compile(r"[ ]+([^\s]*)")
_WS_RE = re.compile(r"[ \n\t]*")
_MODULE_RE = re.compile(rf"module(?![{_WORD_CHARS}])")
_BRACKET_RE = re.compile(r"[\[\]]")
_OPTION_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_'!?]*(?:\.[A-Za-z_][A-Za-z0-9_'!?]*)*")

_WHOLE = frozenset(w for w in BANNED_WORDS if not w.startswith("#"))
_PARTS = frozenset(BANNED_WORD_PARTS)
_PART_ALTERNATION = "|".join(sorted(BANNED_WORD_PARTS, key=len, reverse=True))
_PART_SUBSTR_RE = re.compile(_PART_ALTERNATION)
_WHOLE_SUBSTR_RE = re.compile("|".join(re.escape(w) for w in sorted(_WHOLE, key=len, reverse=True)))
_ATTR_OK = frozenset(ALLOWED_ATTRIBUTE_WORDS)
_HASH_OK = frozenset(c[1:] for c in ALLOWED_HASH_COMMANDS)

# Always-rejected characters; other non-ASCII characters are judged by Unicode category.
_BAD_ASCII = frozenset(chr(c) for c in [*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F])
_BAD_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_ESCAPES = frozenset("«»")


def _ok() -> GuardVerdict:
    return GuardVerdict(True, "ok")


def _fail(reason: str, word: str | None, line: int | None) -> GuardVerdict:
    return GuardVerdict(False, reason, word, line)


def _word_positions(text: str, word: str) -> Iterator[int]:
    """Start of every whole-word occurrence of `word` (str.find is much faster than a regex
    with a lookbehind)."""
    n, k = len(text), len(word)
    pos = text.find(word)
    while pos >= 0:
        end = pos + k
        if (pos == 0 or text[pos - 1] not in _WORD_SET) and (end >= n or text[end] not in _WORD_SET):
            yield pos
        pos = text.find(word, end)


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _char_name(ch: str) -> str:
    if unicodedata.category(ch) == "Cs":
        return "(lone surrogate)"
    return unicodedata.name(ch, "(unnamed)")


def _check_chars(text: str) -> GuardVerdict | None:
    bad: set[str] = set()
    for ch in set(text):
        if ch in _BAD_ASCII or ch in _ESCAPES or ch == "\r":
            bad.add(ch)
        elif ord(ch) > 0x7F and unicodedata.category(ch) in _BAD_CATEGORIES:
            bad.add(ch)
    if not bad:
        return None
    pos = min(text.find(ch) for ch in bad)
    ch = text[pos]
    line = _line_of(text, pos)
    if ch in _ESCAPES:
        return _fail(f"identifier escape '{ch}' on line {line} is not allowed", ch, line)
    if ch == "\x00":
        return _fail(f"NUL character on line {line}", ch, line)
    if ch == "\r":
        return _fail(f"carriage return on line {line} (use LF line endings)", ch, line)
    return _fail(f"forbidden character U+{ord(ch):04X} {_char_name(ch)} on line {line}", ch, line)


class _HeaderTooComplex(Exception):
    pass


#: Most imports and comment delimiters the header scan reads before giving up (real files have a
#: handful); keeps pathological nesting from costing seconds.
_MAX_HEADER_COMMENT_TOKENS = 10_000


def _skip_ws_comments(text: str, pos: int) -> int | None:
    """Skip whitespace and comments the way Lean's `whitespace` does (block comments nest);
    None on an unterminated block comment. `/--` and `/-!` are doc-comment tokens, not
    whitespace, so they end the skip."""
    n, budget = len(text), _MAX_HEADER_COMMENT_TOKENS
    while True:
        pos = _WS_RE.match(text, pos).end()  # type: ignore[union-attr]
        budget -= 1
        if budget < 0:
            raise _HeaderTooComplex
        if text.startswith("--", pos):
            end = text.find("\n", pos)
            pos = n if end < 0 else end + 1
        elif text.startswith("/-", pos) and not text.startswith(("/--", "/-!"), pos):
            depth, pos = 1, pos + 2
            close, opening = text.find("-/", pos), text.find("/-", pos)
            while depth:
                budget -= 1
                if budget < 0:
                    raise _HeaderTooComplex
                if close < 0:
                    return None
                if 0 <= opening < close:
                    depth, pos = depth + 1, opening + 2
                else:
                    depth, pos = depth - 1, close + 2
                # Re-search only what was consumed, so nested comments stay linear.
                if close < pos:
                    close = text.find("-/", pos)
                if 0 <= opening < pos:
                    opening = text.find("/-", pos)
        else:
            return pos


def _header_imports(text: str) -> tuple[list[int], int | None]:
    """Positions of the `import` keywords of the real header, and the position of the first
    token after it (None if a comment in the header never ends)."""
    positions: list[int] = []
    pos = _skip_ws_comments(text, 0)
    while pos is not None:
        if not (text.startswith("import", pos) and (pos + 6 >= len(text) or text[pos + 6] not in _WORD_SET)):
            break
        positions.append(pos)
        name = _IMPORT_NAME_RE.match(text, pos + 6)
        if not name:
            break
        pos = _skip_ws_comments(text, name.end())
    return positions, pos


def _check_header(text: str) -> GuardVerdict | None:
    try:
        return _check_header_inner(text)
    except _HeaderTooComplex:
        limit = _MAX_HEADER_COMMENT_TOKENS
        return _fail(f"the file header is too long (over {limit} imports and comments)", "import", None)


def _check_header_inner(text: str) -> GuardVerdict | None:
    allowed = ", ".join(ALLOWED_IMPORTS)
    for at in _word_positions(text, "import"):
        name = _IMPORT_NAME_RE.match(text, at + 6)
        module = name.group(1) if name else ""
        if module not in ALLOWED_IMPORTS:
            line = _line_of(text, at)
            shown = module[:80] if module else "<nothing on this line>"
            return _fail(
                f"import '{shown}' on line {line} is not allowed (allowed: {allowed})", "import", line
            )
    first = _skip_ws_comments(text, 0)
    if first is not None and _MODULE_RE.match(text, first):
        line = _line_of(text, first)
        return _fail(f"a 'module' header (line {line}) is not allowed", "module", line)
    header, _end = _header_imports(text)
    modules = {_IMPORT_NAME_RE.match(text, p + 6).group(1) for p in header}  # type: ignore[union-attr]
    if REQUIRED_IMPORT not in modules:
        return _fail(f"missing required 'import {REQUIRED_IMPORT}' in the file header", "import", None)
    in_header = set(header)
    for at in _word_positions(text, "import"):
        if at not in in_header:
            line = _line_of(text, at)
            return _fail(
                f"'import' on line {line} is outside the file header (imports must come first; "
                "the word may not appear anywhere else)",
                "import",
                line,
            )
    return None


def _first_run(text: str, wanted: dict[str, str]) -> tuple[int, str, str]:
    """The first run of `text` that is a key of `wanted` (scan stops there)."""
    for m in _RUN_RE.finditer(text):
        if m.group(0) in wanted:
            return m.start(), wanted[m.group(0)], m.group(0)
    run, word = next(iter(wanted.items()))  # unreachable: every key is a run of `text`
    return 0, word, run


def _check_hash_commands(text: str) -> GuardVerdict | None:
    for m in _HASH_RE.finditer(text):
        if m.group(1) not in _HASH_OK:
            word = "#" + m.group(1)
            line = _line_of(text, m.start())
            allowed = ", ".join(ALLOWED_HASH_COMMANDS)
            return _fail(f"forbidden command '{word[:80]}' on line {line} (allowed: {allowed})", word, line)
    return None


def _banned_part(run: str) -> str | None:
    """The banned part of `run` when split at `_` and camelCase humps, if any."""
    for piece in run.split("_"):
        for hump in _HUMP_RE.findall(piece):
            low = hump.lower()
            if low in _PARTS:
                return low
    return None


def _check_words(text: str) -> GuardVerdict | None:
    runs = set(_RUN_RE.findall(text))
    wanted: dict[str, str] = {word: word for word in runs & _WHOLE}  # run -> banned word
    joined = "\n".join(runs)
    # Runs that may hold a part word at a hump boundary; each distinct run is examined once.
    lowered = joined.lower()
    pos = 0
    while (m := _PART_SUBSTR_RE.search(lowered, pos)) is not None:
        # A hump never starts at a lowercase letter right after a lowercase letter, so
        # `alternative` needs no closer look for `native`.
        i = m.start()
        if joined[i].islower() and i > 0 and joined[i - 1].islower():
            pos = i + 1
            continue
        start = joined.rfind("\n", 0, i) + 1
        end = joined.find("\n", m.end())
        end = len(joined) if end < 0 else end
        run = joined[start:end]
        if not run[0].isdigit() and (part := _banned_part(run)) is not None:
            wanted.setdefault(run, part)
        pos = end + 1
    # Runs starting with a digit: Lean may end a number literal inside them (`0xfsorry`), so
    # any banned word anywhere in them counts.
    digit_runs = "\n".join(_DIGIT_LINE_RE.findall(joined))
    for pattern, fold in ((_WHOLE_SUBSTR_RE, False), (_PART_SUBSTR_RE, True)):
        haystack = digit_runs.lower() if fold else digit_runs
        pos = 0
        while (m := pattern.search(haystack, pos)) is not None:
            start = digit_runs.rfind("\n", 0, m.start()) + 1
            end = digit_runs.find("\n", m.end())
            end = len(digit_runs) if end < 0 else end
            wanted.setdefault(digit_runs[start:end], m.group(0))
            pos = end + 1
    if not wanted:
        return None
    pos, word, run = _first_run(text, wanted)
    line = _line_of(text, pos)
    where = "" if run == word else f" (in '{run[:80]}')"
    return _fail(f"forbidden word '{word}'{where} on line {line}", word, line)


def _attribute_keywords(text: str) -> Iterator[tuple[int, int | None]]:
    """(start, position of `[`) for every `attribute [`; None when a comment follows
    `attribute` (rejected: it could hide the list from a simple reader)."""
    for at in _word_positions(text, "attribute"):
        i = _WS_RE.match(text, at + 9).end()  # type: ignore[union-attr]
        if text.startswith(("--", "/-"), i):
            yield at, None
        elif text.startswith("[", i):
            yield at, i


def _check_attributes(text: str) -> GuardVerdict | None:
    keywords = _attribute_keywords(text)
    keyword = next(keywords, None)
    pos = 0
    while True:
        # The next list at or after `pos`: lists nested in a checked one were checked with it.
        while keyword is not None and keyword[0] < pos:
            keyword = next(keywords, None)
        at = text.find("@[", pos)
        if keyword is not None and (at < 0 or keyword[0] < at):
            start, bracket = keyword
        elif at >= 0:
            start, bracket = at, at + 1
        else:
            return None
        if bracket is None:
            line = _line_of(text, start)
            return _fail(f"a comment after 'attribute' on line {line} is not allowed", "attribute", line)
        depth, close = 0, -1
        for m in _BRACKET_RE.finditer(text, bracket):
            depth += 1 if m.group(0) == "[" else -1
            if depth == 0:
                close = m.start()
                break
        if close < 0:
            line = _line_of(text, start)
            return _fail(f"unterminated attribute list on line {line}", "@[", line)
        body = text[bracket + 1 : close]
        if any(s in body for s in ('"', "'", "--", "/-")):
            line = _line_of(text, start)
            return _fail(f"comment or string inside the attribute list on line {line}", "@[", line)
        for word in _RUN_RE.findall(body):
            if word not in _ATTR_OK and not word.isdigit():
                line = _line_of(text, start)
                return _fail(
                    f"attribute word '{word[:80]}' on line {line} is not allowed "
                    f"(allowed: {', '.join(ALLOWED_ATTRIBUTE_WORDS)} and numbers)",
                    word,
                    line,
                )
        pos = close + 1


def _check_options(text: str) -> GuardVerdict | None:
    for at in _word_positions(text, "set_option"):
        i = _WS_RE.match(text, at + 10).end()  # type: ignore[union-attr]
        name = _OPTION_NAME_RE.match(text, i)
        after = name.end() if name else i
        if name is None or (after < len(text) and text[after] not in " \n\t"):
            line = _line_of(text, at)
            return _fail(f"cannot read the option name after 'set_option' on line {line}", "set_option", line)
        option = name.group(0)
        if option not in ALLOWED_OPTIONS and not option.startswith(ALLOWED_OPTION_PREFIXES):
            line = _line_of(text, at)
            return _fail(f"option '{option[:80]}' on line {line} is not allowed", option, line)
    return None


#: Characters after which a `.` is a projection (a term ends there), besides identifier characters.
_TERM_END = frozenset(')]}"⟩·')
#: Greek letters Lean does not allow in identifiers (they are tokens: `λ`, `Π`, `Σ`).
_NOT_ID_LETTERS = frozenset("λΠΣ")
_DOT_NAME_RE = re.compile(r"\.(?=[A-Za-z_]|[^\x00-\x7f])")


def _ends_term(text: str, i: int) -> bool:
    """Whether a term (identifier, number, literal, bracket) ends right before position `i`."""
    j = i
    while j > 0 and text[j - 1] in "'!?":
        j -= 1
    if j < i and text[i - 1] == "'" and j > 0:
        return True  # `x'` or a char literal `'a'`
    if j == 0:
        return False
    ch = text[j - 1]
    if j < i:  # `!`/`?` end an identifier only when one precedes them (`foo!`), not `!.x`
        return ch in _WORD_SET or (ord(ch) > 0x7F and ch.isalnum() and ch not in _NOT_ID_LETTERS)
    if ch in _WORD_SET or ch in _TERM_END:
        return True
    return ord(ch) > 0x7F and ch.isalnum() and ch not in _NOT_ID_LETTERS


def _check_leading_dots(text: str) -> GuardVerdict | None:
    for m in _DOT_NAME_RE.finditer(text):
        i = m.start()
        nxt = text[i + 1]
        if ord(nxt) > 0x7F and not (nxt.isalpha() or unicodedata.category(nxt).startswith("S")):
            continue  # `..⟩` and the like: no name follows
        if _ends_term(text, i) or text.startswith("|>", i - 2):
            continue
        j = i
        while j > 0 and text[j - 1] in " \t":
            j -= 1
        if j > 0 and text[j - 1] == "|" and (j < 2 or text[j - 2] not in "|<"):
            continue  # a pattern: `| .inl h =>`
        line = _line_of(text, i)
        name = _RUN_RE.match(text, i + 1)
        word = "." + (name.group(0) if name else nxt)
        return _fail(
            f"leading-dot name '{word[:80]}' on line {line} is not allowed (write the full name, "
            "e.g. `Or.inl` for `.inl`)",
            word,
            line,
        )
    return None


def _check_config(text: str) -> GuardVerdict | None:
    for at in _word_positions(text, "config"):
        i = _WS_RE.match(text, at + 6).end()  # type: ignore[union-attr]
        if text.startswith(("--", "/-"), i):
            bad = True
        elif text.startswith(":=", i):
            k = _WS_RE.match(text, i + 2).end()  # type: ignore[union-attr]
            bad = not text.startswith("{", k)
        else:
            bad = False
        if bad:
            line = _line_of(text, at)
            return _fail(
                f"'(config := ...)' on line {line} must be a structure instance '{{ ... }}'", "config", line
            )
    return None


def check_guard(text: str) -> GuardVerdict:
    """Run every rule of the module docstring on `text`; the first failure is the verdict."""
    try:
        for rule in (_check_chars, _check_hash_commands, _check_words, _check_header,
                     _check_attributes, _check_options, _check_leading_dots,
                     _check_config):  # fmt: skip
            verdict = rule(text)
            if verdict is not None:
                return verdict
    except Exception as exc:  # never expected; a guard bug must reject, not crash the grader
        return _fail(f"guard error: {type(exc).__name__}", None, None)
    return _ok()
