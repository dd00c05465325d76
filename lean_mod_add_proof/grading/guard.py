"""The text guard: a coarse, conservative filter that runs before Lean sees the submission.

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
   numbers, or `grind` with its modifiers (`GRIND_ATTRIBUTE_WORDS`, `=`, `_=_`, `→`, `←`, ...);
   no string or character literal inside (comments are whitespace).
8. `set_option` may only name `ALLOWED_OPTIONS` or options under `ALLOWED_OPTION_PREFIXES`.
9. Named values: in every `(name := value)` of the file the value must be a literal: `true`,
   `false`, a decimal numeral, or `{ field := literal, ... }` (fields separated by commas or
   newlines); `(priority := high|mid|low|default)` is also allowed and `(disch := tac)` /
   `(discharger := tac)` take any tactic (its own `(name := ...)` are checked the same way). A
   comment anywhere in between is whitespace; `+opt` and `-opt` need no check.
10. Literal names: `true` and `false` (`LITERAL_NAMES`) may not be declared. A name is read (as
   in rule 9, then split into ASCII runs as in rule 4, so `Net.true`, `_root_.false` and `true'`
   all hold one) after each `DECLARING_KEYWORDS` word (`def`, `theorem`, `lemma`, `abbrev`,
   `structure`, `class`, `inductive`; `where` and `rec` for auxiliary definitions and fields) and
   after each lone `|` (a constructor), skipping whitespace, comments (nested; doc comments too),
   attribute lists and `private`/`protected`/`noncomputable`/`nonrec`; it must not hold a
   literal name. After `|` a match alternative is fine: a bar whose nearest keyword before it is
   not `inductive` and whose chain of alternatives ends in `=>` or `,` (`| true => ...`, the
   or-pattern `| true | false => e`). Also rejected: a literal name before a lone `:` (a field,
   binder or ascription, `(true : Bool)`), in a run of names before one inside brackets or on one
   line (`(a true : Bool)`), as a structure or class field whatever follows it (`true other :
   Bool`, `true (n : Nat) : Bool`, `true := e`; a name that starts a line of a structure's body
   after code that ends a term), and as a structure constructor (`where true ::`,
   `:= true ::`). Line breaks and comments between the parts never change a reading.
11. Instances: each `instance` must declare an instance of exactly one of `INSTANCE_CLASSES`
   (`Decidable`, `DecidableEq`, `DecidablePred`, `DecidableRel`, `Inhabited`, `Nonempty`): the
   class is the head of the type after its first `:` outside brackets, once binders (`∀ x,`,
   `(x : T) →`, `[inst] →`, `{x} →`), arrows and enclosing parentheses are read off; the header
   ends at `:=`, `where`, a line at column 0 or the next `instance`, and one longer than
   `_MAX_INSTANCE_HEADER_CHARS` is unreadable. `deriving instance C, D for T` faces the same
   allow-list. Nothing may be declared, or be a field, binder or constructor, under one of those
   names, in any form rule 10 reads (it would shadow the class). With no `instance` or
   `default_instance` attribute (rule 7), no other instance can be declared.
12. Lexing: the file splits into code, comments and literals one way only (`lexer.LexProblem`).

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
  read like binders), `:= true :: xs` (read like a structure constructor; write `[true] ++ xs`),
  a structure line starting with `true` after a complete term, `deriving instance` of another
  class. Instances of `Repr`, `BEq`, `Hashable`, `ToString`, `Ord`, `LT` stay out (decision and
  sources in `docs/trust-model.md`); `deriving Repr, BEq, ...` on a new type's declaration passes
  (its instances are for the new type, which no configuration field has). Not covered, on
  purpose: `True` and `False` (propositions, never a configuration value). The build runs in the
  sandbox and the judge reads only the export the build wrote (on the olean route, the olean as
  data), so this rule is defence in depth: code it missed could spend the build's time and memory,
  not decide the verdict.

Everything here is linear in the input: C-level regex scans with possessive quantifiers, one pass
over the distinct words, one lexing pass, and at most one scan per rule (every re-read is memoised
or bounded: instance headers, binder layers, interpolation depth). No function here raises on any
`str`.
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from lean_mod_add_proof.grading.extract import as_lean_file
from lean_mod_add_proof.grading.lean_names import ALLOWED_IMPORTS, REQUIRED_IMPORT
from lean_mod_add_proof.grading.lexer import Lexed, lex


@dataclass(frozen=True)
class GuardVerdict:
    """The guard's decision. `word` is the offending word or character, `line` is 1-based."""

    passed: bool
    reason: str
    word: str | None = None
    line: int | None = None


#: Largest submission the guard reads (bytes of UTF-8, after CRLF -> LF and a final newline).
MAX_SUBMISSION_BYTES = 1_048_576

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
    # Defence in depth (see the module docstring's table).
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

