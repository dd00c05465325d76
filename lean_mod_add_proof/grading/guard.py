"""The text guard: a coarse, conservative filter that runs before Lean sees the submission.

Where it lives: this module is the entry point (`check_guard`, the order of the rules, failing
closed); `guard_words.py` holds the seed's words and the project's banned words and parts (rule
4); `guard_rules.py` the project's other rules and their lists; `guard_names.py` the reading of
declared names over Lean's tokens (rules 10 and 11); `lexer.py` and `lean_tokens.py` the split
into code, comments and literals, with the tokens of Lean's table that hold an apostrophe.

Why a text guard at all: the grader compiles the submission with the toolchain's own `lean`
(`lean --json -o Submission.olean ... Submission.lean`, no Lake; see `pipeline.py`), and
elaborating a file can compile and run code the file supplies: tactic configurations, syntax
extensions, `#eval`, attributes with code behind them. Only the guard stops that (the sandbox
bounds what such code could reach), so it errs towards rejecting: a false positive costs one
rollout, a false negative can cost the grader. The trusted judge (`Judge.lean`) never imports
the submission: it reads the submission's olean as data and replays it through the kernel, so
nothing of the submission runs there; the build is the only place the guard has to protect.
The guard judges exactly the text Lean gets: `check_guard` first turns CRLF and lone CR into LF
and adds a final newline, as the extractor does (`extract.as_lean_file`), so
`lean-mod-add-proof guard FILE` and the pipeline agree on every file. It fails closed: an
exception inside any rule rejects the file ("internal guard error"), it never passes it.

How the guard reads the text (lean4 `src/Lean/Parser/Basic.lean`):

- Identifiers are maximal runs of identifier characters; every ASCII letter, digit and `_` is one,
  so an ASCII run `[A-Za-z0-9_]+` that starts at a token boundary is never split by Lean. The
  guard treats every other character (`.`, `'`, `!`, `?`, Greek letters, subscripts, ...) as a
  separator, which splits dotted names into their components (`Lean.ofReduceBool`, `x.native`)
  and can only find *more* words than Lean does, never fewer. A keyword wins only if it is at
  least as long as the identifier (`isToken`), so `sorry_x` is an identifier, `sorry` a keyword.
- Numbers are lexed without needing a separator after them (`0xdeadbeefsorry` is the literal
  `0xdeadbeef` then the keyword `sorry`), so a run that starts with a digit is searched for
  banned words as substrings.
- `«…»` escapes any text into an identifier (`«sorry»`); every `«` and `»` in code is rejected.
- Comments, strings and character literals are found as Lean's lexer finds them
  (`grading/lexer.py`, which cites the lean4 functions it follows). The seed's own forbidden words
  (`SEED_BANNED_WORDS`) match in the whole text, comments and strings included, as the seed says.
  Every other rule reads the *code view*: the text with comments and the inside of literals
  blanked (positions and lines kept; a doc comment keeps its `/--` and `-/`, a literal its
  quotes). So a comment or a string never triggers one of the project's rules, nor hides a
  construct from one (a comment is whitespace, as in Lean), and no name or class is read out of
  one (issue 25). A file the lexer could read two ways, or with an unterminated comment, literal
  or `«`, is refused (Lean reports an error for the latter anyway).

Every route by which Lean compiles and runs something the file supplies while elaborating it,
and the rule that closes it ("C:" = read in the lean4 sources; "I:" = inferred):

- `#eval`, `#eval!`, `#guard`, `#guard_msgs` (runs a nested command), `#exit` (ends checking),
  every other `#` command (C: `src/Lean/Elab/BuiltinEvalCommand.lean`).
  Closed by rule 3: only `#check`, `#print`, `#reduce`.
- `run_cmd`, `run_elab`, `run_meta` (C: `BuiltinEvalCommand.lean`), `run_tac`, and the term
  `by_elab` (C: `syntax (name := byElab) "by_elab " doSeq : term` in `src/Init/NotationExtra.lean`,
  elaborated with `evalTerm`). Closed by rule 4 (words, and the part `elab`).
- `initialize`, `builtin_initialize`, `@[init]`, `@[builtin_init]`: run when a module importing
  the file starts (I: `src/Lean/Compiler/InitAttr.lean`). Nothing the grader runs imports the
  submission (the judge reads its olean without importing it), but these stay closed in case
  anything ever does: rule 4 and the attribute allow-list (rule 7).
- Syntax extensions whose handlers are code: `macro`, `macro_rules`, `elab`, `elab_rules`,
  `syntax`, `notation`, `infix*`, `prefix`, `postfix`, `declare_syntax_cat`, `binder_predicate`,
  `declare_simp_like_tactic` (an Init command expanding to `syntax` + `macro_rules`), `unif_hint`.
  Closed by rule 4.
- Code-running attributes: `@[macro]`, `@[command_elab]`, `@[term_elab]`, `@[tactic]`,
  `@[delab]`, `@[app_unexpander]`, parser attributes, `@[simproc]`, `@[csimp]`,
  `@[implemented_by]`, `@[extern]`, `@[export]`, `@[env_linter]`, and any nobody listed. Closed
  by rule 7: attributes are an allow-list of declarative ones.
- Procedures that tactics run: `simproc`, `dsimproc`, `simproc_decl`, `cbv_simproc` (run by
  `simp`/`cbv`), `grind_propagator` (run by `grind`), and their `builtin_*` forms. Closed by
  rule 4 (words, and the parts `simproc`, `dsimproc`, `builtin`).
- Commands that expand to `initialize` or an extension: `register_option`, `register_simp_attr`,
  `register_label_attr`, `register_linter_set`, `register_try?_tactic`, `declare_config_elab`,
  `declare_*_simprocs`, ... (all in the Init/Lean token tables). Closed by rule 4 (the parts
  `register` and `declare`).
- Tactic configuration values: `declare_config_elab` elaborators evaluate `(opt := e)`,
  `(config := e)` and even `(opt := by tac)` with `Meta.evalExpr' (safety := .unsafe)` (C:
  `src/Lean/Elab/Tactic/Config.lean`, `mkConfigElaborator`, `elabConfig`; `evalExpr'` adds the
  elaborated value as a definition, compiles it and runs it: `addAndCompile`, `evalConst` in
  `src/Lean/Meta/Eval.lean`). Closed by rule 9 (every `(name := value)` has a literal value) and,
  since even a literal is elaborated in the file's scope, by rules 4 and 10 (below).
- `decide +native`, `native_decide`, `bv_decide`: compile the `Decidable` instance and run it
  (`Lean.ofReduceBool`; in 4.35 a per-use `nativeEqTrue` axiom). Closed by rule 4: `native` as a
  whole word (so also `(native := true)` and `x.native`), `native_decide`, `bv_decide`,
  `ofReduceBool`, `reduceBool`.
- `include_str`: reads a file at build time (a builtin term in the Init token table; formerly
  `src/Lean/Widget/IncludeStr.lean`). Closed by rule 4.
- `unsafe` definitions and the term `unsafe e` (C: `src/Lean/Parser/Term.lean`), `unsafeCast`,
  `unsafeBaseIO`, `unsafeIO`, `unsafeEIO`, `ptrAddrUnsafe`. Closed by rule 4 (word and part).
- `%` term elaborators, elaboration internals that let a term pick its own expected type or
  context (C: `src/Lean/Parser/Term.lean`): `type_of%`, `ensure_type_of%`,
  `ensure_expected_type%`, `no_implicit_lambda%`, `clear%`, `decl_name%`, `with_decl_name%`,
  `let_mvar%`, `wait_if_type_mvar%`, `wait_if_type_contains_mvar%`, `wait_if_contains_mvar%`,
  `default_or_ofNonempty%`, `no_error_if_unused%`, `binop%`, `binop_lazy%`, `binrel%`,
  `binrel_no_prop%`, `leftact%`, `rightact%`, `unop%`, `for_in%`, `for_in'%`; the command
  `reset_grind_attrs%` (C: `src/Init/Grind/Attr.lean`); Mathlib's `eval%` runs code. Closed by
  rule 5: no identifier character right before `%`, which covers ones nobody listed.
- Compiler axioms (C: `src/Init/Prelude.lean`): `lcProof`, `lcCast`, `lcUnreachable`, `lcAny`,
  `lcErased`, `lcRealWorld`. They are usable in unsafe-evaluated code, and `lcCast` or
  `lcRealWorld` forges the `IO.RealWorld` token that running an `IO` action needs. Closed by
  rule 5: no name component `lc` followed by a capital letter.
- `idbg e`, the interactive debugger (a `do` element that talks to a client when the code runs).
  Closed by rule 4.
- `set_option trace.profiler.output` (writes a file at a chosen path) and other options. Closed by
  rule 8: an option allow-list.

Not routes (nothing the file supplies is compiled or run): `#reduce`, `decide`, `decide +kernel`
and `rfl` (kernel or `whnf` reduction: C: `doElab`/`doKernel` in `src/Lean/Elab/Tactic/Decide.lean`);
instance synthesis (unification; instances are terms, though an instance the file declares can be
what a configuration value's elaboration picks, see rule 10); `set_option` values (C: `optionValue`
is the atoms `true`/`false`, a string or a numeral, never resolved: `src/Lean/Parser/Command.lean`);
`deriving` (only builtin handlers, which write definitions; adding a handler needs `initialize`);
compiling a `def` to IR (the compiler runs, the definition does not); `termination_by`,
`decreasing_by` (tactics); structural recursion and `partial_fixpoint` (kernel-checked).

Rules (the first that fails gives the verdict; `_RULES` holds their order, lexing (12) right
after the characters):

1. Size: at most `MAX_SUBMISSION_BYTES` (1 MiB) of UTF-8 after newline normalisation.
2. Characters: no NUL or other control characters except newline and tab, no Unicode format
   characters (bidi overrides, zero-width characters, BOM), line/paragraph separators or lone
   surrogates, anywhere; no `«`/`»` in code.
3. Hash commands: `#` followed by a name in code is allowed only for `ALLOWED_HASH_COMMANDS`
   (`#eval` is also a seed word, so it is refused in comments too).
4. Banned words, as whole words, case-sensitive: `SEED_BANNED_WORDS` anywhere, `CODE_BANNED_WORDS`
   in code (`BANNED_WORDS` is both): a word counts when it
   is an identifier or one dot-separated component of one (`x.native`, `my.sorry`,
   `Lean.ofReduceBool`), but not when it is merely part of a longer name (`native_ok_free`,
   `initial_step`, `sorry_free_lemma` pass). `BANNED_WORD_PARTS` are also banned,
   case-insensitively, as a strict part of a longer name split at `_` and at camelCase humps;
   each part is kept only for the constants and commands named beside it in the tuple.
5. No identifier character right before `%` (`type_of%`, `x%7`; write `x % 7`; a number before
   `%`, as in `100%`, is fine) and no identifier component that is `lc` followed by a capital
   letter (`lcCast`).
6. Header: no `module` header; every `import` in code must read `import <allowed module>` and sit
   in the real header (only whitespace and comments before and between imports, as Lean's header
   parser requires; a doc comment ends the header), and the header must import
   `LeanCheckedNetwork.Weights`. `import` in a comment or a string is prose.
7. Attribute lists (`@[...]`, `attribute [...]`) may contain only `ALLOWED_ATTRIBUTE_WORDS` and
   numbers, or `grind` with its modifiers (`GRIND_ATTRIBUTE_WORDS`, `=`, `_=_`, `→`, `←`, ...),
   or `norm_cast` with its label (`NORM_CAST_ATTRIBUTE_WORDS`); no string or character literal
   inside (comments are whitespace). The one instance attribute allowed is
   `attribute [local instance] N` for `N` in `CLASSICAL_LOCAL_INSTANCES`.
8. `set_option` may only name `ALLOWED_OPTIONS` or options under `ALLOWED_OPTION_PREFIXES`.
9. Named values: in every `(name := value)` of the file the value must be a literal: `true`,
   `false`, a decimal numeral, or `{ field := literal, ... }` (fields separated by commas or
   newlines); `(priority := high|mid|low|default)` is also allowed and `(disch := tac)` /
   `(discharger := tac)` take any tactic (its own `(name := ...)` are checked the same way). A
   comment anywhere in between is whitespace; `+opt` and `-opt` need no check.
10. Literal names: `true` and `false` (`LITERAL_NAMES`) may not be declared, as Lean files a
   declaration (`guard_names.py`, over Lean's tokens: a name is what `identFnAux` reads, and a
   connective or binder symbol is never part of one). Declared are: the name after a
   `DECLARING_KEYWORDS` word or after `instance` (an optional `(priority := ...)` between; never
   `deriving instance`), with doc comments, attribute lists and
   `private`/`protected`/`noncomputable`/`nonrec` skipped, and the simple binders after it; the
   names of a binder group after an opening bracket and before a lone `:` (`(a true : Bool)`; a
   type ascription `(true : Bool)` reads the same, unless a relation or connective that a binder
   group never stands beside does: `b = (true : Bool)`, `(true : Bool) ∧ p`); the names after a
   binder keyword or symbol (`∀`, `∃`, `λ`, `fun`, `let`, `have`, `Σ`, `Σ'`) before the `:`,
   `,`, `=>` or `:=` that ends them; a constructor, after a lone `|` at bracket depth 0 of an
   `inductive`; a structure or class field, or a declaration after `where`, at the column of the
   block's first item after a complete term (Lean's layout: a line further right continues an
   application, and after `then`, `:=` or an operator a term must follow); a structure
   constructor (`where true ::`, `:= true ::` right after a structure's header). A name holds a
   literal name when one of its ASCII runs is one (`Net.true`, `_root_.false`, `true'`). A name
   that is only used is never read: `| true => ...` and `| true :: bs => ...` outside an
   inductive are patterns, `b = true → ∀ x : Nat, ...` binds only `x`, `:= true :: xs` outside a
   structure header is a list. Line breaks and comments between the parts never change a
   reading, but for an ascription's type, which is read on its line only (else: a binder).
11. Instances: each `instance` must declare an instance of exactly one of `INSTANCE_CLASSES`
   (`Decidable`, `DecidableEq`, `DecidablePred`, `DecidableRel`, `Inhabited`, `Nonempty`): the
   class is the head of the type after its first `:` outside brackets, once binders (`∀ x,`,
   `(x : T) →`, `[inst] →`, `{x} →`), arrows and enclosing parentheses are read off; the header
   ends at `:=`, `where`, a line at column 0 or the next `instance`, and one longer than
   `_MAX_INSTANCE_HEADER_CHARS` is unreadable. `deriving instance C, D for T` faces the same
   allow-list. Nothing may be declared under one of those names in any form rule 10 reads
   (`instance Decidable (_ : Unit) : ...` declares a constant named `Decidable`), since it would
   shadow the class. With no `instance` or `default_instance` attribute (rule 7, but for the one
   `Classical` instance), no other instance can be declared.
12. Lexing: the file splits into code, comments and literals one way only (`lexer.LexProblem`),
   with the tokens of Lean's table that hold an apostrophe read whole (`×'`, `Σ'`, `]'`, `⊕'`,
   `#'`; `lean_tokens.py`, checked against the toolchain's own table by `lean-check`).

Decisions, and why:

- Rule 9 covers term-level named arguments too (`f (x := y)`, `@Nat.rec (motive := ...)`,
  `Fin.mk (isLt := by decide)`). Lean parses a tactic's `(opt := e)` and a term's named argument
  `(x := e)` with the same shape, and only the tactic's is evaluated; telling them apart needs the
  full tactic grammar (which tactic names take configurations, where a term ends). Honest proofs
  here rarely need a non-literal named argument (`(n := 3)` and `(h := true)` still pass), so the
  rule applies everywhere: it cannot miss a configuration position, however a tactic spells it.
- With configuration values literal (rule 9) and literals meaning the library's `Bool.true`,
  `Bool.false` and `OfNat` instances (rule 10), nothing the file writes is run, so the old
  leading-dot ban (`.inl h`, `⟨0, .refl 0⟩`, `if let .some x := e`) is gone: a leading dot only
  resolves a name.
  `/.lake` paths in comments were rejected only through that rule; with no build-time code a path
  in the text is inert, so they pass. `@[grind]` and its modifiers are declarative (E-matching
  patterns and case splits) and are allowed.
- Part matching was cut to the parts that name something a whole-word match misses (see the
  tuple). `sorry`, `admit`, `native`, `initialize`, `macro`, `syntax`, `debug`, `extern` and
  `delab` are whole words only: the dangerous spellings are the words themselves or caught by
  other rules (`sorryAx` is a word, `@[extern]` an attribute, `debug.*` an option).
- The seed's words stay forbidden in comments and strings (the seed says so, and the prompt tells
  the model). The project's own rules read code only (issue 25): reading comments made honest
  proofs fail (`instance` in prose, `true:` in a results table, `#pairs = 25`) and let comments
  hide things from a reader that did not parse them (`instance (priority := high) /- : Inhabited
  -/ : OfNat Nat 100` was read as an `Inhabited` instance). With a lexer, a comment is whitespace.
- Literal names and instances (rules 4 and 10): rule 9 leaves `true`, `false` and numerals, and
  Lean elaborates even those in the file's scope. C: `elabConfig`
  (`src/Lean/Elab/Tactic/Config.lean`) puts the file's own syntax `v` into `{ opt := v : Cfg }` and
  elaborates it with `Term.elabTermEnsuringType` under `withLCtx {} {}` (no local hypotheses or
  local instances, so `have : OfNat Nat 5 := ...` in a proof does not reach it) but in the current
  namespace and `open`s. The identifier `true` goes to `resolveGlobalName`
  (`src/Lean/ResolveName.lean`): the surrounding namespaces first, innermost first
  (`resolveUsingNamespace`; a `private` declaration counts, a `protected` one not for an atomic
  name), and only when none has it the root, the `open`s and the aliases, where `true` is
  `Bool.true` by `export Bool (false true)` (`src/Init/Prelude.lean`). So `namespace N` then
  `def true : Bool := e` makes `(kernel := true)` compile and run `e`. A numeral is `OfNat.ofNat n` with
  an instance metavariable (`elabNumLit`, `src/Lean/Elab/BuiltinTerm.lean`) and a value of the
  wrong type is coerced (`CoeT`), both by instance synthesis, where an instance the file declares
  can win. An instance is filed under the class its type reduces to (C: `mkInstanceKey` in
  `src/Lean/Meta/Instances.lean`, `forallMetaTelescopeReducing` then `DiscrTree.mkPath`; I: with
  reducible unfolding), so an `abbrev` for `OfNat Nat 5`, or a class extending it (whose parent
  projection is an instance), defeats any deny-list of class names (`OfNat`, `Coe*`, `NatCast`,
  ...). Hence an allow-list (rule 11): an instance is filed under the class written in its header
  when that is one of `INSTANCE_CLASSES`, none of which a tactic option's value (a `Bool`, a
  number, a constructor) is elaborated through, and none of which the file may shadow. Honest
  proofs keep their `Decidable` and `Inhabited` instances. `+opt` and `-opt` are immune: `mkConfigItemViews`
  makes them `mkCIdentFrom item ``true` (``false), an identifier pre-resolved to `Bool.true`
  (`Bool.false`) with a reserved macro scope (C: `mkCIdentFrom` in Init's syntax helpers), and
  `resolveName` (`src/Lean/Elab/Term.lean`) takes a pre-resolved name over any scope lookup. The
  alias routes are `export` and `open ... renaming x → true` (the word `renaming`), both rule 4;
  `«true»` is rule 2. Rejected honest forms: `(true : Bool)` and `(f true : Bool)` (ascriptions
  read like binders: the tokens are the same) unless beside `=`, `≠`, `==`, `!=`, `∧`, `∨`,
  `&&`, `||` (or `↔` after), `deriving instance` of another class. The
  decisions of issue 38 (attributes, options, `#synth`, `deriving instance`, named arguments,
  `elab` in `elab_as_elim`) are in docs/trust-model.md with their sources. Instances of `Repr`,
  `BEq`, `Hashable`, `ToString`, `Ord`, `LT` stay out (decision and sources in
  `docs/trust-model.md`); `deriving Repr, BEq, ...` on a new type's declaration passes
  (its instances are for the new type, which no configuration field has). Not covered, on
  purpose: `True` and `False` (propositions, never a configuration value). The build runs in the
  sandbox and the judge reads only the export the build wrote (on the olean route, the olean as
  data), so this rule is defence in depth: code it missed could spend the build's time and memory,
  not decide the verdict.

Everything here is linear in the input: C-level regex scans with possessive quantifiers, one pass
over the distinct words, one lexing pass, and at most one scan per rule (every re-read is memoised
or bounded: instance headers, binder layers, interpolation depth; `guard_names.py` reads each run
of names once). No function here raises on any `str`.
"""

