"""The project's rules of the guard (everything but the seed's words and the lexing): what each
allows, in lists pinned by tests/test_allowlists.py, and the rules themselves. `guard.py`'s
docstring says why each rule is there; docs/trust-model.md says why each list is what it is.

Every rule here reads the code view (`lexer.lex`: comments and the inside of literals blanked,
positions kept) except the character rule, which reads the whole text. Rules 10 and 11 find
declared names with `guard_names.py`, over Lean's tokens.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator

from lean_mod_add_proof.grading.guard_names import (
    DECLARING_KEYWORDS,
    Hit,
    candidates_re,
    first_declaration,
)
from lean_mod_add_proof.grading.guard_verdict import GuardVerdict, fail, line_of
from lean_mod_add_proof.grading.guard_words import BANNED_WORD_PARTS, PART_EXEMPT_NAMES
from lean_mod_add_proof.grading.lean_names import ALLOWED_IMPORTS, REQUIRED_IMPORT
from lean_mod_add_proof.grading.lexer import IDENTIFIER

__all__ = ["DECLARING_KEYWORDS"]

#: The only `#` commands allowed (all read-only: `#synth` elaborates a class application and
#: logs the instance found, inside `withoutModifyingEnv`; lean4 `src/Lean/Elab/BuiltinCommand.lean`
#: `elabSynth`).
ALLOWED_HASH_COMMANDS: tuple[str, ...] = ("#check", "#print", "#reduce", "#synth")

#: The only words allowed inside `@[...]` and `attribute [...]` (numbers are allowed too).
ALLOWED_ATTRIBUTE_WORDS: tuple[str, ...] = (
    "simp", "reducible", "irreducible", "semireducible", "local", "scoped", "inline",
    "noinline", "specialize", "match_pattern", "ext", "congr", "refl",
    "symm", "induction_eliminator", "cases_eliminator", "high", "mid", "low",
    "default", "priority", "elab_as_elim",
)  # fmt: skip

#: An attribute instance starting with `norm_cast` may use these words and a number: the label
#: `elim`, `move` or `squash` and a priority (lean4 `src/Init/Tactics.lean`,
#: `syntax (name := norm_cast) "norm_cast" (ppSpace normCastLabel)? (ppSpace num)? : attr`). Its
#: handler files the lemma into `norm_cast`'s simp sets with Lean's own code: declarative.
NORM_CAST_ATTRIBUTE_WORDS: tuple[str, ...] = ("norm_cast", "elim", "move", "squash", "local", "scoped")

#: `attribute [local instance] NAME` is allowed for these names only: each is a `Decidable`
#: instance of core that `open Classical` already makes an instance (it is `scoped instance` in
#: namespace `Classical`, lean4 `src/Init/Classical.lean`), of a class rule 11 allows.
CLASSICAL_LOCAL_INSTANCES: tuple[str, ...] = ("Classical.propDecidable",)

#: An attribute instance starting with `grind` (also `grind!`, `grind?`, `grind!?`) may use these
#: words, numbers and the symbol modifiers `=`, `=_`, `_=_`, `←`, `→`, `⇐`, `⇒`, `<-`, `->`, `.`, `·`
#: (lean4 `src/Init/Grind/Attr.lean`, `grindMod`).
GRIND_ATTRIBUTE_WORDS: tuple[str, ...] = (
    "grind", "gen", "usr", "cases", "eager", "intro", "ext", "inj", "funCC", "norm", "unfold",
    "symbol", "high", "mid", "low", "default", "local", "scoped",
)  # fmt: skip

#: Options `set_option` may set.
ALLOWED_OPTIONS: tuple[str, ...] = (
    "maxHeartbeats", "maxRecDepth", "synthInstance.maxHeartbeats", "synthInstance.maxSize",
    "autoImplicit", "relaxedAutoImplicit", "exponentiation.threshold", "diagnostics",
    "diagnostics.threshold", "profiler", "profiler.threshold", "tactic.hygienic",
)  # fmt: skip
#: Option families `set_option` may set (printing and linters only).
ALLOWED_OPTION_PREFIXES: tuple[str, ...] = ("pp.", "linter.")

#: Names whose `(name := value)` takes a tactic, not a value (`simp (disch := omega)`).
TACTIC_VALUED_NAMES: tuple[str, ...] = ("disch", "discharger")

#: The identifiers a literal configuration value (rule 9) is written with, which Lean resolves in
#: the file's scope: no declaration may hold one as a name component (rule 10).
LITERAL_NAMES: tuple[str, ...] = ("true", "false")


#: The only classes a file may declare instances of (rule 11). A tactic option's value is a
#: `Bool`, a number or a constructor, elaborated through `OfNat` and coercions (`CoeT`, ...), never
#: through these; instances are filed under the class their type reduces to, so the class must be
#: written as exactly one of these names, and no declaration may take one as its name (which would
#: shadow it).
INSTANCE_CLASSES: tuple[str, ...] = (
    "Decidable", "DecidableEq", "DecidablePred", "DecidableRel", "Inhabited", "Nonempty",
)  # fmt: skip

#: The guard's rules in words, for the prompt (beside the two word lists), each with one short
#: example that passes and one that fails.
GUARD_RULES: tuple[str, ...] = (
    "The file is at most 1 MiB and starts with its imports (only comments and blank lines before "
    "them); `import` may not appear anywhere else in the code (a comment may say it). Passes: "
    "`-- we import only the weights` after the imports. Fails: `import LeanCheckedNetwork.Network` "
    "after a `def`.",
    "Forbidden words count as whole names or dot-separated parts of names (`x.native`); a longer "
    "name that merely contains one passes (`native_ok`). The first list is forbidden everywhere, "
    "comments and strings included; the second only in code. "
    f"{', '.join(f'`{w}`' for w in BANNED_WORD_PARTS)} are also forbidden in code inside a longer "
    "name split at `_` or a capital letter (`simproc_decl`, `ptrAddrUnsafe`), the attribute "
    f"{', '.join(f'`{n}`' for n in PART_EXEMPT_NAMES)} excepted. Passes: "
    "`-- meta-reasoning: export the lemma`. Fails: `-- no sorry needed`, `def e := Environment`.",
    f"The only `#` commands allowed are {', '.join(f'`{c}`' for c in ALLOWED_HASH_COMMANDS)}. "
    "Passes: `#check Nat.add_comm`, `-- #pairs = 49`. Fails: `#exit`.",
    "Attributes (`@[...]`, `attribute [...]`) may only use "
    f"{', '.join(f'`{w}`' for w in ALLOWED_ATTRIBUTE_WORDS)} and numbers, or `grind` with its "
    "modifiers (`@[grind =]`, `@[grind →]`, `@[grind cases]`, ...), or `norm_cast` with `elim`, "
    "`move` or `squash`; the one instance attribute allowed is "
    "`attribute [local instance] Classical.propDecidable` (what `open Classical` does). Passes: "
    "`@[simp, elab_as_elim] theorem ...`, `@[norm_cast] theorem ...`. Fails: `@[instance] def ...`.",
    f"`set_option` may only set {', '.join(f'`{o}`' for o in ALLOWED_OPTIONS)} and options under "
    f"{', '.join(f'`{p}`' for p in ALLOWED_OPTION_PREFIXES)}. Passes: `set_option maxRecDepth 4000 in`. "
    "Fails: `set_option trace.profiler true`.",
    "Tactic options and named arguments take literal values only: `+opt`, `-opt`, "
    "`(opt := true)`, `(opt := false)`, `(opt := 100)` or `(config := { opt := true, n := 5 })`; "
    "any other `(name := value)` is rejected (`(disch := tactic)` is allowed), named arguments of "
    "terms included: pass such an argument by position (`@f _ a` for `f (x := a)`). Passes: "
    "`decide (kernel := true)`. Fails: `decide (kernel := myFlag)`, `Nat.le_of_lt (h := h)`.",
    "No name may be directly followed by `%` (`type_of%`-style elaborators are forbidden) and no "
    "compiler-internal `lc…` names (`lcProof`, `lcCast`). Passes: `(a + b) % 7`. Fails: `b%7`.",
    "Nothing may be named `true` or `false`, nor like a class below: no declaration (`instance "
    "NAME` included), constructor, structure field or constructor, or binder of that name (a type "
    "ascription `(true : Bool)` reads like a binder unless `=`, `≠`, `==`, `!=`, `∧`, `∨`, `&&` "
    "or `||` stands right before or after it, or `↔` right after it); using them is fine. Passes: "
    "`theorem rows : ∀ a, a < 7 → rowCheck a = true → ∀ b : Nat, b < 7 → f a b = (a + b) % 7`, "
    "`| true :: bs => ...`, `(h : b = true)`, `c a = (true : Bool)`. Fails: "
    "`def true : Bool := false`, `structure S where true x : Bool`, `f (true : Bool)`, "
    "`instance true : Inhabited Nat := ⟨0⟩`.",
    "`instance` and `deriving instance` may only declare instances of "
    f"{', '.join(f'`{c}`' for c in INSTANCE_CLASSES)}: the class is the head of the instance's "
    "type after its binders; no `@[instance]` (tactic options are resolved in the file's scope). "
    "Passes: `instance : ∀ n, Decidable (P n) := ...`, `deriving instance DecidableEq for T`. "
    "Fails: `instance : OfNat Nat 5 := ⟨0⟩`, `deriving instance Repr for T` (write `deriving Repr` "
    "on `T`'s own declaration).",
    "Comments, strings and character literals must be closed, and a comment may not start right "
    "after an operator character; Lean's tokens holding an apostrophe are read whole. Passes: "
    "`a < b -- note`, `A ×' B`, `Σ' n : Nat, n < 5`, `xs[i]'h`. Fails: `a <--b`, an unclosed `/-`.",
    "No `«»` identifier escapes in code, no `module` header, no control, zero-width or "
    "bidirectional characters anywhere. Passes: `-- «quoted»`. Fails: `def «x» := 1`.",
)


_WORD_CHARS = "A-Za-z0-9_"
_WORD_SET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_RUN_RE = re.compile(rf"[{_WORD_CHARS}]+")
_HASH_RE = re.compile(rf"#([A-Za-z_][{_WORD_CHARS}]*)")
_IMPORT_NAME_RE = re.compile(r"[ \t\n]+([^\s]*)")  # a comment (blanked) may sit in between
_WS_RE = re.compile(r"[ \n\t]*")
_MODULE_RE = re.compile(rf"module(?![{_WORD_CHARS}])")
_BRACKET_RE = re.compile(r"[\[\]]")
_OPTION_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_'!?]*(?:\.[A-Za-z_][A-Za-z0-9_'!?]*)*")
_ATTR_OK = frozenset(ALLOWED_ATTRIBUTE_WORDS)
_GRIND_OK = frozenset(GRIND_ATTRIBUTE_WORDS)
_NORM_CAST_OK = frozenset(NORM_CAST_ATTRIBUTE_WORDS)
_HASH_OK = frozenset(c[1:] for c in ALLOWED_HASH_COMMANDS)

# Always-rejected characters; other non-ASCII characters are judged by Unicode category.
_BAD_ASCII = frozenset(chr(c) for c in [*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F])
_BAD_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})

# Rule 5. `%` right after an identifier (a letter, `_`, `'`, `!`, `?` or subscript, then any
# digits): a number alone before `%` (`100%`) does not match. `lc` + capital at the start of a
# name component.
_PERCENT_RE = re.compile(r"(?:(?<=[^\W\d])|(?<=['!?]))\d*+%")
_LC_RE = re.compile(r"(?<![A-Za-z_])lc[A-Z]")

# Rule 9 (on the code view, where comments are blanks). `(`, whitespace, a name, whitespace, `:=`. A name
# is a run of anything but whitespace, ASCII punctuation other than `_'!?.`, and unicode brackets:
# wider than Lean's identifiers, so it can only flag more. Possessive quantifiers keep every
# match linear (nothing is retried).
_WS = r"[ \t\n]*+"
_NAME = r"[^\x00-\x20\x7f\"#$%&()*+,\-/:;<=>@\[\\\]^`{|}~⟨⟩⦃⦄«»]++"
_NAMED_HEAD_RE = re.compile(rf"\({_WS}(?P<name>{_NAME}){_WS}:=")
_LITERAL = r"(?:true|false|[0-9]++)(?![A-Za-z0-9_'!?.])"
_FIELD = r"[A-Za-z_][A-Za-z0-9_]*+(?:\.[A-Za-z_][A-Za-z0-9_]*+)*+"
_LITERAL_VALUE_RE = re.compile(rf"{_WS}{_LITERAL}{_WS}\)")
_STRUCT_VALUE_RE = re.compile(
    rf"{_WS}\{{{_WS}(?:{_FIELD}{_WS}:={_WS}{_LITERAL}{_WS}(?:,{_WS})?+)*+\}}{_WS}\)"
)
_PRIORITY_VALUE_RE = re.compile(rf"{_WS}(?:high|mid|low|default|[0-9]++)(?![A-Za-z0-9_'!?.]){_WS}\)")
_TACTIC_VALUED = frozenset(TACTIC_VALUED_NAMES)
_LITERALS = frozenset(LITERAL_NAMES)

# Rule 7: where an attribute list may start (`attribute` is checked for a following `[`).
_ATTR_START_RE = re.compile(rf"@\[|(?<![{_WORD_CHARS}])attribute(?![{_WORD_CHARS}])")
_LINE_REST_RE = re.compile(r"[^\n]*")


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


def _is_name_char(ch: str) -> bool:
    """Whether Lean may read `ch` as part of an identifier (a superset of Lean's `isIdRest`)."""
    return ch in _WORD_SET or ch in "'!?" or (ord(ch) > 0x7F and ch.isalnum())


# --- rule 2: characters --------------------------------------------------------------------------


def _char_name(ch: str) -> str:
    if unicodedata.category(ch) == "Cs":
        return "(lone surrogate)"
    return unicodedata.name(ch, "(unnamed)")


def check_chars(text: str) -> GuardVerdict | None:
    bad = {
        ch
        for ch in set(text)
        if ch in _BAD_ASCII or (ord(ch) > 0x7F and unicodedata.category(ch) in _BAD_CATEGORIES)
    }
    if not bad:
        return None
    pos = min(text.find(ch) for ch in bad)
    ch = text[pos]
    line = line_of(text, pos)
    if ch == "\x00":
        return fail(f"NUL character on line {line}", ch, line)
    return fail(f"forbidden character U+{ord(ch):04X} {_char_name(ch)} on line {line}", ch, line)


def check_escapes(code: str) -> GuardVerdict | None:
    """`«»` in code (in a comment or a string they are inert)."""
    positions = [p for p in (code.find("«"), code.find("»")) if p >= 0]
    if not positions:
        return None
    pos = min(positions)
    line = line_of(code, pos)
    return fail(f"identifier escape '{code[pos]}' on line {line} is not allowed", code[pos], line)


# --- rule 3: hash commands -----------------------------------------------------------------------


def check_hash_commands(text: str) -> GuardVerdict | None:
    for m in _HASH_RE.finditer(text):
        if m.group(1) not in _HASH_OK:
            word = "#" + m.group(1)
            line = line_of(text, m.start())
            allowed = ", ".join(ALLOWED_HASH_COMMANDS)
            return fail(f"forbidden command '{word[:80]}' on line {line} (allowed: {allowed})", word, line)
    return None


# --- rule 5: `%` elaborators and `lc` constants --------------------------------------------------


def check_percent(text: str) -> GuardVerdict | None:
    m = _PERCENT_RE.search(text)
    if m is None:
        return None
    end = m.end() - 1
    start = end
    while start > 0 and end - start < 80 and _is_name_char(text[start - 1]):
        start -= 1
    word = text[start:end] + "%"
    line = line_of(text, end)
    return fail(
        f"'{word}' on line {line}: a name right before '%' is not allowed (`name%` is a term "
        "elaborator such as `type_of%`; write `a % b` with spaces)",
        word,
        line,
    )


def check_lc_constants(text: str) -> GuardVerdict | None:
    m = _LC_RE.search(text)
    if m is None:
        return None
    word = _RUN_RE.match(text, m.start()).group(0)  # type: ignore[union-attr]
    line = line_of(text, m.start())
    return fail(
        f"compiler-internal name '{word[:80]}' on line {line} is not allowed (`lc…` constants such as "
        "`lcCast` are unsafe compiler axioms)",
        word,
        line,
    )


# --- rule 7: attributes --------------------------------------------------------------------------


def _attribute_lists(text: str) -> Iterator[tuple[int, int | None]]:
    """(start, position of `[`) for every `@[` and `attribute [`, in order; the bracket is None
    when a comment follows `attribute` (rejected: it could hide the list)."""
    for m in _ATTR_START_RE.finditer(text):
        if m.group(0) == "@[":
            yield m.start(), m.start() + 1
            continue
        i = _WS_RE.match(text, m.end()).end()  # type: ignore[union-attr]
        if text.startswith(("--", "/-"), i):
            yield m.start(), None
        elif text.startswith("[", i):
            yield m.start(), i


def _closing_bracket(text: str, bracket: int) -> int:
    depth = 0
    for m in _BRACKET_RE.finditer(text, bracket):
        depth += 1 if m.group(0) == "[" else -1
        if depth == 0:
            return m.start()
    return -1


def _bad_attribute_word(body: str) -> str | None:
    """The first word of an attribute list that no allow-list admits (each `,`-separated
    instance is judged by its attribute name: `grind` instances take `GRIND_ATTRIBUTE_WORDS`)."""
    for instance in body.split(","):
        words = _RUN_RE.findall(instance)
        names = [w for w in words if w not in ("local", "scoped")]
        allowed = {"grind": _GRIND_OK, "norm_cast": _NORM_CAST_OK}.get(names[0] if names else "", _ATTR_OK)
        for word in words:
            if word in allowed or word.isdigit() or (allowed is _GRIND_OK and set(word) == {"_"}):
                continue
            return word
    return None


def _classical_local_instance(text: str, start: int, body: str, close: int) -> bool:
    """`attribute [local instance] N` with `N` in `CLASSICAL_LOCAL_INSTANCES` (then, optionally,
    `in`): the one instance attribute allowed."""
    if not text.startswith("attribute", start) or body.split() != ["local", "instance"]:
        return False
    rest = _LINE_REST_RE.match(text, close + 1).group(0).split()  # type: ignore[union-attr]
    return len(rest) in (1, 2) and rest[0] in CLASSICAL_LOCAL_INSTANCES and rest[1:] in ([], ["in"])


def check_attributes(text: str) -> GuardVerdict | None:
    checked_to = 0  # lists nested in a checked one were checked with it
    for start, bracket in _attribute_lists(text):
        if start < checked_to:
            continue
        if bracket is None:
            line = line_of(text, start)
            return fail(f"a comment after 'attribute' on line {line} is not allowed", "attribute", line)
        close = _closing_bracket(text, bracket)
        if close < 0:
            line = line_of(text, start)
            return fail(f"unterminated attribute list on line {line}", "@[", line)
        body = text[bracket + 1 : close]
        if any(s in body for s in ('"', "'", "--", "/-")):
            line = line_of(text, start)
            return fail(f"comment or string inside the attribute list on line {line}", "@[", line)
        if _classical_local_instance(text, start, body, close):
            checked_to = close + 1
            continue
        if (word := _bad_attribute_word(body)) is not None:
            line = line_of(text, start)
            return fail(
                f"attribute word '{word[:80]}' on line {line} is not allowed "
                f"(allowed: {', '.join(ALLOWED_ATTRIBUTE_WORDS)}, numbers, `grind` with its modifiers, "
                "`norm_cast` with its label)",
                word,
                line,
            )
        checked_to = close + 1
    return None


# --- rule 6: header ------------------------------------------------------------------------------


def _skip_ws_comments(text: str, pos: int) -> int | None:
    """Skip whitespace and comments the way Lean's `whitespace` does (block comments nest);
    None on an unterminated block comment. `/--` and `/-!` are doc-comment tokens, not
    whitespace, so they end the skip. Linear: every `find` starts where the last one was used."""
    n = len(text)
    while True:
        pos = _WS_RE.match(text, pos).end()  # type: ignore[union-attr]
        if text.startswith("--", pos):
            end = text.find("\n", pos)
            pos = n if end < 0 else end + 1
        elif text.startswith("/-", pos) and not text.startswith(("/--", "/-!"), pos):
            depth, pos = 1, pos + 2
            close, opening = text.find("-/", pos), text.find("/-", pos)
            while depth:
                if close < 0:
                    return None
                if 0 <= opening < close:
                    depth, pos = depth + 1, opening + 2
                else:
                    depth, pos = depth - 1, close + 2
                if close < pos:
                    close = text.find("-/", pos)
                if 0 <= opening < pos:
                    opening = text.find("/-", pos)
        else:
            return pos


def _header_imports(text: str) -> list[int]:
    """Positions of the `import` keywords of the real header."""
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
    return positions


def check_header(text: str) -> GuardVerdict | None:
    allowed = ", ".join(ALLOWED_IMPORTS)
    imports = list(_word_positions(text, "import"))
    for at in imports:
        name = _IMPORT_NAME_RE.match(text, at + 6)
        module = name.group(1) if name else ""
        if module not in ALLOWED_IMPORTS:
            line = line_of(text, at)
            shown = module[:80] if module else "<nothing on this line>"
            return fail(
                f"import '{shown}' on line {line} is not allowed (allowed: {allowed})", "import", line
            )
    first = _skip_ws_comments(text, 0)
    if first is not None and _MODULE_RE.match(text, first):
        line = line_of(text, first)
        return fail(f"a 'module' header (line {line}) is not allowed", "module", line)
    header = _header_imports(text)
    modules = {_IMPORT_NAME_RE.match(text, p + 6).group(1) for p in header}  # type: ignore[union-attr]
    if REQUIRED_IMPORT not in modules:
        return fail(f"missing required 'import {REQUIRED_IMPORT}' in the file header", "import", None)
    in_header = set(header)
    for at in imports:
        if at not in in_header:
            line = line_of(text, at)
            return fail(
                f"'import' on line {line} is outside the file header (imports must come first, before "
                "any declaration or doc comment)",
                "import",
                line,
            )
    return None


# --- rule 8: options -----------------------------------------------------------------------------


def check_options(text: str) -> GuardVerdict | None:
    for at in _word_positions(text, "set_option"):
        i = _WS_RE.match(text, at + 10).end()  # type: ignore[union-attr]
        name = _OPTION_NAME_RE.match(text, i)
        after = name.end() if name else i
        if name is None or (after < len(text) and text[after] not in " \n\t"):
            line = line_of(text, at)
            return fail(f"cannot read the option name after 'set_option' on line {line}", "set_option", line)
        option = name.group(0)
        if option not in ALLOWED_OPTIONS and not option.startswith(ALLOWED_OPTION_PREFIXES):
            line = line_of(text, at)
            return fail(f"option '{option[:80]}' on line {line} is not allowed", option, line)
    return None


# --- rule 9: named values ------------------------------------------------------------------------


def _literal_value_at(text: str, pos: int, name: str) -> bool:
    """Whether a literal value and the closing `)` follow `:=` (ending at `pos`)."""
    return bool(
        _LITERAL_VALUE_RE.match(text, pos)
        or _STRUCT_VALUE_RE.match(text, pos)
        or (name == "priority" and _PRIORITY_VALUE_RE.match(text, pos))
    )


def check_named_values(text: str) -> GuardVerdict | None:
    for m in _NAMED_HEAD_RE.finditer(text):
        name = m.group("name")
        if name in _TACTIC_VALUED or _literal_value_at(text, m.end(), name):
            continue
        line = line_of(text, m.start())
        return fail(
            f"'({name[:80]} := ...)' on line {line} must have a literal value (`true`, `false`, a "
            "number, or `{ field := literal, ... }`): tactic options are compiled and run while the "
            "file builds (write `+opt`/`-opt` for a yes/no option)",
            name,
            line,
        )
    return None


# --- rules 10 and 11: names a file may not declare -----------------------------------------------


def _literal_in(name: str) -> str | None:
    """The first ASCII run of `name` that is a literal name, if any (`true` in `Net.true`, `true'`)."""
    for run in _RUN_RE.findall(name):
        if run in _LITERALS:
            return run
    return None


def _class_in(name: str) -> str | None:
    """The class name `name` spells (its last dotted component), if it is an allowed class."""
    last = name.rsplit(".", 1)[-1]
    return last if last in _CLASS_NAMES else None


def _protected_in(name: str) -> str | None:
    """The literal name (`true`, `false`) or allowed class `name` holds, if any."""
    return _literal_in(name) or _class_in(name)


_CLASS_NAMES = frozenset(INSTANCE_CLASSES)


@functools.lru_cache(maxsize=1)
def _shadowing(code: str) -> Hit | None:
    """The first place `code` declares a literal name or an allowed class's name, as Lean files
    it (`guard_names.first_declaration`; one reading for rules 10 and 11)."""
    # built on each call (`re` keeps the compiled pattern): no work at import time
    return first_declaration(code, _protected_in, candidates_re(LITERAL_NAMES, INSTANCE_CLASSES))


_OPEN_BRACKETS, _CLOSE_BRACKETS = "([{⦃⟨", ")]}⦄⟩"
# `instance` as an attribute: `[` and optionally `local` or `scoped` right before it (looked for in
# the 64 characters before it: more blank space there only makes the reading refuse the file)
_ATTRIBUTE_BEFORE_RE = re.compile(r"\[[ \t\n]*+(?:(?:local|scoped)[ \t\n]++)?\Z")
_INSTANCE_RE = re.compile(rf"(?<![{_WORD_CHARS}.])instance(?![{_WORD_CHARS}])")
_DERIVING_INSTANCE_RE = re.compile(rf"(?<![{_WORD_CHARS}.])deriving[ \t\n]++instance(?![{_WORD_CHARS}])")
_DERIVED_CLASSES_RE = re.compile(
    rf"[ \t\n]*+({_FIELD}(?:[ \t\n]*+,[ \t\n]*+{_FIELD})*+)[ \t\n]++for(?![{_WORD_CHARS}])"
)
#: Longest instance header read (from `instance` to its `:=` or `where`); longer is unreadable.
_MAX_INSTANCE_HEADER_CHARS = 4096
#: Most binder groups, arrows and parentheses read off an instance type before its class.
_MAX_BINDER_LAYERS = 64
_BINDER_RE = re.compile(rf"(?:∀|forall(?![{_WORD_CHARS}]))")
_ARROW_SET = frozenset({"→", "->"})
_COMMA = frozenset({","})
_HEADER_SCAN_RE = re.compile(
    rf"[(\[{{⦃⟨)\]}}⦄⟩]|:=|::|:|(?<![{_WORD_CHARS}'!?.])where(?![{_WORD_CHARS}'!?])|\n(?=\S)"
)
_SPLIT_SCAN_RE = re.compile(r"[(\[{⦃⟨)\]}⦄⟩]|,|→|->")
_BRACKETS_SCAN_RE = re.compile(r"[(\[{⦃⟨)\]}⦄⟩]")
_HEAD_RE = re.compile(IDENTIFIER)  # the class: a name as Lean reads it, never a connective


def _instance_type(code: str, pos: int, stop: int) -> str | None:
    """The type an `instance` header starting at `pos` declares: from its first `:` outside
    brackets (binders and `(priority := ...)` are bracketed) to the `:=`, `where` or line starting
    a new command that ends the header; None when no `:` comes first, or when the header runs
    into `stop` (the next `instance`) or past `_MAX_INSTANCE_HEADER_CHARS` (unreadable)."""
    depth = 0
    colon = -1
    n = min(stop, pos + _MAX_INSTANCE_HEADER_CHARS)
    for m in _HEADER_SCAN_RE.finditer(code, pos, n):
        token = m.group(0)
        if token in _OPEN_BRACKETS:
            depth += 1
        elif token in _CLOSE_BRACKETS:
            depth = max(depth - 1, 0)
        elif depth:
            continue
        elif token == ":":
            if colon < 0:
                colon = m.start()
        elif token != "::":  # `:=`, `where`, or a new command at column 0: the header ended
            return code[colon + 1 : m.start()] if colon >= 0 else None
    if n < len(code):
        return None
    return code[colon + 1 : n] if colon >= 0 else None


def _top_level(text: str, separators: frozenset[str], first_only: bool) -> list[int]:
    """Positions in `text` of `separators` (`,`, `→`, `->`) outside brackets; with `first_only`,
    only the first."""
    found: list[int] = []
    depth = 0
    for m in _SPLIT_SCAN_RE.finditer(text):
        token = m.group(0)
        if token in _OPEN_BRACKETS:
            depth += 1
        elif token in _CLOSE_BRACKETS:
            depth = max(depth - 1, 0)
        elif depth == 0 and token in separators:
            found.append(m.start())
            if first_only:
                break
    return found


def _closing_paren(text: str) -> int:
    """Where the bracket opening `text` closes (-1 if it does not)."""
    depth = 0
    for m in _BRACKETS_SCAN_RE.finditer(text):
        depth += 1 if m.group(0) in _OPEN_BRACKETS else -1
        if depth == 0:
            return m.start()
    return -1


def _conclusion_head(type_text: str) -> str:
    """The class an instance type declares: the head of its conclusion after any binders
    (`∀ x,`, `(x : T) →`, `[inst] →`, `{x} →`) and parentheses around it ("" if none)."""
    t = type_text.strip()
    for _ in range(_MAX_BINDER_LAYERS):  # each layer rescans what is left: bounded, so linear
        if (binder := _BINDER_RE.match(t)) is not None:
            commas = _top_level(t[binder.end() :], _COMMA, first_only=True)
            if not commas:
                return ""
            t = t[binder.end() + commas[0] + 1 :].strip()
            continue
        arrows = _top_level(t, _ARROW_SET, first_only=False)
        if arrows:
            last = arrows[-1]
            t = t[last + (1 if t[last] == "→" else 2) :].strip()
            continue
        if t[:1] == "(" and _closing_paren(t) == len(t) - 1:
            t = t[1:-1].strip()
            continue
        head = _HEAD_RE.match(t)
        return head.group(0) if head is not None else ""
    return ""  # more layers than an honest instance has: unreadable, so refused


def _instance_verdict(what: str, line: int) -> GuardVerdict:
    return fail(
        f"{what} on line {line}: `instance` and `deriving instance` may only declare instances of "
        f"{', '.join(INSTANCE_CLASSES)} (the class is the head of the instance's type, after any "
        "binders); a tactic option's value is elaborated in the file's scope, where the file's own "
        "`OfNat` or coercion instance would run while it builds",
        "instance",
        line,
    )


def check_instances(code: str) -> GuardVerdict | None:
    """Rule 11: each `instance` and `deriving instance` declares instances of `INSTANCE_CLASSES`
    only, and nothing is declared under one of those names."""
    derived = set()
    for m in _DERIVING_INSTANCE_RE.finditer(code):
        derived.add(m.end() - len("instance"))
        classes = _DERIVED_CLASSES_RE.match(code, m.end())
        names = [c.strip() for c in classes.group(1).split(",")] if classes else []
        bad = next((c for c in names if c not in _CLASS_NAMES), None) if names else "?"
        if bad is not None:
            line = line_of(code, m.start())
            what = (
                f"'deriving instance {bad[:80]}'"
                if names
                else "a 'deriving instance' whose classes cannot be read"
            )
            return _instance_verdict(what, line)
    # `attribute [local instance] N` names the attribute `instance`, not an instance declaration
    # (rule 7 allowed only the `Classical` one)
    starts = [
        m.start()
        for m in _INSTANCE_RE.finditer(code)
        if _ATTRIBUTE_BEFORE_RE.search(code, max(m.start() - 64, 0), m.start()) is None
    ]
    for k, start in enumerate(starts):
        if start in derived:
            continue
        # Lean reads another `instance` keyword as the start of a new command (a header holding
        # one does not parse), so a header's reading stops there: each is read once.
        stop = starts[k + 1] if k + 1 < len(starts) else len(code)
        type_text = _instance_type(code, start + len("instance"), stop)
        cls = _conclusion_head(type_text) if type_text is not None else ""
        if cls not in _CLASS_NAMES:
            line = line_of(code, start)
            what = f"an instance of `{cls[:80]}`" if cls else "an instance whose class cannot be read"
            return _instance_verdict(what, line)
    if (hit := _shadowing(code)) is not None:
        pos, _, what, cls, hint = hit  # a class's name: a literal's was rule 10's
        line = line_of(code, pos)
        return fail(
            f"{what} on line {line}: nothing may be named like a class instances may be declared of "
            f"(`{cls}` would shadow it){hint}",
            cls,
            line,
        )
    return None


def check_literal_names(code: str) -> GuardVerdict | None:
    if (hit := _shadowing(code)) is None or hit[3] not in _LITERALS:
        return None
    pos, _, what, literal, hint = hit
    line = line_of(code, pos)
    return fail(
        f"{what} on line {line}: nothing may be named `true` or `false`{hint}; a tactic option such "
        "as `(kernel := true)` is resolved in the file's scope, so it would run the file's own "
        "declaration while the file builds",
        literal,
        line,
    )
