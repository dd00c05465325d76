# TOOLCHAIN DOUBLE for tests (not Lean; decides nothing about proofs). The python3 half of the
# double's export boundary, run by bin/lean (recording declarations while compiling, and the
# judge's `--export` mode) and by bin/leanexport. Standard library only; see ../README.md.
#
#   _double_export.py record SRC OLEAN...       the `xdecl` lines of a compiled module's olean
#   _double_export.py leanexport ARGS...         `leanexport MOD... [-- DECL...]`
#   _double_export.py comparator-closure SRC THM...   what bin/lake's export would carry
#   _double_export.py judge-export FILE THM SPEC CHECK TOOLCHAIN_LIB LIB ALLOWED...
#   _double_export.py olean-statement OLEAN THM SPEC CHECK TOOLCHAIN_LIB LIB ALLOWED...
#   _double_export.py leanchecker [--silent] --from-export FILE
#
# Followed, and cited where it matters: lean4 src/LeanExport.lean (the exporter's `main`),
# src/LeanExport/Basic.lean (`dumpMetadata`, `dumpConstant`, `getIdx`: the order lines are
# written in), src/LeanExport/Parse.lean (`parseItem`: the shapes and the error messages),
# src/LeanExport/Json.lean (duplicate keys refused), src/Lean/Data/Json/Printer.lean
# (`compress`: keys in ascending order, the escapes), src/Lean/Util/Path.lean (`findOLean`,
# `initSearchPath`, `findSysroot`), src/lake/Lake/CLI/Check.lean (how Lake runs the exporter).
from __future__ import annotations

import errno
import json
import os
import re
import signal
import subprocess
import sys
import time

# ---- names, levels, expressions (as tuples) ----------------------------------------------------
# A name is a tuple of components (str, or int for numeric ones); () is the anonymous name.
# Levels: ("zero",) ("succ", l) ("max", a, b) ("imax", a, b) ("param", n).
# Exprs: ("bvar", i) ("sort", l) ("const", n, (l...)) ("app", f, a) ("lam"/"forallE", n, t, b, bi)
#        ("letE", n, t, v, b, nondep) ("proj", n, i, e) ("natVal", k) ("strVal", s) ("mdata", e).

ZERO = ("zero",)
TRUSTED_MODULES = ("LeanCheckedNetwork.Network", "LeanCheckedNetwork.Weights")
SPEC = "LeanCheckedNetwork.Net.Spec"
DIRECTIVES_CONST = "_double.judgeDirectives"
LEAN_VERSION = "4.35.0-rc2"


def name_of(text: str) -> tuple:
    """A dotted name as a tuple; an all-digit component is a numeric one (`Name.num`), as in the
    `0` of a private name's prefix (`_private.<Module>.0.<name>`, below)."""
    return tuple(int(c) if c.isascii() and c.isdigit() else c for c in text.split(".")) if text else ()


def name_str(n: tuple) -> str:
    return ".".join(str(c) for c in n) if n else "[anonymous]"


def const(text: str) -> tuple:
    return ("const", name_of(text), ())


def app(f: tuple, a: tuple) -> tuple:
    return ("app", f, a)


def apps(f: tuple, names: list) -> tuple:
    for n in names:
        f = app(f, const(n))
    return f


SORT0 = ("sort", ZERO)
SORT1 = ("sort", ("succ", ZERO))


def ident_expr(ident: str) -> tuple:
    if ident == "Prop":
        return SORT0
    if ident == "Type":
        return SORT1
    return const(ident)


def is_double_name(n: tuple) -> bool:
    """The double's own "kernel primitives" (`double.proof`, `double.stmt.X`, ...): never
    exported, always known to the double's kernel."""
    return bool(n) and n[0] == "double"


# ---- recording a module's declarations (at compile time) ---------------------------------------

IDENT = r"[A-Za-z_\u0370-\u03ff\u1f00-\u1fff][A-Za-z0-9_'!?\u0370-\u03ff\u2080-\u209c\u1f00-\u1fff]*"
IDENT_RE = re.compile(rf"{IDENT}(?:\.{IDENT})*")
#: No `lemma`: core Lean has no such command (lean4's own tests/lean/run/lemma.lean defines it by a
#: macro; Mathlib and Batteries add it), so bin/lean fails a build that uses it, as rc2's parser does.
DECL_KEYWORDS = ("theorem", "def", "abbrev", "axiom")
MODIFIERS = ("private", "protected", "noncomputable", "partial", "unsafe", "nonrec")
#: What the double's Init "declares": its fixed builtins (canonical forms below).
BUILTIN_NAMES = (
    "True",
    "False",
    "True.intro",
    "trivial",
    "propext",
    "Classical.choice",
    "Quot.sound",
    "sorryAx",
    "Lean.ofReduceBool",
)
#: Source words that elaborate to a builtin constant (`sorry` is `sorryAx`; `native_decide`
#: rests on `Lean.ofReduceBool`).
ALIASES = {"sorry": "sorryAx", "native_decide": "Lean.ofReduceBool"}