from __future__ import annotations

import functools

from lean_mod_add_proof.grading.extract import as_lean_file
from lean_mod_add_proof.grading.guard_rules import (
    ALLOWED_ATTRIBUTE_WORDS,
    ALLOWED_HASH_COMMANDS,
    ALLOWED_OPTION_PREFIXES,
    ALLOWED_OPTIONS,
    CLASSICAL_LOCAL_INSTANCES,
    DECLARING_KEYWORDS,
    GRIND_ATTRIBUTE_WORDS,
    GUARD_RULES,
    INSTANCE_CLASSES,
    LITERAL_NAMES,
    NORM_CAST_ATTRIBUTE_WORDS,
    TACTIC_VALUED_NAMES,
    check_attributes,
    check_chars,
    check_escapes,
    check_hash_commands,
    check_header,
    check_instances,
    check_lc_constants,
    check_literal_names,
    check_named_values,
    check_options,
    check_percent,
)
from lean_mod_add_proof.grading.guard_verdict import GuardVerdict, fail, line_of, ok
from lean_mod_add_proof.grading.guard_words import (
    BANNED_WORD_PARTS,
    BANNED_WORDS,
    CODE_BANNED_WORDS,
    PART_EXEMPT_NAMES,
    SEED_BANNED_WORDS,
    check_seed_words,
    check_words,
)
from lean_mod_add_proof.grading.lexer import Lexed, lex