#: The only `#` commands allowed (all read-only).
ALLOWED_HASH_COMMANDS: tuple[str, ...] = ("#check", "#print", "#reduce")

#: The only words allowed inside `@[...]` and `attribute [...]` (numbers are allowed too).
ALLOWED_ATTRIBUTE_WORDS: tuple[str, ...] = (
    "simp", "reducible", "irreducible", "semireducible", "local", "scoped", "inline",
    "noinline", "specialize", "match_pattern", "ext", "congr", "refl",
    "symm", "induction_eliminator", "cases_eliminator", "high", "mid", "low",
    "default", "priority",
)  # fmt: skip

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
    "diagnostics.threshold",
)  # fmt: skip
#: Option families `set_option` may set (printing and linters only).
ALLOWED_OPTION_PREFIXES: tuple[str, ...] = ("pp.", "linter.")

#: Names whose `(name := value)` takes a tactic, not a value (`simp (disch := omega)`).
TACTIC_VALUED_NAMES: tuple[str, ...] = ("disch", "discharger")

#: The identifiers a literal configuration value (rule 9) is written with, which Lean resolves in
#: the file's scope: no declaration may hold one as a name component (rule 10).
LITERAL_NAMES: tuple[str, ...] = ("true", "false")

#: Words after which the next name is a new declaration's (rule 10); `instance`, `opaque` and
#: `axiom` are banned words, so rule 4 has already rejected them.
DECLARING_KEYWORDS: tuple[str, ...] = (
    "def", "theorem", "lemma", "abbrev", "structure", "class", "inductive", "where", "rec",
)  # fmt: skip

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
    "name split at `_` or a capital letter (`simproc_decl`, `ptrAddrUnsafe`). Passes: "
    "`-- meta-reasoning: export the lemma`. Fails: `-- no sorry needed`, `def e := Environment`.",
    f"The only `#` commands allowed are {', '.join(f'`{c}`' for c in ALLOWED_HASH_COMMANDS)}. "
    "Passes: `#check Nat.add_comm`, `-- #pairs = 49`. Fails: `#exit`.",
    "Attributes (`@[...]`, `attribute [...]`) may only use "
    f"{', '.join(f'`{w}`' for w in ALLOWED_ATTRIBUTE_WORDS)} and numbers, or `grind` with its "
    "modifiers (`@[grind =]`, `@[grind →]`, `@[grind cases]`, ...). Passes: `@[simp] theorem ...`. "
    "Fails: `@[instance] def ...`.",
    f"`set_option` may only set {', '.join(f'`{o}`' for o in ALLOWED_OPTIONS)} and options under "
    f"{', '.join(f'`{p}`' for p in ALLOWED_OPTION_PREFIXES)}. Passes: `set_option maxRecDepth 4000 in`. "
    "Fails: `set_option trace.profiler true`.",
    "Tactic options and named arguments take literal values only: `+opt`, `-opt`, "
    "`(opt := true)`, `(opt := false)`, `(opt := 100)` or `(config := { opt := true, n := 5 })`; "
    "any other `(name := value)` is rejected (`(disch := tactic)` is allowed). Passes: "
    "`decide (kernel := true)`. Fails: `decide (kernel := myFlag)`.",
    "No name may be directly followed by `%` (`type_of%`-style elaborators are forbidden) and no "
    "compiler-internal `lc…` names (`lcProof`, `lcCast`). Passes: `(a + b) % 7`. Fails: `b%7`.",
    "Nothing may be named `true` or `false`, nor like a class below: no declaration, constructor, "
    "structure field or constructor, or binder of that name. Passes: `| true | false => rfl` in a "
    "match, `(h : b = true)`. Fails: `def true : Bool := false`, `structure S where true x : Bool`, "
    "`(true : Bool)`.",
    "`instance` and `deriving instance` may only declare instances of "
    f"{', '.join(f'`{c}`' for c in INSTANCE_CLASSES)}: the class is the head of the instance's "
    "type after its binders; no `@[instance]` (tactic options are resolved in the file's scope). "
    "Passes: `instance : ∀ n, Decidable (P n) := ...`, `deriving instance DecidableEq for T`. "
    "Fails: `instance : OfNat Nat 5 := ⟨0⟩`.",
    "Comments, strings and character literals must be closed, and a comment may not start right "
    "after an operator character. Passes: `a < b -- note`. Fails: `a <--b`, an unclosed `/-`.",
    "No `«»` identifier escapes in code, no `module` header, no control, zero-width or "
    "bidirectional characters anywhere. Passes: `-- «quoted»`. Fails: `def «x» := 1`.",
)