def strip_comments(text: str) -> str:
    """`--` line comments and nested `/- -/` block comments blanked (newlines kept), strings and
    character literals left alone."""
    out = []
    i, n, depth = 0, len(text), 0
    while i < n:
        c = text[i]
        if depth:
            if text.startswith("/-", i):
                depth += 1
                i += 2
            elif text.startswith("-/", i):
                depth -= 1
                i += 2
            else:
                out.append("\n" if c == "\n" else " ")
                i += 1
            continue
        if text.startswith("/-", i):
            depth = 1
            i += 2
            out.append("  ")
        elif text.startswith("--", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


#: What Lean's `whitespace` says of a tab, or a carriage return not followed by a line feed, where
#: it skips whitespace between tokens (lean4 src/Lean/Parser/Basic.lean `whitespace`, stored
#: cf120acb, id 55961982; both strings in stage0 C `l_Lean_Parser_whitespace___closed__2/3`, id
#: 56583219917): a parse error, so the build fails. Inside a `--` comment (`takeUntilFn`), a block
#: or doc comment (`finishCommentBlock`) or a string or character literal (a token) they are fine.
TAB_ERROR = "tabs are not allowed; please configure your editor to expand them"
CR_ERROR = "isolated carriage returns are not allowed"


def whitespace_error(text: str) -> tuple[int, int, str] | None:
    """(1-based line, 0-based column, message) of the first tab or lone carriage return outside
    comments and string and character literals, or None. Not modelled (stricter): the code inside
    an interpolated string's braces is taken as literal, so a tab there passes."""
    code = blank_literals(strip_comments(text))
    for n, line in enumerate(code.split("\n"), 1):
        for col, ch in enumerate(line):
            if ch == "\t":
                return n, col, TAB_ERROR
            if ch == "\r" and col != len(line) - 1:
                return n, col, CR_ERROR
    return None


def blank_literals(text: str) -> str:
    """`text` (comments already blanked) with the insides of string and character literals
    blanked: a string `"..."` (escapes skipped; raw `r"..."` and `r#"..."#` too), a character
    literal `'c'` / `'\\n'` where a token starts (not the prime of a name like `h'`)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        raw = re.match(r'r(#*)"', text[i:]) if c == "r" and (i == 0 or not _name_char(text[i - 1])) else None
        if raw:
            close = '"' + raw.group(1)
            j = text.find(close, i + raw.end())
            j = n if j < 0 else j + len(close)
            out.append(_blank(text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(_blank(text[i:j]))
            i = j
        elif c == "'" and (i == 0 or not _name_char(text[i - 1])):
            m = re.match(r"'(?:\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)|[^\\'\n])'", text[i:])
            if m:
                out.append(_blank(m.group(0)))
                i += m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _name_char(ch: str) -> bool:
    return ch.isalnum() or ch in "_'!?."


def _blank(literal: str) -> str:
    return "".join("\n" if ch == "\n" else " " for ch in literal)


#: A command beginning with `lemma`, after what may precede a declaration keyword on its line
#: (attributes, `set_option … in`, modifiers; a doc comment is blanked by `strip_comments`), at
#: any column, as Lean commands may be indented. Core has no `lemma` command (lean4
#: src/Lean/Parser/Command.lean `declaration` lists none; tests/lean/run/lemma.lean defines one by a
#: macro first), so rc2's parser stops there. Stricter than Lean only where a line of a term
#: starts with a variable or a definition the submission itself named `lemma`.
LEMMA_COMMAND_RE = re.compile(
    r"\s*(?:@\[[^\]]*\]\s*|set_option\s+\S+\s+\S+\s+in\s+|(?:" + "|".join(MODIFIERS) + r")\s+)*lemma(?:\s|$)"
)


def lemma_command_line(text: str) -> int | None:
    """The 1-based line of the first `lemma` command (`LEMMA_COMMAND_RE`), comments blanked."""
    for n, line in enumerate(strip_comments(text).split("\n"), 1):
        if LEMMA_COMMAND_RE.match(line):
            return n
    return None


def split_header(line: str) -> tuple[str, str, str, bool] | None:
    """(keyword, name, rest, private) when `line` starts a declaration the double records."""
    s = line
    while True:
        m = re.match(r"@\[[^\]]*\]\s*", s) or re.match(r"set_option\s+\S+\s+\S+\s+in\s+", s)
        if not m:
            break
        s = s[m.end() :]
    words = s.split(None, 1)
    private = False
    while words and words[0] in MODIFIERS:
        private = private or words[0] == "private"
        s = words[1] if len(words) > 1 else ""
        words = s.split(None, 1)
    if not words or words[0] not in DECL_KEYWORDS or len(words) < 2:
        return None
    m = re.match(r"[^\s:({\[⦃]+", words[1])
    if not m:
        return None
    return words[0], m.group(0), words[1][m.end() :], private


class OpenDecl:
    """One namespace an `open` command opened (lean4 src/Lean/Parser/Command.lean `openDecl`:
    `openSimple`, `openOnly` `X (a b)`, `openHiding` `X hiding a b`, `openRenaming`
    `X renaming a → b`; src/Lean/Elab/Open.lean): which short names it makes resolve, to what."""

    def __init__(self, ns: str, only: set[str] | None = None, hiding: frozenset[str] = frozenset(),
                 renames: dict[str, str] | None = None):  # fmt: skip
        self.ns = ns
        self.only = only
        self.hiding = hiding
        self.renames = renames

    def target(self, token: str) -> str | None:
        """The full name `token` stands for through this `open`, or None."""
        if self.renames is not None:
            return f"{self.ns}.{self.renames[token]}" if token in self.renames else None
        if self.only is not None:
            return f"{self.ns}.{token}" if token in self.only else None
        return None if token in self.hiding else f"{self.ns}.{token}"


def parse_open(rest: str) -> tuple[list[OpenDecl], bool]:
    """(what `open REST` opens, whether it may change how later text elaborates). `open scoped X`
    activates X's scoped notations and instances only, no names; a plain `open X` activates them
    too, which `reinterprets` does not model (README)."""
    words = rest.split()
    if words and words[0] == "scoped":
        return [], True
    m = re.fullmatch(rf"({IDENT_RE.pattern})\s*\(([^)]*)\)", rest.strip())
    if m:
        return [OpenDecl(m.group(1), only=set(m.group(2).split()))], False
    m = re.fullmatch(rf"({IDENT_RE.pattern})\s+hiding\s+(.+)", rest.strip())
    if m:
        return [OpenDecl(m.group(1), hiding=frozenset(m.group(2).split()))], False
    m = re.fullmatch(rf"({IDENT_RE.pattern})\s+renaming\s+(.+)", rest.strip())
    if m:
        pairs = [re.split(r"\s*(?:→|->)\s*", p.strip()) for p in m.group(2).split(",")]
        return [OpenDecl(m.group(1), renames={b: a for a, b in (p for p in pairs if len(p) == 2)})], False
    return [OpenDecl(w) for w in words if IDENT_RE.fullmatch(w)], False


#: `open X in` / `set_option O V in` before a command, on its line (`«in»`, a trailing parser:
#: `cmd₁ in cmd₂` is `section cmd₁ cmd₂ end`, lean4 src/Lean/Elab/BuiltinCommand.lean
#: `expandInCmd`): what it opens holds for that one command.
IN_PREFIX_RE = re.compile(r"\s*(?:open\s+((?:(?!\bin\b).)+?)|set_option\s+\S+\s+\S+)\s+in(?:\s+|$)")


class Scope:
    def __init__(self, known: set[str]):
        self.known = known
        self.namespaces: list[str] = []  # the open `namespace` parts ("" for a `section`)
        self.opened: list[OpenDecl] = []
        #: How many `opened` entries each open `namespace`/`section` found: its `end` drops the
        #: rest ("A `section`/`end` pair delimits the scope of ... `open` ...", and a `namespace`
        #: "also acts like `section`", lean4 src/Lean/Parser/Command.lean docstrings).
        self.marks: list[int] = []
        #: The module's `private` declarations: the name as written (resolved) -> the name Lean
        #: gives the constant, `_private.<Module>.0.<name>` (`mkPrivateName`, lean4
        #: src/Lean/Modifiers.lean and src/Lean/PrivateName.lean); the module's own text
        #: refers to it by the written name.
        self.private: dict[str, str] = {}
        #: False once the module has run a command after which the same text may elaborate to
        #: another term (`reinterprets`): from then on statements are keyed by name, not text.
        self.text_keys = True

    def lookup(self, candidate: str) -> str | None:
        if candidate in self.private:
            return self.private[candidate]
        return candidate if candidate in self.known else None

    def prefixes(self) -> list[str]:
        parts = [p for p in self.namespaces if p]
        full = ".".join(parts)
        out = []
        while full:
            out.append(full)
            full = full.rpartition(".")[0]
        return out

    def full_name(self, name: str) -> str:
        if name.startswith("_root_."):
            return name[len("_root_.") :]
        ns = ".".join(p for p in self.namespaces if p)
        return f"{ns}.{name}" if ns else name

    def candidates(self, token: str) -> list[str]:
        """What `ResolveName.resolveGlobalName` (lean4 src/Lean/ResolveName.lean) finds for a
        token: the innermost namespace holding it (`resolveUsingNamespace`), else for a dotted
        token the root constant alone (`resolveExact`), else the root and every `open` namespace
        together (`resolveOpenDecls`)."""
        token = ALIASES.get(token, token)
        if token.startswith("_root_."):
            found = self.lookup(token[len("_root_.") :])
            return [] if found is None else [found]
        for pre in self.prefixes():
            found = self.lookup(f"{pre}.{token}")
            if found is not None:
                return [found]
        found = self.lookup(token) if "." in token else None
        if found is not None:
            return [found]
        out: list[str] = []
        opened = [od.target(token) for od in self.opened]
        for found in (self.lookup(token), *(self.lookup(t) for t in opened if t is not None)):
            if found is not None and found not in out:
                out.append(found)
        return out

    def push(self, part: str) -> None:
        """`namespace part` (or `section`, part "")."""
        self.namespaces.append(part)
        self.marks.append(len(self.opened))

    def pop(self) -> None:
        """`end`: what the scope opened is closed with it."""
        if self.namespaces:
            self.namespaces.pop()
            del self.opened[self.marks.pop() :]

    def exact(self, token: str) -> str | None:
        """The one constant a token names. Two different candidates are ambiguous: Lean may still
        pick one by elaborating each (overloads); the double leaves it unresolved (its text key
        then differs), which is stricter."""
        found = self.candidates(token)
        return found[0] if len(found) == 1 else None

    def mention(self, token: str) -> list[str]:
        """The known constants a token may name: its candidates (all of them when ambiguous, so
        that the closure holds whichever Lean's elaboration keeps: a superset, stricter), or
        (field notation `c.elim`) those of its longest prefix that names any."""
        while token:
            found = self.candidates(token)
            if found:
                return found
            if "." not in token:
                return []
            token = token.rpartition(".")[0]
        return []


def mentions(text: str, scope: Scope, own: str) -> list[str]:
    found: list[str] = []
    for m in IDENT_RE.finditer(text):
        start = m.start()
        if start and (text[start - 1].isalnum() or text[start - 1] in "_'."):
            continue  # inside a numeral or a longer token
        for hit in scope.mention(m.group(0)):
            if hit != own and hit not in found:
                found.append(hit)
    return found


def command_head(line: str) -> tuple[list[OpenDecl], str] | None:
    """What a line (comments blanked) starts, if it starts a declaration at any column, after a
    same-line doc comment (blanked), attributes, modifiers and `open … in` / `set_option … in`
    prefixes: (what the prefixes open for it, the line from its attributes or keyword on). Lean's
    top-level commands have no column check, and `declModifiers` takes an optional doc comment
    first (lean4 src/Lean/Parser/Command.lean, stored f2482df7)."""
    opens: list[OpenDecl] = []
    s = line
    while m := IN_PREFIX_RE.match(s):
        if m.group(1) is not None:
            opens += parse_open(m.group(1))[0]
        s = s[m.end() :]
    s = s.strip()
    if split_header(s) is None and keyword_alone(s) is None:
        return None
    return opens, s


def keyword_alone(line: str) -> str | None:
    """The declaration keyword of a header whose name is on a following line (`theorem` then the
    name: `"theorem " >> recover declId …`, the space only for the pretty printer, no column
    check, lean4 src/Lean/Parser/Command.lean), or None."""
    s = line
    while m := (re.match(r"@\[[^\]]*\]\s*", s) or re.match(r"set_option\s+\S+\s+\S+\s+in\s+", s)):
        s = s[m.end() :]
    words = s.split()
    while words and words[0] in MODIFIERS:
        words = words[1:]
    return words[0] if len(words) == 1 and words[0] in DECL_KEYWORDS else None


def scope_command(line: str) -> list[str] | None:
    """The words of a `namespace`/`section`/`end` command at any column, or None."""
    words = line.split()
    if words[:1] in (["namespace"], ["section"], ["end"]) or words[:2] == ["noncomputable", "section"]:
        return words
    return None


def analyze(text: str, imported: set[str], module: str) -> list[dict]:
    """Every theorem/def/abbrev/axiom of a module: its name, its stated type (a single
    known identifier, or the text and the known constants it mentions) and its value (a single
    known identifier, or the known constants the body mentions). A `private` declaration of
    `module` is named `_private.<module>.0.<name>`, as Lean names it (`mkPrivateName`, lean4
    src/Lean/Modifiers.lean), so `N` is not declared under its written name. A declaration is
    found at any column, behind a same-line doc comment, after `open … in`, and with its name on
    a following line; `open` lasts to the `end` of its `namespace`/`section`, `open … in` for
    one command (see `command_head`, `Scope.pop`)."""
    scope = Scope(set(BUILTIN_NAMES) | imported)
    raw = text.split("\n")
    lines = strip_comments(text).split("\n")  # blanked comments keep the line numbers of `raw`
    records: list[dict] = []
    #: What `open … in` lines just above opened for the next command.
    pending: list[OpenDecl] = []

    def starts_command(line: str) -> bool:
        return command_head(line) is not None or scope_command(line) is not None

    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        stripped = line.strip()
        if not stripped:
            continue
        words = scope_command(line)
        if words is not None:
            pending = []
            if words[0] == "end":
                scope.pop()
            else:
                scope.push(words[1] if words[0] == "namespace" and len(words) > 1 else "")
            continue
        prefix = IN_PREFIX_RE.fullmatch(stripped)
        if prefix is not None:  # `open X in` / `set_option … in` alone: it wraps what follows
            if prefix.group(1) is not None:
                pending += parse_open(prefix.group(1))[0]
            continue
        if reinterprets(stripped):  # a command keyword at any column (stricter)
            scope.text_keys = False
        head = command_head(line)
        if head is None:
            if stripped.split()[0] == "open" and not re.search(r"\sin(\s|$)", stripped):
                # `open X` (a tactic needs `open X in`): it lasts to its scope's `end`.
                opened, reinterpreting = parse_open(stripped[len("open") :])
                scope.opened.extend(opened)
                scope.text_keys = scope.text_keys and not reinterpreting
            pending = []
            continue
        opens, decl_line = head
        header_at = i - 1
        if split_header(decl_line) is None:  # `theorem` alone: its name on a following line
            while i < len(lines) and not lines[i].strip():
                i += 1
            if i >= len(lines):
                break
            decl_line = f"{decl_line} {lines[i].strip()}"
            i += 1
        header = split_header(decl_line)
        if header is None:
            pending = []
            continue
        keyword, short, rest, private = header
        block = [rest]
        while (
            i < len(lines)
            and (not lines[i].strip() or lines[i][0].isspace())
            and not (lines[i].strip() and starts_command(lines[i]))
        ):
            block.append(lines[i])
            i += 1
        written = scope.full_name(short)
        name = f"_private.{module}.0.{written}" if private and module else written
        # `theorem Foo.Bla.f` is elaborated as `namespace Foo.Bla theorem f … end`
        # (`expandDeclNamespace?`, lean4 src/Lean/Elab/Declaration.lean; none for `_root_.`), so
        # its own text resolves names in `Foo.Bla` first (`resolveUsingNamespace`).
        decl_ns = "" if short.startswith("_root_.") else short.rpartition(".")[0]
        scope.namespaces.append(decl_ns)
        transient = pending + opens
        scope.opened.extend(transient)
        rec = record(keyword, name, "\n".join(block), scope)
        del scope.opened[len(scope.opened) - len(transient) :]
        scope.namespaces.pop()
        pending = []
        owned = owned_directives(raw, header_at)
        if owned:
            rec["judge"] = owned
        records.append(rec)
        scope.known.add(name)
        if name != written:
            scope.private[written] = name
    return records


#: Commands after which the same text can elaborate to another term: notation, macros, syntax and
#: elaborators, instances, section variables, attributes (lean4 src/Lean/Parser/Command.lean,
#: src/Lean/Parser/Syntax.lean). The double keys a statement by its text (`term_key`), which is
#: sound only while the text means what it meant in the trusted modules.
REINTERPRETING = (
    "notation", "infix", "infixl", "infixr", "prefix", "postfix", "macro", "macro_rules", "syntax",
    "elab", "elab_rules", "instance", "attribute", "variable", "declare_syntax_cat",
    "binder_predicate", "unif_hint", "class", "deriving", "local", "scoped",
)  # fmt: skip
#: Attributes that make a declaration change elaboration (an instance, a coercion, a macro, ...).
REINTERPRETING_ATTRIBUTE_RE = re.compile(
    r"\b(instance|default_instance|coe|macro|term_elab|command_elab|tactic|delab|app_unexpander)\b"
)


def reinterprets(line: str) -> bool:
    """Whether a top-level command (its first line, comments blanked) can change what later text
    elaborates to (`REINTERPRETING`): stricter than Lean, which may leave a statement unchanged."""
    if any(REINTERPRETING_ATTRIBUTE_RE.search(a) for a in re.findall(r"@\[([^\]]*)\]", line)):
        return True
    words = re.sub(r"^(?:@\[[^\]]*\]\s*)+", "", line.strip()).split()
    while words and words[0] in MODIFIERS:
        words = words[1:]
    return bool(words) and words[0] in REINTERPRETING


def owned_directives(raw: list[str], header: int) -> list[str]:
    """The `-- double: judge` lines written immediately before the declaration whose header is
    line `header`: they belong to that declaration, so the exporter carries them only with it
    (../README.md). Between them and the header may sit other `-- double:` lines, `set_option ...
    in` lines, attribute lines (`@[simp]`), blank lines, line comments and a doc or block
    comment: Lean's grammar makes the doc comment and the attributes part of the declaration
    (`declModifiers`, lean4 src/Lean/Parser/Command.lean), `set_option ... in` wraps it
    (`«in»`, same file), and comments and blank lines are whitespace (`whitespace`,
    src/Lean/Parser/Basic.lean). A `/-!` module doc is a command of its own, so it ends the walk."""
    out: list[str] = []
    j = header - 1
    while j >= 0:
        line = raw[j].strip()
        if raw[j].startswith("-- double: "):
            if raw[j].startswith("-- double: judge "):
                out.insert(0, raw[j][len("-- double: judge ") :])
        elif SET_OPTION_IN_RE.fullmatch(line) or ATTRIBUTES_LINE_RE.fullmatch(line):
            pass
        elif not line or line.startswith("--"):
            pass  # a blank line or a line comment is whitespace to Lean (same `whitespace`)
        elif line.endswith("-/") and not line.startswith("--"):
            k = j  # the comment's first line
            while k >= 0 and not raw[k].lstrip().startswith("/-"):
                k -= 1
            if k < 0 or raw[k].lstrip().startswith("/-!"):
                break
            j = k
        else:
            break
        j -= 1
    return out


SET_OPTION_IN_RE = re.compile(r"set_option \S+ \S+ in")
ATTRIBUTES_LINE_RE = re.compile(r"@\[[^\]]*\]")

#: One token of a term's text: an identifier, a numeral, an ASCII spelling of an operator Lean's
#: notation also writes in Unicode, or any other single character.
TOKEN_RE = re.compile(rf"{IDENT}(?:\.{IDENT})*|[0-9]+|->|<=|>=|!=|\S")
#: The same notation (lean4 src/Init/Core.lean and src/Init/Prelude.lean declare both spellings).
ASCII_NOTATION = {"->": "→", "<=": "≤", ">=": "≥", "!=": "≠"}


def term_key(text: str, scope: Scope) -> str:
    """The double's stand-in for an elaborated term: its text with each identifier that names a
    known constant replaced by that constant's full name, the ASCII operators in their Unicode
    spelling, tokens separated by one space. Two texts that differ only in how they name the same
    constants or in spacing get the same key; binder names, parentheses and notation still count
    (stricter than Lean's definitional equality, never kinder)."""
    out = []
    for m in TOKEN_RE.finditer(text):
        tok = m.group(0)
        if IDENT_RE.fullmatch(tok) and not (m.start() and text[m.start() - 1] in "'."):
            tok = scope.exact(tok) or tok
        out.append(ASCII_NOTATION.get(tok, tok))
    return " ".join(out)


def record(keyword: str, name: str, body_text: str, scope: Scope) -> dict:
    cut = len(body_text)
    assign = body_text.find(":=")
    if assign >= 0:
        cut = assign
    alt = re.search(r"\n\s*\|", body_text)
    if alt and alt.start() < cut:
        cut = alt.start()
    head = " ".join(body_text[:cut].split())
    body = body_text[cut + 2 :] if cut == assign else body_text[cut:]
    kind = {"theorem": "thm", "axiom": "axiom"}.get(keyword, "def")
    rec: dict = {"kind": kind, "src": keyword, "name": name}
    stated = head[1:].strip() if head.startswith(":") else None
    if (
        stated is not None
        and IDENT_RE.fullmatch(stated)
        and (stated in ("Prop", "Type") or scope.exact(stated) is not None)
    ):
        rec["type"] = {"ident": stated if stated in ("Prop", "Type") else scope.exact(stated)}
    else:
        rec["type"] = {
            "stmt": stated if stated is not None else head,
            "mentions": mentions(head, scope, name),
        }
        # Keyed by name (below) when binders precede the colon (not modelled), or when the
        # module may have given the text another meaning (`reinterprets`).
        if stated is not None and scope.text_keys:
            rec["type"]["key"] = term_key(stated, scope)
    if kind != "axiom":
        core = " ".join(body.split())
        core = re.sub(r"^by\s+", "", core)
        core = re.sub(r"^exact\s+", "", core)
        single = scope.exact(core) if IDENT_RE.fullmatch(core or "-") and core not in ALIASES else None
        if single is not None and single != name:
            rec["value"] = {"ident": single}
        else:
            rec["value"] = {"mentions": mentions(body, scope, name)}
            if kind == "def" and stated is not None and not head.startswith("(") and scope.text_keys:
                # A definition without parameters (a `def Spec : Prop := …`): its value is the
                # term its text denotes, so that the double's kernel can unfold it (delta).
                rec["value"]["key"] = term_key(body, scope)
    return rec


# ---- the double's oleans -----------------------------------------------------------------------


class LeanError(Exception):
    """What real Lean would throw (`uncaught exception: ...` at the top)."""


def read_olean(path: str, module: str) -> dict:
    try:
        with open(path, "rb") as f:
            # The header first, as Lean checks an olean's header before it reads on (a symlink to
            # /dev/zero is refused at once, not read to the end).
            head = f.read(len(b"double-olean "))
            if head != b"double-olean ":
                raise LeanError(f"failed to read file '{path}', invalid header")
            data = (head + f.read()).decode("utf-8", "replace")
    except OSError:
        raise LeanError(f"object file '{path}' of module {module} does not exist") from None
    lines = data.split("\n")
    out: dict = {"imports": [], "records": [], "judge": [], "export": []}
    for line in lines[1:]:
        if line.startswith("import "):
            parts = line.split(" ")
            if len(parts) >= 2:
                out["imports"].append(parts[1])
        elif line.startswith("xdecl "):
            try:
                rec = json.loads(line[len("xdecl ") :])
            except ValueError:
                continue
            if isinstance(rec, dict) and isinstance(rec.get("name"), str):
                out["records"].append(rec)
        elif line.startswith("judge "):
            out["judge"].append(line[len("judge ") :])
        elif line.startswith("export "):
            out["export"].append(line[len("export ") :])
    return out


def find_olean(module: str, search_path: list[str]) -> str:
    """`findOLean` (src/Lean/Util/Path.lean @0514f7ca8b36 `findWithExt`): the first entry holding
    the root directory, or a root `.olean` of any file type (`pathExists`), decides. An empty
    entry is joined as `/ROOT` (`FilePath.join "" r` is `"" ++ "/" ++ r`, src/Init/System/FilePath.lean),
    never the working directory."""
    root = module.split(".")[0]
    rel = module.replace(".", "/") + ".olean"
    for entry in search_path:
        base = os.path.join(entry or "/", root)
        if os.path.isdir(base) or os.path.lexists(base + ".olean"):
            return os.path.join(entry or "/", rel)
    raise LeanError(
        f"unknown module prefix '{root}'\n\nNo directory '{root}' or file '{root}.olean' in the "
        "search path entries:\n" + "\n".join(search_path)
    )


def load_modules(modules: list[str], search_path: list[str]) -> tuple[list[tuple[str, dict]], dict]:
    """`importModules`: the modules and everything they import, each once, imports first; each
    import is looked up again by name on the search path. Returns ([(module, record)], oleans)."""
    done: dict[str, dict] = {}
    records: list[tuple[str, dict]] = []

    def visit(mod: str, depth: int) -> None:
        if mod in done or depth > 200:
            return
        path = find_olean(mod, search_path)
        data = read_olean(path, mod)
        done[mod] = data
        for imp in data["imports"]:
            visit(imp, depth + 1)
        records.extend((mod, r) for r in data["records"])

    for mod in modules:
        visit(mod, 0)
    return records, done


def known_names(modules: list[str], search_path: list[str]) -> set[str]:
    """The names the modules declare, and what they import, each found by name on the search
    path as Lean's `importModules` finds them (compile time); a module the double cannot read
    adds nothing (the build then knows fewer names: stricter, never kinder)."""
    names: set[str] = set()
    seen: set[str] = set()
    todo = list(modules)
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        seen.add(mod)
        try:
            data = read_olean(find_olean(mod, search_path), mod)
        except LeanError:
            continue
        todo.extend(data["imports"])
        names.update(rec["name"] for rec in data["records"])
    return names


def frontend_search_path() -> list[str]:
    """The `lean` frontend's search path: `LEAN_PATH` split at `:` (empty pieces kept), then the
    toolchain's own `lib/lean` (`initSearchPath`, src/Lean/Util/Path.lean @0514f7ca8b36)."""
    lean_path = os.environ.get("LEAN_PATH")
    builtin = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib", "lean")
    return (lean_path.split(":") if lean_path is not None else []) + [builtin]


# ---- constants: canonical (trusted) and derived from the source (the submission's) ------------


def stmt_const(key: str) -> tuple:
    """`double.stmt.<key>`: the double's primitive for the term whose normalised text is `key`
    (one name component, whatever dots the text holds)."""
    return ("const", ("double", "stmt", key), ())


def type_expr(rec: dict) -> tuple:
    """A constant's type: `const X` for a stated identifier, else `double.stmt.<key>` (the
    normalised statement text, `term_key`) applied to the constants it mentions; a statement the
    double did not key (binders before the colon) is `double.stmt.<the declaration's name>`."""
    t = rec.get("type") or {}
    if isinstance(t.get("ident"), str):
        return ident_expr(t["ident"])
    mentioned = list(t.get("mentions") or [])
    if isinstance(t.get("key"), str):
        return apps(stmt_const(t["key"]), mentioned)
    return apps(const(f"double.stmt.{rec['name']}"), mentioned)


def def_value(rec: dict) -> tuple[tuple, list]:
    """A definition's value and the constants it uses: `const X` for a body that is one known
    identifier, `double.stmt.<key>` applied to what a keyed body mentions (the same form a
    statement of that text has, so that unfolding the definition meets it), else
    `double.value.<name>` applied to what the body mentions."""
    value = rec.get("value") or {}
    if isinstance(value.get("ident"), str):
        return ident_expr(value["ident"]), [value["ident"]]
    used = list(value.get("mentions") or [])
    if isinstance(value.get("key"), str):
        return apps(stmt_const(value["key"]), used), used
    return apps(const(f"double.value.{rec['name']}"), used), used


def defn(name: str, type_: tuple, value: tuple, hints: object = None) -> dict:
    return {
        "kind": "def",
        "name": name_of(name),
        "levelParams": [],
        "type": type_,
        "value": value,
        "hints": {"regular": 1} if hints is None else hints,
        "safety": "safe",
        "all": [name_of(name)],
    }


def canonical(rec: dict) -> dict:
    """The fixed form of a trusted constant, which the double's judge knows: its type as
    recorded; a theorem's value `const double.trusted.<name>`; a definition's value as
    `def_value` reads it (so the kernel can unfold a trusted `Spec` to its statement)."""
    name = rec["name"]
    t = type_expr(rec)
    if rec.get("kind") == "axiom":
        return {"kind": "axiom", "name": name_of(name), "levelParams": [], "type": t, "isUnsafe": False}
    if rec.get("kind") != "thm":
        return defn(name, t, def_value(rec)[0], "abbrev" if rec.get("src") == "abbrev" else None)
    return {
        "kind": "thm",
        "name": name_of(name),
        "levelParams": [],
        "type": t,
        "value": const(f"double.trusted.{name}"),
        "all": [name_of(name)],
    }


def builtins() -> dict:
    """The double's `Init`: True, False, trivial and the axioms the grader knows of."""
    out: dict = {}
    for ind, ctors in (("True", ["True.intro"]), ("False", [])):
        out[name_of(ind)] = {
            "kind": "induct",
            "name": name_of(ind),
            "levelParams": [],
            "type": SORT0,
            "numParams": 0,
            "numIndices": 0,
            "all": [name_of(ind)],
            "ctors": [name_of(c) for c in ctors],
            "numNested": 0,
            "isRec": False,
            "isReflexive": False,
            "isUnsafe": False,
        }
    out[name_of("True.intro")] = {
        "kind": "ctor",
        "name": name_of("True.intro"),
        "levelParams": [],
        "type": const("True"),
        "induct": name_of("True"),
        "cidx": 0,
        "numParams": 0,
        "numFields": 0,
        "isUnsafe": False,
    }
    out[name_of("trivial")] = {
        "kind": "thm",
        "name": name_of("trivial"),
        "levelParams": [],
        "type": const("True"),
        "value": const("double.trusted.trivial"),
        "all": [name_of("trivial")],
    }
    for ax in ("propext", "Classical.choice", "Quot.sound", "sorryAx", "Lean.ofReduceBool"):
        out[name_of(ax)] = {
            "kind": "axiom",
            "name": name_of(ax),
            "levelParams": [],
            "type": const(f"double.type.{ax}"),
            "isUnsafe": False,
        }
    return out


def derived(rec: dict, heights: dict) -> dict:
    """A constant of the submission as its source reads (the double's kernel conventions, see
    the README): a theorem's value is `double.proof` applied to its type and to what it uses."""
    name = rec["name"]
    t = type_expr(rec)
    kind = rec.get("kind")
    value = rec.get("value") or {}
    if kind == "axiom":
        return {"kind": "axiom", "name": name_of(name), "levelParams": [], "type": t, "isUnsafe": False}
    used = list(value.get("mentions") or [])
    if kind == "thm":
        if isinstance(value.get("ident"), str):
            v = ident_expr(value["ident"])
        else:
            v = apps(app(const("double.proof"), t), used)
        return {
            "kind": "thm",
            "name": name_of(name),
            "levelParams": [],
            "type": t,
            "value": v,
            "all": [name_of(name)],
        }
    v, used = def_value(rec)
    height = 1 + max([heights.get(u, 0) for u in used] or [0])
    heights[name] = height
    return defn(name, t, v, "abbrev" if rec.get("src") == "abbrev" else {"regular": height})


# ---- JSON as Lean writes it (`Json.compress`) --------------------------------------------------


def lean_string(s: str) -> str:
    """`renderString` (src/Lean/Data/Json/Printer.lean): escapes `"`, `\\`, newline, carriage
    return, and every other character below 0x20 as `\\u00XX`; the rest raw."""
    out = ['"']
    for c in s:
        if c == '"':
            out.append('\\"')
        elif c == "\\":
            out.append("\\\\")
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif ord(c) < 0x20:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def compress(j: object) -> str:
    """`Json.compress`: no spaces, object keys in ascending order."""
    if j is True:
        return "true"
    if j is False:
        return "false"
    if j is None:
        return "null"
    if isinstance(j, int):
        return str(j)
    if isinstance(j, str):
        return lean_string(j)
    if isinstance(j, list):
        return "[" + ",".join(compress(x) for x in j) + "]"
    assert isinstance(j, dict)
    return "{" + ",".join(lean_string(k) + ":" + compress(j[k]) for k in sorted(j)) + "}"


# ---- the exporter (src/LeanExport/Basic.lean) --------------------------------------------------


class Exporter:
    """`LeanExport.M`: every name, level and expression written once, before its first use, at
    the index `getIdx` gives it (the map's size once its parts are written)."""

    def __init__(self, env: dict, out, omit: set):
        self.env = env
        self.out = out
        self.omit = omit
        self.names: dict = {(): 0}
        self.levels: dict = {ZERO: 0}
        self.exprs: dict = {}
        self.visited: set = set()

    def emit(self, obj: dict) -> None:
        self.out.append(compress(obj))

    def name(self, n: tuple) -> int:
        if n in self.names:
            return self.names[n]
        pre = self.name(n[:-1])
        last = n[-1]
        body = (
            {"num": {"pre": pre, "i": last}} if isinstance(last, int) else {"str": {"pre": pre, "str": last}}
        )
        idx = len(self.names)
        self.emit({**body, "in": idx})
        self.names[n] = idx
        return idx

    def level(self, lvl: tuple) -> int:
        if lvl in self.levels:
            return self.levels[lvl]
        tag = lvl[0]
        if tag == "succ":
            body: dict = {"succ": self.level(lvl[1])}
        elif tag in ("max", "imax"):
            body = {tag: [self.level(lvl[1]), self.level(lvl[2])]}
        else:
            body = {"param": self.name(lvl[1])}
        idx = len(self.levels)
        self.emit({**body, "il": idx})
        self.levels[lvl] = idx
        return idx

    def expr(self, e: tuple) -> int:
        if e in self.exprs:
            return self.exprs[e]
        tag = e[0]
        if tag == "bvar":
            body: dict = {"bvar": e[1]}
        elif tag == "sort":
            body = {"sort": self.level(e[1])}
        elif tag == "const":
            nidx = self.name(e[1])
            body = {"const": {"name": nidx, "us": [self.level(u) for u in e[2]]}}
        elif tag == "app":
            f = self.expr(e[1])
            body = {"app": {"fn": f, "arg": self.expr(e[2])}}
        elif tag == "strVal":
            body = {"strVal": e[1]}  # `dumpStrDeps`: the double's env has no Char.ofNat/String.ofList
        elif tag == "natVal":
            body = {"natVal": str(e[1])}
        else:
            raise AssertionError(f"the double exports no {tag}")
        idx = len(self.exprs)
        self.emit({**body, "ie": idx})
        self.exprs[e] = idx
        return idx

    def deps(self, e: tuple) -> None:
        for c in used_constants(e):
            if not is_double_name(c):
                self.constant(c)

    def constant(self, c: tuple) -> None:
        ci = self.env.get(c)
        if ci is None:
            panic(f"Constant {name_str(c)} not found in environment.")
            return
        if c in self.visited:
            return
        self.visited.add(c)
        kind = ci["kind"]
        if kind == "ctor":
            self.constant(ci["induct"])
            return
        if kind == "induct":
            self.inductive(ci)
            return
        self.deps(ci["type"])
        if "value" in ci:
            self.deps(ci["value"])
        n = self.name(ci["name"])
        lps = [self.name(p) for p in ci["levelParams"]]
        t = self.expr(ci["type"])
        if kind == "axiom":
            obj: dict = {"axiom": {"name": n, "levelParams": lps, "type": t, "isUnsafe": ci["isUnsafe"]}}
        else:
            v = self.expr(ci["value"])
            alls = [self.name(a) for a in ci["all"]]
            if kind == "thm":
                obj = {"thm": {"name": n, "levelParams": lps, "type": t, "value": v, "all": alls}}
            else:
                obj = {
                    "def": {
                        "name": n,
                        "levelParams": lps,
                        "type": t,
                        "value": v,
                        "hints": ci["hints"],
                        "safety": ci["safety"],
                        "all": alls,
                    }
                }
        if c not in self.omit:
            self.emit(obj)

    def inductive(self, ind: dict) -> None:
        self.deps(ind["type"])
        ctors = [self.env[k] for k in ind["ctors"] if k in self.env]
        for ctor in ctors:
            self.visited.add(ctor["name"])
            self.deps(ctor["type"])
        types = [
            {
                "name": self.name(ind["name"]),
                "levelParams": [],
                "type": self.expr(ind["type"]),
                "numParams": ind["numParams"],
                "numIndices": ind["numIndices"],
                "all": [self.name(a) for a in ind["all"]],
                "ctors": [self.name(k) for k in ind["ctors"]],
                "numNested": ind["numNested"],
                "isRec": ind["isRec"],
                "isReflexive": ind["isReflexive"],
                "isUnsafe": ind["isUnsafe"],
            }
        ]
        ctor_json = [
            {
                "name": self.name(k["name"]),
                "levelParams": [],
                "type": self.expr(k["type"]),
                "induct": self.name(k["induct"]),
                "cidx": k["cidx"],
                "numParams": k["numParams"],
                "numFields": k["numFields"],
                "isUnsafe": k["isUnsafe"],
            }
            for k in ctors
        ]
        if ind["name"] not in self.omit:
            self.emit({"inductive": {"types": types, "ctors": ctor_json, "recs": []}})


def used_constants(e: tuple) -> list:
    """`Expr.getUsedConstants`: each constant once, in the order met (function before argument)."""
    found: list = []
    stack = [e]
    while stack:
        x = stack.pop()
        tag = x[0]
        if tag == "const":
            if x[1] not in found:
                found.append(x[1])
        elif tag == "app":
            stack.append(x[2])
            stack.append(x[1])
    return found


def panic(msg: str) -> None:
    """A Lean `panic!`: the message on stderr, then on (or an abort when LEAN_ABORT_ON_PANIC is
    set, as `lean_panic_fn` does). The position in Basic.lean is not pinned by the double."""
    sys.stdout.flush()
    sys.stderr.write(f"PANIC at LeanExport.dumpConstant LeanExport.Basic:262:12: {msg}\n")
    sys.stderr.flush()
    if os.environ.get("LEAN_ABORT_ON_PANIC"):
        flush_out()
        signal.signal(signal.SIGABRT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGABRT)


_out = sys.stdout.buffer


def write_line(line: str) -> None:
    _out.write(line.encode("utf-8") + b"\n")


def flush_out() -> None:
    try:
        _out.flush()
    except OSError:
        pass


def io_error_text(exc: OSError, path: str) -> str:
    """`IO.Error.toString` of a file that could not be opened (lean4 src/Init/System/IOError.lean:
    `fopenErrorToString gist fn code details` writes `gist (error code: code)` and then
    `\n  file: fn`; a missing file is `noFileOrDirectory`, with no details)."""
    gist = "no such file or directory" if exc.errno == errno.ENOENT else (exc.strerror or "error").lower()
    return f"{gist} (error code: {exc.errno})\n  file: {path}"


def find_sysroot() -> str:
    """`findSysroot` (src/Lean/Util/Path.lean): LEAN_SYSROOT, else `lean --print-prefix` of the
    `lean` on PATH (the exporter's own child, which is why Lake passes the workspace's PATH)."""
    root = os.environ.get("LEAN_SYSROOT")
    if root is not None:
        return root
    try:
        done = subprocess.run(["lean", "--print-prefix"], capture_output=True, text=True, check=False)
    except OSError:
        raise LeanError("no such file or directory (error code: 2)") from None
    if done.returncode != 0:
        raise LeanError(f"process 'lean' exited with code {done.returncode}")
    return done.stdout.strip()


def export_metadata() -> str:
    return compress(
        {
            "meta": {
                "exporter": {"name": "lean4export", "version": "3.1.0"},
                "lean": {"version": LEAN_VERSION, "githash": "0" * 40},
                "format": {"version": "3.1.0"},
            }
        }
    )


def leanexport(argv: list[str]) -> int:
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # as a native process: the file-size cap kills it
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        sysroot = find_sysroot()
        lean_path = os.environ.get("LEAN_PATH")
        search_path = (lean_path.split(":") if lean_path is not None else []) + [
            os.path.join(sysroot, "lib", "lean")
        ]
        # src/LeanExport.lean: `--x` options (at least 3 characters) anywhere, then MODS [-- DECLS]
        opts = [a for a in argv if a.startswith("--") and len(a) >= 3]
        args = [a for a in argv if not (a.startswith("--") and len(a) >= 3)]
        if "--" in args:
            cut = args.index("--")
            imports, wanted = args[:cut], args[cut + 1 :]
        else:
            imports, wanted = args, None
        records, oleans = load_modules(imports, search_path)
    except LeanError as exc:
        sys.stderr.write(f"uncaught exception: {exc}\n")
        return 1
    del opts  # --export-mdata/--export-unsafe/--ignore-missing change nothing the double writes
    env = builtins() if "Init" in oleans else {}
    heights: dict = {}
    for module, rec in records:
        n = name_of(rec["name"])
        try:
            env[n] = canonical(rec) if module in TRUSTED_MODULES else derived(rec, heights)
        except (KeyError, TypeError, AttributeError):
            continue
    judge_lines: list[str] = []
    export_lines: list[str] = []
    for mod in imports:
        data = oleans.get(mod) or {}
        judge_lines += data.get("judge", [])
        export_lines += data.get("export", [])
    body: list[str] = []
    omit = {
        name_of(line.split(None, 1)[1].strip())
        for line in export_lines
        if line.split(None, 1)[0] == "omit" and len(line.split(None, 1)) > 1
    }
    ex = Exporter(env, body, omit)
    write_line(export_metadata())
    flush_out()
    garbage = False
    for line in export_lines:
        verb, _, arg = line.partition(" ")
        arg = arg.strip()
        if verb == "fail":
            flush_out()
            sys.stderr.write((arg or "leanexport failed (double)") + "\n")
            return 1
        if verb == "sleep":
            time.sleep(number(arg))
        elif verb == "crash":
            flush_out()
            signal.signal(signal.SIGSEGV, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGSEGV)
        elif verb == "flood":
            flood(ex, int(number(arg) * (1 << 20)))
        elif verb == "garbage":
            garbage = True
        elif verb == "redefine-spec":
            env[name_of(SPEC)] = defn(SPEC, SORT0, const(f"double.redefined.{SPEC}"))
            ex.constant(name_of(SPEC))
    targets = (
        [name_of(w) for w in wanted]
        if wanted is not None
        else [n for n in list(env) if not any(isinstance(c, str) and c.startswith("_") for c in n)]
    )
    for c in targets:
        ex.constant(c)
    carried = riding_directives(records, judge_lines, ex.visited)
    if carried:  # the `judge` directives that travel, carried as a string in the export
        d = name_of(DIRECTIVES_CONST)
        env[d] = defn(DIRECTIVES_CONST, const("double.String"), ("strVal", "\n".join(carried)), "opaque")
        ex.constant(d)
    if garbage:
        body.insert(len(body) // 2, '{"ie": this line is not JSON (toolchain double: export garbage)')
    for line in body:
        write_line(line)
    flush_out()
    return 0


#: The `judge` directives that state a verdict about some constant (what the kernel, the statement
#: check or the axiom walk would find in it). The others script the judge process itself.
VERDICT_VERBS = ("replay-fail", "statement-fail", "kind", "axioms", "no-axioms")


def riding_directives(records: list, judge_lines: list[str], exported: set) -> list[str]:
    """The `judge` directives that travel with an export whose constants are `exported`. A
    directive written before a declaration belongs to it and travels only when that declaration
    is in the export (`dumpConstant` writes the named constants' closure, src/LeanExport/Basic.lean).
    A verdict directive that belongs to no declaration describes nothing Lean would export, so
    it never travels; the other directives of the module (a scripted crash, sleep, ...) always do."""
    owned: dict = {}
    for _, rec in records:
        for line in rec.get("judge", []) if isinstance(rec.get("judge"), list) else []:
            owned.setdefault(line, []).append(name_of(rec["name"]))
    carried: list[str] = []
    for line in judge_lines:
        owners = owned.get(line)
        if owners is None:
            if line.split(" ", 1)[0] not in VERDICT_VERBS:
                carried.append(line)
        elif owners.pop(0) in exported:
            carried.append(line)
        if owners is not None and not owners:
            del owned[line]
    return carried


def comparator_closure(src: str, theorems: list[str]) -> list[str]:
    """For bin/lake: what real `lake comparator` would meet in the solution's export of
    `theorems` (`safeExport` of their closure, src/lake/Lake/CLI/Check.lean): `d LINE` for each
    `judge` directive riding with it (`riding_directives`), `a AXIOM` for `sorryAx` and for
    `Lean.ofReduceBool` (`native_decide`) when a constant of the closure uses them."""
    with open(src, encoding="utf-8", errors="replace") as f:
        text = f.read()
    module = src[: -len(".lean")].replace("/", ".") if src.endswith(".lean") else ""
    records = [(module, rec) for rec in analyze(text, set(), module)]
    by_name = {rec["name"]: rec for _, rec in records}
    seen: set = set()
    todo = [t for t in theorems if t in by_name]
    used: set = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        rec = by_name[name]
        refs: list = []
        for part in (rec.get("type") or {}, rec.get("value") or {}):
            refs += list(part.get("mentions") or [])
            if isinstance(part.get("ident"), str):
                refs.append(part["ident"])
        for r in refs:
            if r in by_name:
                todo.append(r)
            else:
                used.add(r)
    mark = "-- double: judge "
    judge_lines = [line[len(mark) :] for line in text.split("\n") if line.startswith(mark)]
    out = [f"d {line}" for line in riding_directives(records, judge_lines, {name_of(n) for n in seen})]
    return out + [f"a {ax}" for ax in ("sorryAx", "Lean.ofReduceBool") if ax in used]


def number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


def flood(ex: Exporter, nbytes: int) -> None:
    """Name lines, written straight out, until `nbytes` are written (a huge but well-formed
    export, to meet the grader's file-size cap)."""
    filler = "x" * 1000
    written, i = 0, 0
    saved = ex.out
    while written < nbytes:
        chunk: list[str] = []
        for _ in range(256):
            ex.out = chunk
            ex.name(("_double", "flood", f"{i}{filler}"))
            i += 1
        data = ("\n".join(chunk) + "\n").encode("utf-8")
        _out.write(data)
        written += len(data)
    ex.out = saved
    flush_out()


# ---- the reader (src/LeanExport/Parse.lean) ----------------------------------------------------


class ParseError(Exception):
    pass


class Terms:
    """Hash-consed, metadata-free expressions and levels: two parsed terms are `==` modulo
    metadata and binder names (what the judge's `sameExpr` compares) iff their ids are equal."""

    def __init__(self) -> None:
        self.ids: dict = {}
        self.nodes: list = []

    def mk(self, node: tuple) -> int:
        i = self.ids.get(node)
        if i is None:
            i = len(self.nodes)
            self.ids[node] = i
            self.nodes.append(node)
        return i

    def of_level(self, lvl: tuple) -> int:
        tag = lvl[0]
        if tag == "zero":
            return self.mk(("Lzero",))
        if tag == "succ":
            return self.mk(("Lsucc", self.of_level(lvl[1])))
        if tag in ("max", "imax"):
            return self.mk(("L" + tag, self.of_level(lvl[1]), self.of_level(lvl[2])))
        return self.mk(("Lparam", lvl[1]))

    def of_expr(self, e: tuple) -> int:
        """A tuple expression (the canonical forms) as a term id."""
        tag = e[0]
        if tag == "const":
            return self.mk(("const", e[1], tuple(self.of_level(u) for u in e[2])))
        if tag == "app":
            return self.mk(("app", self.of_expr(e[1]), self.of_expr(e[2])))
        if tag == "sort":
            return self.mk(("sort", self.of_level(e[1])))
        if tag == "strVal":
            return self.mk(("strVal", e[1]))
        raise AssertionError(tag)

    def consts(self, root: int) -> list:
        found: list = []
        seen: set = set()
        stack = [root]
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            node = self.nodes[i]
            tag = node[0]
            if tag == "const":
                if node[1] not in found:
                    found.append(node[1])
            elif tag == "app":
                stack += [node[2], node[1]]
            elif tag in ("lam", "forallE"):
                stack += [node[2], node[1]]
            elif tag == "letE":
                stack += [node[3], node[2], node[1]]
            elif tag == "proj":
                stack.append(node[3])
        return found

    def show(self, i: int, depth: int = 0) -> str:
        node = self.nodes[i]
        tag = node[0]
        if depth > 30:
            return "…"
        if tag == "const":
            return name_str(node[1])
        if tag == "app":
            fn, args = i, []
            while self.nodes[fn][0] == "app":
                args.append(self.nodes[fn][2])
                fn = self.nodes[fn][1]
            parts = [self.show(fn, depth + 1)]
            for a in reversed(args):
                s = self.show(a, depth + 1)
                parts.append(f"({s})" if " " in s else s)
            return " ".join(parts)
        if tag == "sort":
            return "Prop" if self.nodes[node[1]][0] == "Lzero" else "Sort _"
        if tag == "strVal":
            return json.dumps(node[1])
        return f"<{tag}>"


def is_nat(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def no_dup_keys(pairs: list) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate object key {json.dumps(k)}")
        out[k] = v
    return out


def bad_constant(_: str) -> object:
    raise ValueError("unexpected input")


KIND_OF = {
    "axiom": "axiom",
    "def": "def",
    "thm": "theorem",
    "opaque": "opaque",
    "quot": "quot",
    "induct": "inductive",
    "ctor": "constructor",
    "rec": "recursor",
}


class Reader:
    """`LeanExport.Parse`: maps from index to name, level and expression (index 0 is the
    anonymous name and the zero level), a constant map and the constants' order; every error
    is a `userError` with Parse.lean's message."""

    def __init__(self, terms: Terms):
        self.t = terms
        self.names: dict = {0: ()}
        self.levels: dict = {0: terms.of_level(ZERO)}
        self.exprs: dict = {}
        self.consts: dict = {}
        self.order: list = []

    def get_name(self, i: object) -> tuple:
        if i not in self.names or isinstance(i, bool):
            raise ParseError(f"Name not found {i}")
        return self.names[i]

    def get_level(self, i: object) -> int:
        if i not in self.levels or isinstance(i, bool):
            raise ParseError(f"Level not found {i}")
        return self.levels[i]

    def get_expr(self, i: object) -> int:
        if i not in self.exprs or isinstance(i, bool):
            raise ParseError(f"Expr not found {i}")
        return self.exprs[i]

    def add(self, table: dict, what: str, idx: int, value: object) -> None:
        if idx in table:
            raise ParseError(f"{what} index {idx} bound twice")
        table[idx] = value

    def parse(self, data: str) -> None:
        lines = data.split("\n")
        # `parseMdata` reads (and ignores) the first line; `parseItems` stops at end of input.
        for k, line in enumerate(lines[1:], start=1):
            if k == len(lines) - 1 and line == "":
                break
            self.item(line + ("\n" if k < len(lines) - 1 else ""))

    def item(self, line: str) -> None:
        try:
            obj = json.loads(line, object_pairs_hook=no_dup_keys, parse_constant=bad_constant)
        except ValueError as exc:
            pos = getattr(exc, "pos", 0)
            msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            if not line.strip():
                msg = "unexpected end of input"
            raise ParseError(f"Invalid JSON: offset {pos}: {msg}") from None
        except RecursionError:
            raise ParseError("Invalid JSON: offset 0: nesting too deep") from None
        if not isinstance(obj, dict):
            raise ParseError("Expected JSON object")
        kv = sorted(obj.items())
        if len(kv) == 2 and kv[1][0] in ("in", "ie", "il"):
            kv = [kv[1], kv[0]]
        keys = [k for k, _ in kv]
        if len(kv) == 2 and is_nat(kv[0][1]):
            idx, (tag, data) = kv[0][1], kv[1]
            if keys[0] == "in" and tag in ("str", "num"):
                self.add(self.names, "Name", idx, self.name_item(tag, data))
                return
            if keys[0] == "il" and tag in ("succ", "max", "imax", "param"):
                self.add(self.levels, "Level", idx, self.level_item(tag, data))
                return
            if keys[0] == "ie" and tag in EXPR_TAGS:
                self.add(self.exprs, "Expr", idx, self.expr_item(tag, data))
                return
        if len(kv) == 1 and isinstance(kv[0][1], dict):
            tag, data = kv[0]
            if tag in ("axiom", "def", "thm", "opaque", "quot"):
                self.constant(tag, data)
                return
            if tag == "inductive":
                self.inductive(data)
                return
        raise ParseError(f"Unknown export object with keys [{', '.join(sorted(obj))}]")

    def name_item(self, tag: str, data: object) -> tuple:
        if not isinstance(data, dict):
            raise ParseError("Name.str invalid" if tag == "str" else "Name.num invalid")
        if not is_nat(data.get("pre")):
            raise ParseError("Name.str invalid")  # sic, parseNameNum's message too
        if tag == "str":
            if not isinstance(data.get("str"), str):
                raise ParseError("Name.str invalid")
            return (*self.get_name(data["pre"]), data["str"])
        if not is_nat(data.get("i")):
            raise ParseError("Name.num invalid")
        return (*self.get_name(data["pre"]), data["i"])

    def level_item(self, tag: str, data: object) -> int:
        t = self.t
        if tag == "succ":
            if not is_nat(data):
                raise ParseError("Level.succ invalid")
            return t.mk(("Lsucc", self.get_level(data)))
        if tag in ("max", "imax"):
            if not (isinstance(data, list) and len(data) == 2 and all(is_nat(x) for x in data)):
                raise ParseError(f"Level.{tag} invalid")
            return t.mk(("L" + tag, self.get_level(data[0]), self.get_level(data[1])))
        if not is_nat(data):
            raise ParseError("Level.param invalid")
        return t.mk(("Lparam", self.get_name(data)))

    def fields(self, data: object, what: str, spec: dict) -> dict:
        if not isinstance(data, dict):
            raise ParseError(f"{what} invalid")
        for key, check in spec.items():
            if not check(data.get(key)):
                raise ParseError(f"{what} invalid")
        return data

    def expr_item(self, tag: str, data: object) -> int:
        t = self.t
        nat, string, boolean = is_nat, lambda x: isinstance(x, str), lambda x: isinstance(x, bool)
        if tag == "bvar":
            if not nat(data):
                raise ParseError("Expr.bvar invalid")
            return t.mk(("bvar", data))
        if tag == "sort":
            if not nat(data):
                raise ParseError("Expr.sort invalid")
            return t.mk(("sort", self.get_level(data)))
        if tag == "const":
            d = self.fields(data, "Expr.const", {"name": nat, "us": lambda x: isinstance(x, list)})
            n = self.get_name(d["name"])
            us = []
            for u in d["us"]:
                if not nat(u):
                    raise ParseError("Expr.const invalid")
                us.append(self.get_level(u))
            return t.mk(("const", n, tuple(us)))
        if tag == "app":
            d = self.fields(data, "Expr.app", {"fn": nat, "arg": nat})
            return t.mk(("app", self.get_expr(d["fn"]), self.get_expr(d["arg"])))
        if tag in ("lam", "forallE"):
            d = self.fields(
                data, f"Expr.{tag}", {"name": nat, "type": nat, "body": nat, "binderInfo": string}
            )
            self.get_name(d["name"])
            ty, body = self.get_expr(d["type"]), self.get_expr(d["body"])
            if d["binderInfo"] not in ("default", "implicit", "strictImplicit", "instImplicit"):
                raise ParseError(f"Invalid binder info: {d['binderInfo']}")
            return t.mk((tag, ty, body))  # binder names and annotations: not compared
        if tag == "letE":
            d = self.fields(
                data, "Expr.letE", {"name": nat, "type": nat, "value": nat, "body": nat, "nondep": boolean}
            )
            self.get_name(d["name"])
            return t.mk(
                ("letE", self.get_expr(d["type"]), self.get_expr(d["value"]), self.get_expr(d["body"]))
            )
        if tag == "proj":
            d = self.fields(data, "Expr.proj", {"typeName": nat, "idx": nat, "struct": nat})
            return t.mk(("proj", self.get_name(d["typeName"]), d["idx"], self.get_expr(d["struct"])))
        if tag == "natVal":
            if not (isinstance(data, str) and data.isascii() and data.isdigit()):
                raise ParseError("Expr.lit natVal invalid")
            return t.mk(("natVal", int(data)))
        if tag == "strVal":
            if not isinstance(data, str):
                raise ParseError("Expr.lit strVal invalid")
            return t.mk(("strVal", data))
        d = self.fields(data, "Expr.mdata", {"expr": nat, "data": lambda x: isinstance(x, dict)})
        return self.get_expr(d["expr"])  # `.mdata {} e`, and metadata is never compared

    def names_of(self, idxs: list) -> list:
        out = []
        for i in idxs:
            if not is_nat(i):
                raise ParseError("failed to convert to name idx")
            out.append(self.get_name(i))
        return out

    def add_const(self, ci: dict) -> None:
        if ci["name"] in self.consts:
            raise ParseError(f"Duplicate declaration: {name_str(ci['name'])}")
        self.consts[ci["name"]] = ci
        self.order.append(ci["name"])

    def constant(self, tag: str, data: dict) -> None:
        nat, arr = is_nat, lambda x: isinstance(x, list)
        what = {
            "axiom": "axiomInfo",
            "def": "defnInfo",
            "thm": "thmInfo",
            "opaque": "opaqueInfo",
            "quot": "quotInfo",
        }[tag]
        spec: dict = {"name": nat, "levelParams": arr, "type": nat}
        if tag == "axiom":
            spec["isUnsafe"] = lambda x: isinstance(x, bool)
        elif tag == "def":
            spec.update(
                value=nat, hints=lambda x: x is not None, safety=lambda x: isinstance(x, str), all=arr
            )
        elif tag == "thm":
            spec.update(value=nat, all=arr)
        elif tag == "opaque":
            spec.update(value=nat)
        else:
            spec["kind"] = lambda x: isinstance(x, str)
        self.fields(data, what, spec)
        if tag == "opaque":
            if not isinstance(data.get("isUnsafe", False), bool):
                raise ParseError("axiomInfo invalid")  # sic (parseOpaqueInfo)
            self.fields(data, what, {"all": arr})
            spec["all"] = arr
        ci: dict = {
            "kind": tag,
            "name": self.get_name(data["name"]),
            "levelParams": self.names_of(data["levelParams"]),
            "type": self.get_expr(data["type"]),
        }
        if "value" in spec:
            ci["value"] = self.get_expr(data["value"])
        if tag == "def":
            hints = data["hints"]
            if not (
                hints in ("opaque", "abbrev") or (isinstance(hints, dict) and is_nat(hints.get("regular")))
            ):
                raise ParseError("defnInfo invalid")
            if data["safety"] not in ("unsafe", "safe", "partial"):
                raise ParseError(f"Unknown safety parameter: {data['safety']}")
            ci["safety"] = data["safety"]
        if tag == "quot" and data["kind"] not in ("type", "ctor", "lift", "ind"):
            raise ParseError(f"unknown quot kind: {data['kind']}")
        if "all" in spec:
            ci["all"] = self.names_of(data["all"])
        self.add_const(ci)

    def inductive(self, data: dict) -> None:
        for key, msg in (("types", "no `types`"), ("ctors", "no `ctors`"), ("recs", "no `recs`")):
            if not isinstance(data.get(key), list):
                raise ParseError(f"Inductive invalid, {msg}")
        nat, arr, boolean = is_nat, lambda x: isinstance(x, list), lambda x: isinstance(x, bool)
        for d in data["types"]:
            if not isinstance(d, dict):
                raise ParseError("inductInfo invalid: Expected JSON object")
            self.fields(
                d,
                "inductInfo",
                {
                    "name": nat,
                    "levelParams": arr,
                    "type": nat,
                    "numParams": nat,
                    "numIndices": nat,
                    "all": arr,
                    "ctors": arr,
                    "numNested": nat,
                    "isRec": boolean,
                    "isUnsafe": boolean,
                    "isReflexive": boolean,
                },
            )
            self.add_const(
                {
                    "kind": "induct",
                    "name": self.get_name(d["name"]),
                    "levelParams": self.names_of(d["levelParams"]),
                    "type": self.get_expr(d["type"]),
                    "all": self.names_of(d["all"]),
                    "ctors": self.names_of(d["ctors"]),
                }
            )
        for d in data["ctors"]:
            self.fields(
                d,
                "ctorInfo",
                {
                    "name": nat,
                    "levelParams": arr,
                    "type": nat,
                    "induct": nat,
                    "cidx": nat,
                    "numParams": nat,
                    "numFields": nat,
                    "isUnsafe": boolean,
                },
            )
            self.add_const(
                {
                    "kind": "ctor",
                    "name": self.get_name(d["name"]),
                    "levelParams": self.names_of(d["levelParams"]),
                    "type": self.get_expr(d["type"]),
                    "induct": self.get_name(d["induct"]),
                }
            )
        for d in data["recs"]:
            self.fields(
                d,
                "recInfo",
                {
                    "name": nat,
                    "levelParams": arr,
                    "type": nat,
                    "all": arr,
                    "numParams": nat,
                    "numIndices": nat,
                    "numMotives": nat,
                    "numMinors": nat,
                    "k": boolean,
                    "rules": arr,
                    "isUnsafe": boolean,
                },
            )
            name, lps = self.get_name(d["name"]), self.names_of(d["levelParams"])
            ty, alls = self.get_expr(d["type"]), self.names_of(d["all"])
            rhs = []
            for rule in d["rules"]:
                self.fields(rule, "recInfo", {"ctor": nat, "nfields": nat, "rhs": nat})
                self.get_name(rule["ctor"])
                rhs.append(self.get_expr(rule["rhs"]))
            self.add_const(
                {"kind": "rec", "name": name, "levelParams": lps, "type": ty, "all": alls, "rules": rhs}
            )


EXPR_TAGS = ("bvar", "sort", "const", "app", "lam", "forallE", "letE", "proj", "natVal", "strVal", "mdata")


# ---- the judge's export mode -------------------------------------------------------------------


def expr_ids(ci: dict) -> list:
    return [ci["type"], *([ci["value"]] if "value" in ci else []), *ci.get("rules", [])]


def same_constant(t: dict, x: dict) -> bool:
    """Judge.lean's `sameConstant`: kind, universe parameters, type, and for definitions and
    opaques the value, all modulo metadata."""
    if t["kind"] != x["kind"] or t["levelParams"] != x["levelParams"] or t["type"] != x["type"]:
        return False
    if t["kind"] in ("def", "opaque"):
        return t.get("value") == x.get("value")
    return True


def as_terms(ci: dict, terms: Terms) -> dict:
    out = dict(ci)
    out["type"] = terms.of_expr(ci["type"])
    if "value" in ci:
        out["value"] = terms.of_expr(ci["value"])
    return out


def trusted_env(toolchain_lib: str, lib: str, allowed: list[str], terms: Terms) -> dict:
    """The trusted environment as the double knows it: its Init builtins and the canonical form
    of every constant the trusted modules record."""
    records, oleans = load_modules(allowed, [toolchain_lib, lib])
    env = {n: as_terms(ci, terms) for n, ci in builtins().items()} if "Init" in oleans else {}
    for _, rec in records:
        try:
            env[name_of(rec["name"])] = as_terms(canonical(rec), terms)
        except (KeyError, TypeError, AttributeError):
            continue
    return env


def judge_export(
    path: str,
    thm_text: str,
    spec_text: str,
    check_text: str,
    toolchain_lib: str,
    lib: str,
    allowed: list[str],
) -> list[str]:
    """Protocol lines for bin/lean: `d VERB ARGS` per carried directive, then either
    `v VERDICT REASON` (the reason already JSON-escaped) or `s REASON` (the statement check's
    rejection, which bin/lean reports after the scripted directives and the theorem's kind, in
    Judge.lean's order) and `k REPLAYED KIND AXIOM...`."""
    terms = Terms()
    reader = Reader(terms)
    out: list[str] = []

    def directives() -> None:
        out.extend(f"d {line}" for line in carried_directives(reader, terms))

    def verdict(v: str, reason: str, replayed: int = 0, kind: str = "-") -> list[str]:
        """Judge.lean's report: `replayed` is 0 until the replay starts, the reason clipped."""
        if len(reason) > 1000:
            reason = reason[:1000] + "...(clipped)"
        return [*out, f"v {v} {replayed} {kind} {lean_string(reason)[1:-1]}"]

    # A LeanError here propagates (exit 1, before the replay marker: bin/lean): the trusted modules
    # are the grader's, so a failure to read them is no verdict, as Judge.lean's `importModules`.
    trusted = trusted_env(toolchain_lib, lib, allowed, terms)
    try:
        with open(path, "rb") as f:
            data = f.read().decode("utf-8", "replace")
    except OSError as exc:
        return verdict("replay", f"malformed export: {io_error_text(exc, path)}")
    try:
        reader.parse(data)
    except ParseError as exc:
        directives()
        return verdict("replay", f"malformed export: {exc}")
    directives()
    consts = reader.consts
    new: list = []
    for name in reader.order:
        ci = consts[name]
        if name in trusted:
            if not same_constant(trusted[name], ci):
                return verdict("replay", f"the export's {name_str(name)} differs from the trusted one")
        elif ci["kind"] == "quot":
            return verdict("replay", f"the submission declares a quotient constant: {name_str(name)}")
        else:
            new.append(name)
    rejected = "the kernel rejected the submission: "

    def lookup(n: tuple) -> dict | None:  # the environment keeps the trusted constant of a name
        return trusted.get(n) or consts.get(n)

    replayed = sum(1 for n in new if not (n and n[0] == "_double"))
    for name in new:
        ci = consts[name]
        for e in expr_ids(ci):
            for c in terms.consts(e):
                if c not in consts and c not in trusted and not is_double_name(c):
                    return verdict("replay", f"{rejected}(kernel) unknown constant '{name_str(c)}'", replayed)
        if ci["kind"] == "thm":
            given = proves(name, ci["value"], terms, consts, trusted)
            if given is None or not defeq(given, ci["type"], terms, lookup):
                shown = terms.show(given) if given is not None else "?"
                return verdict(
                    "replay",
                    f"{rejected}(kernel) declaration type mismatch, '{name_str(name)}' "
                    f"has type\n  {shown}\nbut it is expected to have type\n  "
                    f"{terms.show(ci['type'])}",
                    replayed,
                )
    thm = name_of(thm_text)
    kind = KIND_OF[consts[thm]["kind"]] if thm in new else "-"
    if thm in new and consts[thm]["levelParams"]:
        return verdict("statement", f"{thm_text} has universe parameters", replayed, "theorem")
    statement: list[str] = []
    if kind == "theorem":
        statement = statement_check(consts[thm]["type"], thm_text, spec_text, check_text, terms, lookup)
    axioms: list[str] = []
    if thm in new:
        seen = {thm}
        todo = [thm]
        while todo:
            ci = consts[todo.pop(0)]
            if ci["kind"] == "axiom" and name_str(ci["name"]) not in axioms:
                axioms.append(name_str(ci["name"]))
            for e in expr_ids(ci):
                for c in terms.consts(e):
                    if c in consts and c not in seen:
                        seen.add(c)
                        todo.append(c)
    return [*out, *statement, " ".join(["k", str(replayed), kind, *axioms])]


def statement_check(
    thm_type: int, thm_text: str, spec_text: str, check_text: str, terms: Terms, lookup
) -> list[str]:
    """Judge.lean step 5: the kernel adds `theorem CHECK : SPEC := THM`, so THM's type must be
    definitionally equal to SPEC (the double's `defeq`, with delta). [] when it is, else one
    `s REASON` line (JSON-escaped) with the kernel's `declTypeMismatch` message
    (`KernelException.toMessageData`, lean4 src/Lean/Message.lean), clipped as Judge.lean clips."""
    spec = name_of(spec_text)
    if lookup(spec) is None:
        msg = f"(kernel) unknown constant '{spec_text}'"
    elif defeq(thm_type, terms.mk(("const", spec, ())), terms, lookup):
        return []
    else:
        msg = (
            f"(kernel) declaration type mismatch, '{check_text}' has type\n  "
            f"{terms.show(thm_type)}\nbut it is expected to have type\n  {spec_text}"
        )
    reason = f"{thm_text} does not have type {spec_text}: {msg}"
    if len(reason) > 1000:
        reason = reason[:1000] + "...(clipped)"
    return [f"s {lean_string(reason)[1:-1]}"]


def olean_statement(
    olean: str,
    thm_text: str,
    spec_text: str,
    check_text: str,
    toolchain_lib: str,
    lib: str,
    allowed: list[str],
) -> list[str]:
    """The olean judge's statement check (step 5, as in export mode): the submission's own
    declarations (its olean's `xdecl` records, in the form the exporter derives) over the trusted
    environment. [] when the theorem is Spec; `n` when the olean records no declaration of that
    name (bin/lean's `decl` line is a plain text match, which a theorem inside a block comment or
    under another namespace also meets, while Judge.lean's `find?` misses it: "declares no N").
    A LeanError (the double cannot read what it needs) propagates: no verdict, never a kinder one."""
    terms = Terms()
    trusted = trusted_env(toolchain_lib, lib, allowed, terms)
    data = read_olean(olean, "LeanCheckedNetwork.Submission")
    own: dict = {}
    heights: dict = {}
    for rec in data["records"]:
        try:
            own[name_of(rec["name"])] = as_terms(derived(rec, heights), terms)
        except (KeyError, TypeError, AttributeError):
            continue
    thm = own.get(name_of(thm_text))
    if thm is None or thm.get("kind") != "thm":
        return ["n"]

    def lookup(n: tuple) -> dict | None:
        return trusted.get(n) or own.get(n)

    return statement_check(thm["type"], thm_text, spec_text, check_text, terms, lookup)


def check_export(path: str) -> str | None:
    """`leanchecker --from-export`: every constant of the export replayed into an empty
    environment by the double's kernel; None, or why it refused."""
    terms = Terms()
    reader = Reader(terms)
    try:
        with open(path, "rb") as f:
            reader.parse(f.read().decode("utf-8", "replace"))
    except OSError as exc:
        return io_error_text(exc, path)
    except ParseError as exc:
        return str(exc)
    consts = reader.consts
    for name in reader.order:
        ci = consts[name]
        for e in expr_ids(ci):
            for c in terms.consts(e):
                if c not in consts and not is_double_name(c):
                    return f"(kernel) unknown constant '{name_str(c)}'"
        if ci["kind"] == "thm":
            given = proves(name, ci["value"], terms, consts, {})
            if given is None or not defeq(given, ci["type"], terms, consts.get):
                return f"(kernel) declaration type mismatch, '{name_str(name)}'"
    # A carried `judge replay-fail` stands for a kernel rejection of a constant in the export
    # (only a declaration in the exported closure carries one, `leanexport` above): a real
    # kernel refuses that constant whichever checker replays it.
    for line in carried_directives(reader, terms):
        verb, _, arg = line.partition(" ")
        if verb == "replay-fail":
            return arg.strip() or "double says no"
    return None


def carried_directives(reader: Reader, terms: Terms) -> list[str]:
    """The `judge` directive lines an export carries (`_double.judgeDirectives`), else []."""
    d = reader.consts.get(name_of(DIRECTIVES_CONST))
    if d and d["kind"] == "def" and terms.nodes[d["value"]][0] == "strVal":
        return [line for line in terms.nodes[d["value"]][1].split("\n") if line.strip()]
    return []


#: How many definitions `defeq` unfolds at most (a cycle of crafted definitions ends there).
MAX_UNFOLDS = 64


def unfold(i: int, terms: Terms, lookup) -> int | None:
    """Delta: the value of the definition a bare `const` names, else None. The kernel unfolds a
    definition's constant to its value (`is_delta`/`unfold_definition`, lean4
    src/kernel/type_checker.cpp); the double unfolds only a constant standing alone (its keyed
    statements take no arguments) and only definitions, never theorems, opaques or axioms."""
    node = terms.nodes[i]
    if node[0] != "const":
        return None
    ci = lookup(node[1])
    if ci is None or ci["kind"] != "def" or "value" not in ci:
        return None
    return ci["value"]


def defeq(a: int, b: int, terms: Terms, lookup) -> bool:
    """The double's definitional equality: structural equality (metadata and binder names aside,
    `Terms`), after unfolding definitions at the head of either side (`is_def_eq` with lazy delta
    reduction, lean4 src/kernel/type_checker.cpp). No beta, no congruence under applications:
    stricter than Lean, never kinder."""
    for _ in range(MAX_UNFOLDS):
        if a == b:
            return True
        ua = unfold(a, terms, lookup)
        if ua is not None:
            a = ua
            continue
        ub = unfold(b, terms, lookup)
        if ub is None:
            return False
        b = ub
    return a == b


def proves(own: tuple, value: int, terms: Terms, consts: dict, trusted: dict) -> int | None:
    """The type the double's kernel infers for a theorem's value: `double.proof T R...` proves
    T; a lone constant proves its declared type; anything else proves nothing."""
    node = terms.nodes[value]
    if node[0] == "const":
        if node[1] == own:
            return None
        other = consts.get(node[1]) or trusted.get(node[1])
        return other["type"] if other else None
    args = []
    while node[0] == "app":
        args.append(node[2])
        node = terms.nodes[node[1]]
    if node[0] == "const" and node[1] == ("double", "proof") and args:
        return args[-1]
    return None


# ---- entry points ------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    cmd, args = argv[0], argv[1:]
    if cmd == "trusted-check":  # the judge's `importModules` of the allowed modules, before its marker
        try:
            load_modules(args[2:], [args[0], args[1]])
        except LeanError as exc:
            print(str(exc).replace("\n", " "))
            return 1
        return 0
    if cmd == "record":
        src, imported = args[0], args[1:]
        try:
            # Read without newline translation: a lone carriage return is Lean's parse error
            # (`whitespace_error`); the analysis sees the lines as Python's universal newlines do.
            with open(src, encoding="utf-8", errors="replace", newline="") as f:
                exact = f.read()
            text = exact.replace("\r\n", "\n").replace("\r", "\n")
            # The module's name as bin/lean derives it from the source path.
            module = src[: -len(".lean")].replace("/", ".") if src.endswith(".lean") else ""
            lemma_at = lemma_command_line(text)
            if lemma_at is not None:  # bin/lean fails the build there
                print(f"xlemma {lemma_at}")
            if (bad := whitespace_error(exact)) is not None:  # and there
                print(f"xparse {bad[0]} {bad[1]} {bad[2]}")
            for rec in analyze(text, known_names(imported, frontend_search_path()), module):
                print("xdecl " + json.dumps(rec, ensure_ascii=False, separators=(",", ":")))
        except Exception as exc:  # the build must not fail on the double's own reading
            print(f"xerror {type(exc).__name__}: {exc}".replace("\n", " "))
        return 0
    if cmd == "parse-errors":  # bin/lake's builds: the first error Lean's parser would report
        with open(args[0], encoding="utf-8", errors="replace", newline="") as f:
            text = f.read()
        if (at := lemma_command_line(text)) is not None:
            print(f"{args[0]}:{at}:0: error: unexpected identifier; expected command")
        elif (bad := whitespace_error(text)) is not None:
            print(f"{args[0]}:{bad[0]}:{bad[1]}: error: {bad[2]}")
        return 0
    if cmd == "leanexport":
        return leanexport(args)
    if cmd == "comparator-closure":
        for line in comparator_closure(args[0], args[1:]):
            sys.stdout.buffer.write(line.encode("utf-8", "replace") + b"\n")
        return 0
    if cmd == "leanchecker":
        if "--from-export" not in args or args.index("--from-export") + 1 >= len(args):
            sys.stderr.write("leanchecker (toolchain double): only `--from-export FILE` is acted out\n")
            return 1
        why = check_export(args[args.index("--from-export") + 1])
        if why is not None:
            sys.stderr.write(f"uncaught exception: {why}\n")
            return 1
        return 0
    if cmd == "olean-statement":
        olean, thm, spec, check, toolchain_lib, lib = args[:6]
        try:
            lines = olean_statement(olean, thm, spec, check, toolchain_lib, lib, args[6:])
        except LeanError as exc:
            sys.stderr.write(f"uncaught exception: {exc}\n")
            return 1
        for line in lines:
            sys.stdout.buffer.write(line.encode("utf-8", "replace") + b"\n")
        return 0
    if cmd == "judge-export":
        path, thm, spec, check, toolchain_lib, lib = args[:6]
        sys.setrecursionlimit(100000)
        for line in judge_export(path, thm, spec, check, toolchain_lib, lib, args[6:]):
            sys.stdout.buffer.write(line.encode("utf-8", "replace") + b"\n")
        return 0
    sys.stderr.write(f"_double_export.py: unknown command {cmd}\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