__all__ = [
    "ALLOWED_ATTRIBUTE_WORDS",
    "ALLOWED_HASH_COMMANDS",
    "ALLOWED_OPTIONS",
    "ALLOWED_OPTION_PREFIXES",
    "BANNED_WORDS",
    "BANNED_WORD_PARTS",
    "CLASSICAL_LOCAL_INSTANCES",
    "CODE_BANNED_WORDS",
    "DECLARING_KEYWORDS",
    "GRIND_ATTRIBUTE_WORDS",
    "GUARD_RULES",
    "INSTANCE_CLASSES",
    "INTERNAL_ERROR_REASON",
    "LITERAL_NAMES",
    "MAX_SUBMISSION_BYTES",
    "NORM_CAST_ATTRIBUTE_WORDS",
    "PART_EXEMPT_NAMES",
    "SEED_BANNED_WORDS",
    "TACTIC_VALUED_NAMES",
    "GuardVerdict",
    "check_guard",
]

#: Largest submission the guard reads (bytes of UTF-8, after CRLF -> LF and a final newline).
MAX_SUBMISSION_BYTES = 1_048_576


# --- rule 1: size --------------------------------------------------------------------------------


def _too_large(size: int | None) -> GuardVerdict:
    shown = f" ({size} bytes of UTF-8)" if size is not None else ""
    return fail(
        f"submission is larger than 1 MiB{shown}; at most {MAX_SUBMISSION_BYTES} bytes are allowed",
        None,
        None,
    )