_WORD_CHARS = "A-Za-z0-9_"
_WORD_SET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_RUN_RE = re.compile(rf"[{_WORD_CHARS}]+")
_DIGIT_LINE_RE = re.compile(r"^[0-9].*$", re.MULTILINE)
_HUMP_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_HASH_RE = re.compile(rf"#([A-Za-z_][{_WORD_CHARS}]*)")
_IMPORT_NAME_RE = re.compile(r"[ \t\n]+([^\s]*)")  # a comment (blanked) may sit in between
_WS_RE = re.compile(r"[ \n\t]*")
_MODULE_RE = re.compile(rf"module(?![{_WORD_CHARS}])")
_BRACKET_RE = re.compile(r"[\[\]]")
_OPTION_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_'!?]*(?:\.[A-Za-z_][A-Za-z0-9_'!?]*)*")

_WHOLE = frozenset(w for w in BANNED_WORDS if not w.startswith("#"))
_SEED_WHOLE = frozenset(w for w in SEED_BANNED_WORDS if not w.startswith("#"))
_SEED_HASH_RE = re.compile(
    "|".join(rf"{re.escape(w)}(?![{_WORD_CHARS}])" for w in SEED_BANNED_WORDS if w.startswith("#"))
)
_PARTS = frozenset(BANNED_WORD_PARTS)
_PART_SUBSTR_RE = re.compile("|".join(sorted(BANNED_WORD_PARTS, key=len, reverse=True)))
_WHOLE_SUBSTR_RE = re.compile("|".join(re.escape(w) for w in sorted(_WHOLE, key=len, reverse=True)))
_SEED_SUBSTR_RE = re.compile("|".join(re.escape(w) for w in sorted(_SEED_WHOLE, key=len, reverse=True)))
_ATTR_OK = frozenset(ALLOWED_ATTRIBUTE_WORDS)
_GRIND_OK = frozenset(GRIND_ATTRIBUTE_WORDS)
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

# Rule 10. A `|` that is not the second of `||` or `<|` (a
# name never starts with `|` or `>`, so `||`, `|||` and `|>` need no more); the declaring keywords;
# block-comment and bracket tokens, matched once per file.
_BAR_RE = re.compile(r"(?<![|<])\|")
_DECLARING_RE = re.compile(rf"(?<![{_WORD_CHARS}.])(?:{'|'.join(DECLARING_KEYWORDS)})(?![{_WORD_CHARS}])")
_DECL_NAME_RE = re.compile(_NAME)
_BLOCK_TOKEN_RE = re.compile(r"/-|-/")
_NEWLINE_RE = re.compile(r"\n")
_LITERALS = frozenset(LITERAL_NAMES)
_NAME_MODIFIERS = frozenset({"private", "protected", "noncomputable", "nonrec"})

# Rule 7: where an attribute list may start (`attribute` is checked for a following `[`).
_ATTR_START_RE = re.compile(rf"@\[|(?<![{_WORD_CHARS}])attribute(?![{_WORD_CHARS}])")


def _ok() -> GuardVerdict:
    return GuardVerdict(True, "ok")


def _fail(reason: str, word: str | None, line: int | None) -> GuardVerdict:
    return GuardVerdict(False, reason, word, line)


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


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


# --- rule 1: size --------------------------------------------------------------------------------


def _too_large(size: int | None) -> GuardVerdict:
    shown = f" ({size} bytes of UTF-8)" if size is not None else ""
    return _fail(
        f"submission is larger than 1 MiB{shown}; at most {MAX_SUBMISSION_BYTES} bytes are allowed",
        None,
        None,
    )


def _check_size(text: str) -> GuardVerdict | None:
    if len(text) > MAX_SUBMISSION_BYTES:  # every character is at least one byte
        return _too_large(None)
    size = len(text.encode("utf-8", "surrogatepass"))
    return _too_large(size) if size > MAX_SUBMISSION_BYTES else None


# --- rule 2: characters --------------------------------------------------------------------------


def _char_name(ch: str) -> str:
    if unicodedata.category(ch) == "Cs":
        return "(lone surrogate)"
    return unicodedata.name(ch, "(unnamed)")


def _check_chars(text: str) -> GuardVerdict | None:
    bad = {
        ch
        for ch in set(text)
        if ch in _BAD_ASCII or (ord(ch) > 0x7F and unicodedata.category(ch) in _BAD_CATEGORIES)
    }
    if not bad:
        return None
    pos = min(text.find(ch) for ch in bad)
    ch = text[pos]
    line = _line_of(text, pos)
    if ch == "\x00":
        return _fail(f"NUL character on line {line}", ch, line)
    return _fail(f"forbidden character U+{ord(ch):04X} {_char_name(ch)} on line {line}", ch, line)


