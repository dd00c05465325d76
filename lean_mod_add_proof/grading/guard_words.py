"""The guard's banned words (rule 4): the seed's own words, which match anywhere in the file,
comments and strings included, as the seed says, and the project's further words and parts,
which match in code only (the code view of `lexer.lex`).

A word counts when it is a whole *word*: a maximal run of `[A-Za-z0-9_]`, Lean's identifier
characters that join (`_` joins, so `native_ok` is one word and `elab` is no word of
`elab_as_elim`), or one dot-separated component of a name (`x.native`). Every other character
(`.`, `'`, `!`, `?`, Greek letters, subscripts) separates, which splits dotted names into their
components and can only find *more* words than Lean has names, never fewer. A keyword wins only
if it is at least as long as the identifier (`isToken`, lean4 `src/Lean/Parser/Basic.lean`), so
`sorry_x` is an identifier and `sorry` a keyword. Numbers are read without a separator after them
(`0xdeadbeefsorry` is the literal `0xdeadbeef`, then `sorry`), so a run that starts with a digit
is searched for banned words as substrings.

`BANNED_WORD_PARTS` are also banned, case-insensitively, as a strict part of a longer name split
at `_` and at camelCase humps; each part is kept only for what a whole-word match would miss (see
the tuple). `PART_EXEMPT_NAMES` are whole names that hold a part but name nothing that runs code.

Linear: one pass over the distinct runs, with C-level substring searches.
"""

from __future__ import annotations

import re

from lean_mod_add_proof.grading.guard_verdict import GuardVerdict, fail, line_of

#: Words rejected as whole words (case-sensitive), anywhere in the file. Entries starting with
#: `#` are enforced by the hash-command rule, which rejects every `#` command except
#: `ALLOWED_HASH_COMMANDS`. This exact tuple is shown to the model.
BANNED_WORDS: tuple[str, ...] = (
    # The original rules (`decide +native` -> `native`, `set_option debug.*` -> `debug`).
    "sorry", "admit", "native_decide", "native", "ofReduceBool", "axiom", "opaque",
    "implemented_by", "extern", "unsafe", "partial", "debug", "macro", "macro_rules", "elab",
    "elab_rules", "syntax", "notation", "infix", "infixl", "infixr", "prefix", "postfix",
    "initialize", "#eval", "run_cmd", "run_tac", "run_elab", "run_meta", "IO", "init", "evalExpr",
    # Required bypass defences.
    "skipKernelTC", "prelude", "sorryAx", "builtin_initialize",
    # Defence in depth (see guard.py's table of routes).
    "#exit", "export", "builtin", "builtin_init", "command_elab", "term_elab", "delab",
    "app_unexpander", "csimp", "simproc", "dsimproc", "binder_predicate", "declare_syntax_cat",
    "register_option", "register_simp_attr", "register_label_attr", "meta", "Meta", "Elab",
    "Environment", "addDecl", "evalDecl", "evalConst", "compileDecl", "ofReduceNat",
    "reduceBool", "reduceNat", "trustCompiler", "bv_decide", "unsafeCast", "unsafeBaseIO",
    "unsafeIO", "unsafeEIO", "dbg", "dbg_trace", "dbgTrace", "bootstrap",
    # Code-running and IO entry points found by red teams.
    "declare_simp_like_tactic", "unif_hint", "lcProof", "include_str", "timeit", "allocprof",
    "println", "by_elab", "idbg", "grind_propagator",
    # An alias a tactic configuration's literal could resolve to (rule 10).
    "renaming",
)  # fmt: skip

#: The seed's own forbidden words (the first group above): they match anywhere, comments and
#: strings included, as the seed says ("on whole words anywhere in the file, comments
#: included"). Every other banned word, part and rule is the project's and reads code only.
SEED_BANNED_WORDS: tuple[str, ...] = BANNED_WORDS[: BANNED_WORDS.index("skipKernelTC")]
#: The project's banned words: matched in code only (never in a comment or a string).
CODE_BANNED_WORDS: tuple[str, ...] = BANNED_WORDS[len(SEED_BANNED_WORDS) :]

#: Parts (lowercase) banned case-insensitively as a strict part of a longer name split at `_` and
#: camelCase humps. Each is kept only for what a whole-word match would miss:
BANNED_WORD_PARTS: tuple[str, ...] = (
    "unsafe",  # ptrAddrUnsafe, withPtrAddrUnsafe, isExclusiveUnsafe (unsafe Init constants)
    "builtin",  # builtin_simproc, builtin_dsimproc, builtin_grind_propagator, builtin_cbv_simproc
    "elab",  # declare_config_elab, show_term_elab, elab_stx_quot (code-running commands)
    "simproc",  # simproc_decl, cbv_simproc, cbv_simproc_decl (compiled simp procedures)
    "dsimproc",  # dsimproc_decl, builtin_dsimproc_decl
    "dbg",  # dbgTraceIfShared, dbgSleep, dbgStackTrace (side effects from pure code)
    "register",  # register_linter_set, register_try?_tactic, register_error_explanation (-> initialize)
    "declare",  # declare_config_elab, declare_command_config_elab, declare_uint_simprocs
)


#: Names holding a banned part that are allowed whole (docs/trust-model.md, decision on `elab`):
#: `elab_as_elim` is a declarative attribute (it changes how applications of an eliminator are
#: elaborated, with Lean's own elaborator), not a command or elaborator of the file.
PART_EXEMPT_NAMES: tuple[str, ...] = ("elab_as_elim",)