def _check_size(text: str) -> GuardVerdict | None:
    if len(text) > MAX_SUBMISSION_BYTES:  # every character is at least one byte
        return _too_large(None)
    size = len(text.encode("utf-8", "surrogatepass"))
    return _too_large(size) if size > MAX_SUBMISSION_BYTES else None


# --- rule 12: lexing -----------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _lexed(text: str) -> Lexed:
    """`lex(text)`, once per file (the lexing rule and the code view both need it)."""
    return lex(text)


def _check_lexing(text: str) -> GuardVerdict | None:
    """The file must split into code, comments and literals one way only (`lexer.lex`)."""
    problem = _lexed(text).problem
    if problem is None:
        return None
    line = line_of(text, problem.pos)
    return fail(f"{problem.reason} on line {line}", None, line)


# --- the guard -----------------------------------------------------------------------------------

#: The rules, in order. Those in `_ON_TEXT` read the whole text (the seed's words match in
#: comments and strings too); the project's rules read the code view (`lexer.lex`: comments and
#: the inside of literals blanked).
_RULES = (
    check_chars,
    _check_lexing,
    check_escapes,
    check_hash_commands,
    check_seed_words,
    check_words,
    check_percent,
    check_lc_constants,
    check_header,
    check_attributes,
    check_options,
    check_named_values,
    check_literal_names,
    check_instances,
)
_ON_TEXT = frozenset({"check_chars", "_check_lexing", "check_seed_words"})


#: Start of the reason of a verdict that an exception inside the guard produced.
INTERNAL_ERROR_REASON = "internal guard error"


def check_guard(text: str) -> GuardVerdict:
    """Run every rule of the module docstring on `text` (normalised as the pipeline normalises
    submissions); the first failure is the verdict. Fails closed: an exception inside a rule (a
    guard bug; none is expected on any `str`) rejects the file, naming the rule."""
    where = "normalising the text"
    try:
        if len(text) > 2 * MAX_SUBMISSION_BYTES:  # still over the limit after CRLF -> LF
            return _too_large(None)
        text = as_lean_file(text)
        where = "_check_size"
        if (verdict := _check_size(text)) is not None:
            return verdict
        code: str | None = None
        for rule in _RULES:
            if rule.__name__ not in _ON_TEXT and code is None:
                where = "lex"
                code = _lexed(text).code
            where = rule.__name__
            if (verdict := rule(text if rule.__name__ in _ON_TEXT else code)) is not None:  # type: ignore[arg-type]
                return verdict
    except Exception as exc:  # a guard bug must reject the file, never pass it or crash the grader
        return fail(
            f"{INTERNAL_ERROR_REASON} ({type(exc).__name__} in {where}); the file is rejected", None, None
        )
    return ok()