def _check_escapes(code: str) -> GuardVerdict | None:
    """`«»` in code (in a comment or a string they are inert)."""
    positions = [p for p in (code.find("«"), code.find("»")) if p >= 0]
    if not positions:
        return None
    pos = min(positions)
    line = _line_of(code, pos)
    return _fail(f"identifier escape '{code[pos]}' on line {line} is not allowed", code[pos], line)


# --- rule 3: hash commands -----------------------------------------------------------------------


def _check_hash_commands(text: str) -> GuardVerdict | None:
    for m in _HASH_RE.finditer(text):
        if m.group(1) not in _HASH_OK:
            word = "#" + m.group(1)
            line = _line_of(text, m.start())
            allowed = ", ".join(ALLOWED_HASH_COMMANDS)
            return _fail(f"forbidden command '{word[:80]}' on line {line} (allowed: {allowed})", word, line)
    return None


# --- rule 4: banned words ------------------------------------------------------------------------


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
    joined = "\n".join(runs)  # each distinct run is examined once
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
    line = _line_of(text, pos)
    inside = "" if run == word else f" (in '{run[:80]}')"
    return _fail(f"forbidden word '{word}'{inside} on line {line}", word, line)


def _check_seed_words(text: str) -> GuardVerdict | None:
    """Rule 4a: the seed's words, anywhere (comments and strings included)."""
    if (m := _SEED_HASH_RE.search(text)) is not None:
        line = _line_of(text, m.start())
        return _fail(
            f"forbidden word '{m.group(0)}' on line {line}",
            m.group(0),
            line,
        )
    if wanted := _banned_runs(text, seed_only=True):
        return _word_verdict(text, wanted)
    return None


def _check_words(code: str) -> GuardVerdict | None:
    """Rule 4b: every banned word and part, in code (the seed's words were checked everywhere)."""
    if wanted := _banned_runs(code, seed_only=False):
        return _word_verdict(code, wanted)
    return None


# --- rule 5: `%` elaborators and `lc` constants --------------------------------------------------


def _check_percent(text: str) -> GuardVerdict | None:
    m = _PERCENT_RE.search(text)
    if m is None:
        return None
    end = m.end() - 1
    start = end
    while start > 0 and end - start < 80 and _is_name_char(text[start - 1]):
        start -= 1
    word = text[start:end] + "%"
    line = _line_of(text, end)
    return _fail(
        f"'{word}' on line {line}: a name right before '%' is not allowed (`name%` is a term "
        "elaborator such as `type_of%`; write `a % b` with spaces)",
        word,
        line,
    )