_WORD_CHARS = "A-Za-z0-9_"
_RUN_RE = re.compile(rf"[{_WORD_CHARS}]+")
_DIGIT_LINE_RE = re.compile(r"^[0-9].*$", re.MULTILINE)
_HUMP_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_WHOLE = frozenset(w for w in BANNED_WORDS if not w.startswith("#"))
_SEED_WHOLE = frozenset(w for w in SEED_BANNED_WORDS if not w.startswith("#"))
_SEED_HASH_RE = re.compile(
    "|".join(rf"{re.escape(w)}(?![{_WORD_CHARS}])" for w in SEED_BANNED_WORDS if w.startswith("#"))
)
_PARTS = frozenset(BANNED_WORD_PARTS)
_PART_EXEMPT = frozenset(PART_EXEMPT_NAMES)
_PART_SUBSTR_RE = re.compile("|".join(sorted(BANNED_WORD_PARTS, key=len, reverse=True)))
_WHOLE_SUBSTR_RE = re.compile("|".join(re.escape(w) for w in sorted(_WHOLE, key=len, reverse=True)))
_SEED_SUBSTR_RE = re.compile("|".join(re.escape(w) for w in sorted(_SEED_WHOLE, key=len, reverse=True)))


def _banned_part(run: str) -> str | None:
    """The banned part of `run` when split at `_` and camelCase humps, if any; a part that is the
    whole run does not count (that is the whole-word rule's business)."""
    for piece in run.split("_"):
        for hump in _HUMP_RE.findall(piece):
            low = hump.lower()
            if low in _PARTS and len(hump) < len(run):
                return low
    return None


def _first_run(text: str, wanted: dict[str, str]) -> tuple[int, str, str]:
    """The first run of `text` that is a key of `wanted` (scan stops there)."""
    for m in _RUN_RE.finditer(text):
        if m.group(0) in wanted:
            return m.start(), wanted[m.group(0)], m.group(0)
    run, word = next(iter(wanted.items()))  # unreachable: every key is a run of `text`
    return 0, word, run


def _part_hits(joined: str) -> dict[str, str]:
    """Runs (one per line of `joined`) holding a banned part at a hump boundary."""
    hits: dict[str, str] = {}
    lowered = joined.lower()
    pos = 0
    while (m := _PART_SUBSTR_RE.search(lowered, pos)) is not None:
        # A hump never starts at a lowercase letter right after a lowercase letter, so
        # `alternative` needs no closer look.
        i = m.start()
        if joined[i].islower() and i > 0 and joined[i - 1].islower():
            pos = i + 1
            continue
        start = joined.rfind("\n", 0, i) + 1
        end = joined.find("\n", m.end())
        end = len(joined) if end < 0 else end
        run = joined[start:end]
        if not run[0].isdigit() and (part := _banned_part(run)) is not None:
            hits.setdefault(run, part)
        pos = end + 1
    return hits


def _digit_run_hits(joined: str, patterns: tuple[tuple[re.Pattern[str], bool], ...]) -> dict[str, str]:
    """Runs starting with a digit: Lean may end a number literal inside them (`0xfsorry`), so any
    banned word (or part) of `patterns` (each with whether it is matched case-insensitively)
    anywhere in them counts."""
    hits: dict[str, str] = {}
    digit_runs = "\n".join(_DIGIT_LINE_RE.findall(joined))
    for pattern, fold in patterns:
        haystack = digit_runs.lower() if fold else digit_runs
        pos = 0
        while (m := pattern.search(haystack, pos)) is not None:
            start = digit_runs.rfind("\n", 0, m.start()) + 1
            end = digit_runs.find("\n", m.end())
            end = len(digit_runs) if end < 0 else end
            hits.setdefault(digit_runs[start:end], m.group(0))
            pos = end + 1
    return hits


def _banned_runs(text: str, seed_only: bool) -> dict[str, str]:
    """Runs of `text` holding a banned word (run -> word): the seed's whole words, or all whole
    words and parts."""
    runs = set(_RUN_RE.findall(text))
    joined = "\n".join(runs - _PART_EXEMPT)  # each distinct run is examined once
    if seed_only:
        wanted = {word: word for word in runs & _SEED_WHOLE}
        hit_sets = [_digit_run_hits(joined, ((_SEED_SUBSTR_RE, False),))]
    else:
        wanted = {word: word for word in runs & _WHOLE}
        hit_sets = [
            _part_hits(joined),
            _digit_run_hits(joined, ((_WHOLE_SUBSTR_RE, False), (_PART_SUBSTR_RE, True))),
        ]
    for hits in hit_sets:
        for run, word in hits.items():
            wanted.setdefault(run, word)
    return wanted


def _word_verdict(text: str, wanted: dict[str, str]) -> GuardVerdict:
    pos, word, run = _first_run(text, wanted)
    line = line_of(text, pos)
    inside = "" if run == word else f" (in '{run[:80]}')"
    return fail(f"forbidden word '{word}'{inside} on line {line}", word, line)


def check_seed_words(text: str) -> GuardVerdict | None:
    """Rule 4a: the seed's words, anywhere (comments and strings included)."""
    if (m := _SEED_HASH_RE.search(text)) is not None:
        line = line_of(text, m.start())
        return fail(
            f"forbidden word '{m.group(0)}' on line {line}",
            m.group(0),
            line,
        )
    if wanted := _banned_runs(text, seed_only=True):
        return _word_verdict(text, wanted)
    return None


def check_words(code: str) -> GuardVerdict | None:
    """Rule 4b: every banned word and part, in code (the seed's words were checked everywhere)."""
    if wanted := _banned_runs(code, seed_only=False):
        return _word_verdict(code, wanted)
    return None