def _check_lc_constants(text: str) -> GuardVerdict | None:
    m = _LC_RE.search(text)
    if m is None:
        return None
    word = _RUN_RE.match(text, m.start()).group(0)  # type: ignore[union-attr]
    line = _line_of(text, m.start())
    return _fail(
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
        allowed = _GRIND_OK if names[:1] == ["grind"] else _ATTR_OK
        for word in words:
            if word in allowed or word.isdigit() or (allowed is _GRIND_OK and set(word) == {"_"}):
                continue
            return word
    return None


def _check_attributes(text: str) -> GuardVerdict | None:
    checked_to = 0  # lists nested in a checked one were checked with it
    for start, bracket in _attribute_lists(text):
        if start < checked_to:
            continue
        if bracket is None:
            line = _line_of(text, start)
            return _fail(f"a comment after 'attribute' on line {line} is not allowed", "attribute", line)
        close = _closing_bracket(text, bracket)
        if close < 0:
            line = _line_of(text, start)
            return _fail(f"unterminated attribute list on line {line}", "@[", line)
        body = text[bracket + 1 : close]
        if any(s in body for s in ('"', "'", "--", "/-")):
            line = _line_of(text, start)
            return _fail(f"comment or string inside the attribute list on line {line}", "@[", line)
        if (word := _bad_attribute_word(body)) is not None:
            line = _line_of(text, start)
            return _fail(
                f"attribute word '{word[:80]}' on line {line} is not allowed "
                f"(allowed: {', '.join(ALLOWED_ATTRIBUTE_WORDS)}, numbers, and `grind` with its modifiers)",
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


def _check_header(text: str) -> GuardVerdict | None:
    allowed = ", ".join(ALLOWED_IMPORTS)
    imports = list(_word_positions(text, "import"))
    for at in imports:
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
    header = _header_imports(text)
    modules = {_IMPORT_NAME_RE.match(text, p + 6).group(1) for p in header}  # type: ignore[union-attr]
    if REQUIRED_IMPORT not in modules:
        return _fail(f"missing required 'import {REQUIRED_IMPORT}' in the file header", "import", None)
    in_header = set(header)
    for at in imports:
        if at not in in_header:
            line = _line_of(text, at)
            return _fail(
                f"'import' on line {line} is outside the file header (imports must come first, before "
                "any declaration or doc comment)",
                "import",
                line,
            )
    return None


# --- rule 8: options -----------------------------------------------------------------------------


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


# --- rule 9: named values ------------------------------------------------------------------------


def _literal_value_at(text: str, pos: int, name: str) -> bool:
    """Whether a literal value and the closing `)` follow `:=` (ending at `pos`)."""
    return bool(
        _LITERAL_VALUE_RE.match(text, pos)
        or _STRUCT_VALUE_RE.match(text, pos)
        or (name == "priority" and _PRIORITY_VALUE_RE.match(text, pos))
    )


def _check_named_values(text: str) -> GuardVerdict | None:
    for m in _NAMED_HEAD_RE.finditer(text):
        name = m.group("name")
        if name in _TACTIC_VALUED or _literal_value_at(text, m.end(), name):
            continue
        line = _line_of(text, m.start())
        return _fail(
            f"'({name[:80]} := ...)' on line {line} must have a literal value (`true`, `false`, a "
            "number, or `{ field := literal, ... }`): tactic options are compiled and run while the "
            "file builds (write `+opt`/`-opt` for a yes/no option)",
            name,
            line,
        )
    return None


# --- rule 10: literal names ----------------------------------------------------------------------


class _Skipper:
    """Skips what may sit before a declared name (whitespace, comments, attribute lists and
    modifiers) as Lean reads it. Every block comment and bracket is matched once, on first need,
    so each skip costs only the whitespace and modifiers it passes: linear in total, however the
    comments nest. An unterminated comment runs to the end of the text, as in Lean."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._ends: dict[int, int] = {}  # `/-` or `[` -> just after its closer
        self._newlines: list[int] = []  # every newline, then the end of the text
        self._indexed = False

    def _index(self) -> None:
        if self._indexed:
            return
        self._indexed = True
        for pattern, opening in ((_BLOCK_TOKEN_RE, "/-"), (_BRACKET_RE, "[")):
            stack: list[int] = []
            for m in pattern.finditer(self.text):
                if m.group(0) == opening:
                    stack.append(m.start())
                elif stack:
                    self._ends[stack.pop()] = m.end()
            self._ends.update(dict.fromkeys(stack, len(self.text)))
        self._newlines = [m.start() for m in _NEWLINE_RE.finditer(self.text)] + [len(self.text)]

    def _end(self, opener: int) -> int:
        # A skip reaches `/-` only after whitespace, a letter, `|`, `/`, `]` or a newline, where
        # the left-to-right token scan above is aligned with Lean's, so the opener is always a key.
        self._index()
        return self._ends[opener]

    def skip(self, pos: int) -> int:
        text = self.text
        while True:
            pos = _WS_RE.match(text, pos).end()  # type: ignore[union-attr]
            if text.startswith("--", pos):
                self._index()
                pos = self._newlines[bisect.bisect_left(self._newlines, pos)]  # the newline is whitespace
            elif text.startswith("/-", pos):
                pos = self._end(pos)
            elif text.startswith("@[", pos):
                pos = self._end(pos + 1)
            elif (word := _RUN_RE.match(text, pos)) is not None and word.group(0) in _NAME_MODIFIERS:
                pos = word.end()
            else:
                return pos


def _literal_in(name: str) -> str | None:
    """The first ASCII run of `name` that is a literal name, if any."""
    for run in _RUN_RE.findall(name):
        if run in _LITERALS:
            return run
    return None


def _class_in(name: str) -> str | None:
    """The class name `name` spells (its last dotted component), if it is an allowed class."""
    last = name.rsplit(".", 1)[-1]
    return last if last in _CLASS_NAMES else None


#: A hit of rules 10 and 11: (position of the name, scan, what was found, the protected name, a hint).
_Hit = tuple[int, int, str, str, str]
_Finder = Callable[[str], "str | None"]

#: Words that end a run of names (rule 10's `true other : Bool`): keywords and tactics a line may
#: start with, so that `... = true` at the end of one line and `have h : ...` on the next are
#: never read as one binder group.
_RUN_STOPPERS = (
    *DECLARING_KEYWORDS, "example", "instance", "deriving", "namespace", "section", "end", "open",
    "variable", "universe", "set_option", "attribute", "mutual", "fun", "by", "at", "with", "then",
    "else", "from", "in", "do", "have", "show", "let", "match", "if", "calc", "suffices", "obtain",
    "rcases", "intro", "intros", "exact", "refine", "apply", "next", "case", "generalize",
    "specialize", "replace", "rw", "simp", "decide", "omega", "cases", "induction", "unfold",
    "termination_by", "decreasing_by", "private", "protected", "noncomputable",
)  # fmt: skip
_NOT_STOPPER = rf"(?!(?:{'|'.join(_RUN_STOPPERS)})(?![{_WORD_CHARS}'!?]))"
_RUN_TAIL_RE = re.compile(rf"(?:[ \t\n]++{_NOT_STOPPER}{_NAME})*+[ \t\n]*+")
_OPEN_BRACKETS, _CLOSE_BRACKETS = "([{⦃⟨", ")]}⦄⟩"
_PROTECTED_WORD_RE = re.compile(
    rf"(?<![A-Za-z0-9_])(?:true|false)(?![A-Za-z0-9_])"
    rf"|(?<![{_WORD_CHARS}'])(?:{'|'.join(INSTANCE_CLASSES)})(?![{_WORD_CHARS}'!?])"
)
_RUN_BACK_RE = re.compile(rf"(?:[ \t\n]*+{_NAME})*+[ \t\n]*+")  # on the reversed text
_STRUCTURE_RE = re.compile(rf"(?<![{_WORD_CHARS}.'])(?:structure|class)(?![{_WORD_CHARS}'!?])")
_FIELDS_START_RE = re.compile(rf"(?<![{_WORD_CHARS}.'])where(?![{_WORD_CHARS}'!?])|:=")
_COMMAND_LINE_RE = re.compile(r"\n(?=[^\s])")  # a line starting at column 0: the next command
_INDENTED_LINE_RE = re.compile(r"\n([ \t]*+)(?=\S)")
_TERM_ENDS = frozenset(")]}⟩⦄\"'")
_FIELD_NAME_RE = re.compile(
    rf"(?:/--[ ]*+-/[ \t]*+)?(?:@\[[^\]\n]*+\][ \t]*+)?(?:(?:private|protected)[ \t]++)?({_NAME})"
)
_CTOR_AFTER_ASSIGN_RE = re.compile(
    rf":=[ \t\n]*+(?:(?:private|protected)[ \t\n]++)?({_NAME})[ \t\n]*+::(?![:=])"
)
# The keywords that tell an inductive's constructors from match alternatives (`where` is not one:
# `inductive T where | a` and `def f ... where go | 0 => ...` both keep the keyword before it).
_BAR_CONTEXT_RE = re.compile(
    rf"(?<![{_WORD_CHARS}.'])(?:inductive|match|fun|with|def|theorem|lemma|abbrev|instance|example"
    rf"|structure|class|deriving|termination_by|decreasing_by|by)(?![{_WORD_CHARS}'!?])|λ"
)
# An alternative chain after `| name`: more `| pattern` on one line each, then `=>` or `,`.
_ALT_CHAIN_RE = re.compile(r"(?:[ \t\n]*+\|(?![|>])[^|:=\n]*+)*+[ \t\n]*+(=>|,)?")


def _declared(code: str, skipper: _Skipper, find: _Finder) -> _Hit | None:
    """`def true`, `theorem Net.false`, `where true := ...`, `structure S where true ::`: the name
    after a declaring keyword (not after `.`: `Bool.rec` is a name, not `rec`)."""
    for m in _DECLARING_RE.finditer(code):
        name = _DECL_NAME_RE.match(code, skipper.skip(m.end()))
        if name is not None and (found := find(name.group(0))) is not None:
            return name.start(), 0, f"'{m.group(0)} {name.group(0)[:80]}'", found, ""
    return None


def _constructor(code: str, skipper: _Skipper, find: _Finder) -> _Hit | None:
    """`| true` as a constructor. A bar whose nearest preceding keyword (of `_BAR_CONTEXT_RE`) is
    `inductive` is a constructor's; any other is a match alternative when its chain of
    alternatives ends in `=>` or `,` (`| true =>`, `| true, x =>`, the or-pattern
    `| true | false => e`, with comments and newlines anywhere in between). Later bars inside a
    chain already read share its ending, so every chain is read once."""
    contexts = [(m.start(), m.group(0)) for m in _BAR_CONTEXT_RE.finditer(code)]
    context_starts = [start for start, _ in contexts]
    chain_end, chain_is_alternative = -1, False
    for m in _BAR_RE.finditer(code):
        name = _DECL_NAME_RE.match(code, skipper.skip(m.end()))
        if name is None or (found := find(name.group(0))) is None:
            continue
        at = bisect.bisect_left(context_starts, m.start()) - 1
        in_inductive = at >= 0 and contexts[at][1] == "inductive"
        if name.end() >= chain_end:
            chain = _ALT_CHAIN_RE.match(code, name.end())
            chain_end, chain_is_alternative = chain.end(), chain.group(1) is not None  # type: ignore[union-attr]
        if in_inductive or not chain_is_alternative:
            hint = " (a constructor; a match alternative `| true => ...` or `| true | false => ...` is fine)"
            return name.start(), 1, f"'| {name.group(0)[:80]}'", found, hint
    return None


def _structure_field(code: str, find: _Finder) -> _Hit | None:
    """A field of a `structure` or `class` whose name holds a protected name. Lean reads the
    fields after `where` (or `:=`) as one block (`structFields` in lean4
    `src/Lean/Parser/Command.lean`), each field starting with one name (`structSimpleBinder`,
    then binders, an optional type and default), so `true other : Bool`, `true (n : Nat) : Bool`
    and `true := e` all declare `true`. A name that starts a line of the body is read as a field
    when the code before it ends a term (a name, a number, a closing bracket, a literal): after
    `:=`, `:`, an operator or an opening bracket it continues the previous field instead
    (`ok : Bool :=` then `true` on the next line). Line breaks and comments between the two never
    matter, so a comment cannot turn one reading into the other. Each declaration's lines are read
    once, and each walk back crosses only blank space."""
    region_end = -1
    for m in _STRUCTURE_RE.finditer(code):
        if m.start() < region_end:
            continue
        next_command = _COMMAND_LINE_RE.search(code, m.end())
        region_end = next_command.start() if next_command is not None else len(code)
        fields = _FIELDS_START_RE.search(code, m.end(), region_end)
        if fields is None:
            continue
        for line in _INDENTED_LINE_RE.finditer(code, fields.end(), region_end):
            name = _FIELD_NAME_RE.match(code, line.end())
            if name is None or (found := find(name.group(1))) is None:
                continue
            before = line.start()
            while before > 0 and code[before - 1] in " \t\n":
                before -= 1
            if before == 0 or code[before - 1] in _TERM_ENDS or _is_name_char(code[before - 1]):
                return name.start(1), 3, f"'{name.group(1)[:80]} ...'", found, " (a structure or class field)"
    return None


def _lone_colon_at(code: str, pos: int) -> bool:
    return code.startswith(":", pos) and not code.startswith((":=", "::"), pos)


def _bound(code: str, find: _Finder, word_re: re.Pattern[str]) -> _Hit | None:
    """A field or binder named like a protected name (newlines and comments in between never
    matter, as in Lean):

    - the name, then a lone `:` (`true : Bool`; a type ascription `(true : Bool)` alike);
    - a run of names holding it, then a lone `:`, inside brackets (`(a true : Bool)`) or on one
      line (`x true : Bool`, `(f true : Bool)`);
    - a structure or class field named so, whatever follows it (`_structure_field`);
    - a structure constructor `:= true ::` (`structCtor`, same file).

    Occurrences inside a run already read share its ending, so each run is read once."""
    hits: list[_Hit] = []
    reverse = code[::-1]
    n = len(code)
    run_end, run_bound, bracketed = -1, False, False
    for m in word_re.finditer(code):
        if m.start() >= run_end:
            run_end = _RUN_TAIL_RE.match(code, m.end()).end()  # type: ignore[union-attr]
            run_bound = _lone_colon_at(code, run_end)
            if run_bound:
                start = n - _RUN_BACK_RE.match(reverse, n - m.start()).end()  # type: ignore[union-attr]
                bracketed = start > 0 and code[start - 1] in _OPEN_BRACKETS
        direct = _lone_colon_at(code, _WS_RE.match(code, m.end()).end())  # type: ignore[union-attr]
        if direct or (run_bound and (bracketed or "\n" not in code[m.start() : run_end])):
            end = m.end() if direct else run_end
            group = " ".join(code[m.start() : end].split())
            hits.append(
                (m.start(), 2, f"'{group[:80]} :'", m.group(0), " (a field, binder or type ascription)")
            )
            break
    if (field := _structure_field(code, find)) is not None:
        hits.append(field)
    for m in _CTOR_AFTER_ASSIGN_RE.finditer(code):
        if (found := find(m.group(1))) is not None:
            hits.append((m.start(1), 3, f"':= {m.group(1)[:80]} ::'", found, " (a structure constructor)"))
            break
    return min(hits) if hits else None


def _protected_in(name: str) -> str | None:
    """The literal name (`true`, `false`) or allowed class `name` holds, if any."""
    return _literal_in(name) or _class_in(name)


@functools.lru_cache(maxsize=1)
def _shadowing(code: str) -> _Hit | None:
    """The first place `code` declares a literal name or an allowed class's name, in any of the
    forms above (one pass for rules 10 and 11)."""
    skipper = _Skipper(code)
    hits = [
        hit
        for hit in (
            _declared(code, skipper, _protected_in),
            _constructor(code, skipper, _protected_in),
            _bound(code, _protected_in, _PROTECTED_WORD_RE),
        )
        if hit is not None
    ]
    return min(hits) if hits else None


_INSTANCE_RE = re.compile(rf"(?<![{_WORD_CHARS}.])instance(?![{_WORD_CHARS}])")
_DERIVING_INSTANCE_RE = re.compile(rf"(?<![{_WORD_CHARS}.])deriving[ \t\n]++instance(?![{_WORD_CHARS}])")
_DERIVED_CLASSES_RE = re.compile(
    rf"[ \t\n]*+({_FIELD}(?:[ \t\n]*+,[ \t\n]*+{_FIELD})*+)[ \t\n]++for(?![{_WORD_CHARS}])"
)
_CLASS_NAMES = frozenset(INSTANCE_CLASSES)
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
        head = _DECL_NAME_RE.match(t)
        return head.group(0) if head is not None else ""
    return ""  # more layers than an honest instance has: unreadable, so refused


def _instance_verdict(what: str, line: int) -> GuardVerdict:
    return _fail(
        f"{what} on line {line}: `instance` and `deriving instance` may only declare instances of "
        f"{', '.join(INSTANCE_CLASSES)} (the class is the head of the instance's type, after any "
        "binders); a tactic option's value is elaborated in the file's scope, where the file's own "
        "`OfNat` or coercion instance would run while it builds",
        "instance",
        line,
    )


def _check_instances(code: str) -> GuardVerdict | None:
    """Rule 11: each `instance` and `deriving instance` declares instances of `INSTANCE_CLASSES`
    only, and nothing is declared under one of those names."""
    derived = set()
    for m in _DERIVING_INSTANCE_RE.finditer(code):
        derived.add(m.end() - len("instance"))
        classes = _DERIVED_CLASSES_RE.match(code, m.end())
        names = [c.strip() for c in classes.group(1).split(",")] if classes else []
        bad = next((c for c in names if c not in _CLASS_NAMES), None) if names else "?"
        if bad is not None:
            line = _line_of(code, m.start())
            what = (
                f"'deriving instance {bad[:80]}'"
                if names
                else "a 'deriving instance' whose classes cannot be read"
            )
            return _instance_verdict(what, line)
    starts = [m.start() for m in _INSTANCE_RE.finditer(code)]
    for k, start in enumerate(starts):
        if start in derived:
            continue
        # Lean reads another `instance` keyword as the start of a new command (a header holding
        # one does not parse), so a header's reading stops there: each is read once.
        stop = starts[k + 1] if k + 1 < len(starts) else len(code)
        type_text = _instance_type(code, start + len("instance"), stop)
        cls = _conclusion_head(type_text) if type_text is not None else ""
        if cls not in _CLASS_NAMES:
            line = _line_of(code, start)
            what = f"an instance of `{cls[:80]}`" if cls else "an instance whose class cannot be read"
            return _instance_verdict(what, line)
    if (hit := _shadowing(code)) is not None:
        pos, _, what, cls, hint = hit  # a class's name: a literal's was rule 10's
        line = _line_of(code, pos)
        return _fail(
            f"{what} on line {line}: nothing may be named like a class instances may be declared of "
            f"(`{cls}` would shadow it){hint}",
            cls,
            line,
        )
    return None


def _check_literal_names(code: str) -> GuardVerdict | None:
    if (hit := _shadowing(code)) is None or hit[3] not in _LITERALS:
        return None
    pos, _, what, literal, hint = hit
    line = _line_of(code, pos)
    return _fail(
        f"{what} on line {line}: nothing may be named `true` or `false`{hint}; a tactic option such "
        "as `(kernel := true)` is resolved in the file's scope, so it would run the file's own "
        "declaration while the file builds",
        literal,
        line,
    )


@functools.lru_cache(maxsize=1)
def _lexed(text: str) -> Lexed:
    """`lex(text)`, once per file (the lexing rule and the code view both need it)."""
    return lex(text)


def _check_lexing(text: str) -> GuardVerdict | None:
    """The file must split into code, comments and literals one way only (`lexer.lex`)."""
    problem = _lexed(text).problem
    if problem is None:
        return None
    line = _line_of(text, problem.pos)
    return _fail(f"{problem.reason} on line {line}", None, line)


# --- the guard -----------------------------------------------------------------------------------

#: The rules, in order. Those in `_ON_TEXT` read the whole text (the seed's words match in
#: comments and strings too); the project's rules read the code view (`lexer.lex`: comments and
#: the inside of literals blanked).
_RULES = (
    _check_chars,
    _check_lexing,
    _check_escapes,
    _check_hash_commands,
    _check_seed_words,
    _check_words,
    _check_percent,
    _check_lc_constants,
    _check_header,
    _check_attributes,
    _check_options,
    _check_named_values,
    _check_literal_names,
    _check_instances,
)
_ON_TEXT = frozenset({"_check_chars", "_check_lexing", "_check_seed_words"})


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
        return _fail(
            f"{INTERNAL_ERROR_REASON} ({type(exc).__name__} in {where}); the file is rejected", None, None
        )
    return _ok()
