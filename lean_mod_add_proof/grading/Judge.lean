/-
The trusted judge of lean-mod-add-proof: kernel replay, statement check and axiom walk in one
process, run by the grader after the untrusted build, compiled once per toolchain
(`lean -c Judge.c Judge.lean`, then `leanc`) or else as `lean --run Judge.lean`, with

  SOURCE --lib lib --toolchain-lib DIR
    --theorem T --spec S --check C --allow-import M ... --require-import M

where SOURCE is `--olean submission/Submission.olean` (olean mode) or, in the export text, the
export-mode flag (described in the comment that follows there). Exactly one is required. The judge
runs from a fresh directory that holds only this file, byte-verified copies of the trusted
Network/Weights oleans under `lib/`, and the submission's file under `submission/` (which is not
on any search path). It prints a `{"phase":"replay"}` line once its trusted set-up is done, then
exactly one JSON object line holding `"judge":1` and the verdict
(the order of its keys is whatever `Json.compress` writes, and nothing depends on
it) and exits 0 whenever it reached a verdict about the
submission; any other ending means "no verdict", never "accepted". A missing argument, or no
source or two, ends it with `judge: --olean, --theorem, --spec and --check are required`.

Two texts are made from this one file (grading/judge_source.py): the export text is the file as
it is; the olean text is the file with every marked block removed, markers included. The markers
are the lines `-- export-mode-begin` and `-- export-mode-end`, each alone on its line. Everything
export mode needs (its import, its flag, its loader, their uses) sits in such blocks, and nothing
outside them refers to anything inside, so a toolchain without the export library still compiles
the olean text, an olean-only judge.

The modes differ only in how the submission's constants are read (steps 1-2, one loader per
mode); the replay, the statement check and the axiom walk (steps 3-6) are one shared function.

Olean mode: the submission's module data is read the way leanchecker reads it
(`readModuleDataParts`, src/Lean/Environment.lean; `replayFromImports`, src/LeanChecker.lean),
mapped into this process, and its import list is checked against `--allow-import` and
`--require-import`. The olean format itself is trusted by `readModuleDataParts`; a crafted olean
needs code execution at build time, which the guard and the sandbox exist to stop.

Why it can be trusted (every API below is cited; sources read from leanprover/lean4, newest
stored copies, not pinned to v4.35.0-rc2: the grader's self-test runs this file on the real
toolchain before any grade and fails closed if it does not behave):

* The submission is never imported, so none of its code (initializers, `[init]`, environment
  extensions) runs here.
* The environment it is replayed into comes from `importModules` of the trusted modules only
  (`Init`, Network, Weights), with `loadExts := false` (the default), so no extension or
  initializer of any module runs (src/Lean/Environment.lean `importModules` docstring). The search
  path is set here explicitly: the toolchain library first, then `lib/`
  (`searchPathRef`, src/Lean/Util/Path.lean).
* Every constant the submission declares goes through the kernel
  (`Lean.Kernel.Environment.replay`, src/Lean/Replay.lean, as leanchecker does;
  `addDeclCore` with 0 heartbeats = no limit). Replay skips `unsafe` and `partial` constants; a
  kernel-checked constant cannot refer to a skipped one (it would be an unknown constant).
* The statement check is the kernel's own: it adds `theorem C : S := T` with
  `Kernel.Environment.addDeclCore` (src/Lean/Environment.lean), so T's type must be
  definitionally equal to S. No elaborator runs, so no coercion or instance of the submission
  can be inserted.
* Axioms are found by walking constant types and values in the replayed kernel environment, not
  from axiom sets cached in any olean (lean4 #13117 caches them; #15226 shows they can be wrong).
-/
-- export-mode-begin
/-
Export mode: SOURCE is `--export submission/Submission.ndjson`. This is Lean's own boundary
(`lake check`/`lake challenge`, src/lake/Lake/CLI/Check.lean: "no `.olean` produced from it is
ever mapped into the process that reports the verdict. Only the resulting NDJSON export crosses
the boundary"). The grader ran the toolchain's `leanexport MOD -- DECLS` inside the sandbox (the
exporter loads the untrusted olean there, not here); this process only parses the text it wrote,
with `LeanExport.parseStream` (src/LeanExport/Parse.lean), which builds plain `ConstantInfo`
values and adds nothing to any environment. No file the build wrote is mapped here.

The export holds DECLS and everything they use, transitively (`dumpConstant` calls `dumpDeps` on
every type and value before writing a constant, src/LeanExport/Basic.lean), so it repeats the
trusted constants (Init's, Network's, Weights'). Each of those must equal the trusted constant of
its name modulo metadata, and is then dropped: the environment keeps the trusted one. Every other
exported constant goes through the kernel, exactly as in olean mode. An export has no import
list, so there is no imports check (`imports` is reported empty): nothing the export holds is
trusted for having been imported. The shared steps 3-6 then run unchanged.
-/
-- export-mode-end
import Lean
-- Not assumed to come with `import Lean`: the replay and the constant fold, imported by name as
-- other replay tools do.
import Lean.Replay
import Lean.Util.FoldConsts
-- export-mode-begin
-- The NDJSON reader: `LeanExport.parseStream` and `LeanExport.ExportedEnv` are `public` in module
-- `LeanExport.Parse` (src/LeanExport/Parse.lean), the module Lake's own judge imports for them
-- (`public import LeanExport.Parse`, src/lake/Lake/Check/Compare.lean). If a toolchain does not
-- ship it, this text does not compile and the grader uses the olean text instead.
import LeanExport.Parse
-- export-mode-end

open Lean

namespace LeanModAddProofJudge

/-- The command line. `exportFile` is shared by both texts and unused in the olean text (only the
export-mode flag sets it, and that text lacks the flag). Not named `export`: that is a keyword
(the `export` command, src/Lean/Parser/Command.lean). -/
structure Args where
  olean : System.FilePath := ⟨""⟩
  exportFile : System.FilePath := ⟨""⟩
  lib : System.FilePath := ⟨""⟩
  toolchainLib : System.FilePath := ⟨""⟩
  thm : Name := .anonymous
  spec : Name := .anonymous
  check : Name := .anonymous
  allowed : Array Name := #[]
  required : Array Name := #[]

/-- `--flag value` pairs; an unknown flag is an error (no verdict). `String.toName` splits on
dots (src/Init/Meta.lean), as leanchecker reads module names (src/LeanChecker.lean). -/
partial def parseArgs (acc : Args) : List String → IO Args
  | [] => pure acc
  | [flag] => throw <| IO.userError s!"judge: {flag} needs a value"
  | flag :: value :: rest => do
    -- The ascription fixes the match's type for rc2's new `do` elaborator (backward.do.legacy
    -- = false, lean4 PR #13305) instead of leaving it to inference from the arms.
    let next : Args ← match flag with
      | "--olean" => pure { acc with olean := ⟨value⟩ }
      -- export-mode-begin
      | "--export" => pure { acc with exportFile := ⟨value⟩ }
      -- export-mode-end
      | "--lib" => pure { acc with lib := ⟨value⟩ }
      | "--toolchain-lib" => pure { acc with toolchainLib := ⟨value⟩ }
      | "--theorem" => pure { acc with thm := value.toName }
      | "--spec" => pure { acc with spec := value.toName }
      | "--check" => pure { acc with check := value.toName }
      | "--allow-import" => pure { acc with allowed := acc.allowed.push value.toName }
      | "--require-import" => pure { acc with required := acc.required.push value.toName }
      | _ => throw <| IO.userError s!"judge: unknown argument {flag}"
    parseArgs next rest

structure Report where
  verdict : String := "ok"
  reason : String := ""
  imports : Array Name := #[]
  replayed : Nat := 0
  theoremKind : String := ""
  axioms : Array Name := #[]
  checkAxioms : Array Name := #[]

/-- At most `n` characters of `s`, and a marker when some were cut, so that a clipped text can
never equal a short name it began with (`String.toList`, `String.push`: src/Init/Data/String/
Basic.lean, Bootstrap.lean). Written as a loop over `toList`, the most conservative form: the
`String` slicing API changed in 2025-26, and the old list-to-string conversion is deprecated. -/
def clip (s : String) (n : Nat) : String := Id.run do
  let mut out := ""
  let mut kept : Nat := 0
  for c in s.toList do
    if kept == n then
      return out ++ "...(clipped)"
    out := out.push c
    kept := kept + 1
  return out

/-- The most names a list on the verdict line holds, and the longest a name may print. -/
def maxNames : Nat := 16
def maxNameChars : Nat := 128
def maxReasonChars : Nat := 1000

/-- Names are printed escaped (`Name.toString` with its default `escape := true`,
src/Init/Meta.lean), so an axiom whose single component is the string "Classical.choice" prints
as `«Classical.choice»` and can never pass for `Classical.choice`. A list longer than `maxNames`
ends in a marker that is no axiom's or module's name, so an allow-list check of it still fails;
the verdict line therefore stays under a fixed size whatever the submission holds. -/
def names (ns : Array Name) : Json := Id.run do
  let mut out : Array Json := #[]
  for n in ns do
    if out.size == maxNames then
      return Json.arr (out.push (Json.str s!"(+{ns.size - maxNames} more)"))
    out := out.push (Json.str (clip n.toString maxNameChars))
  return Json.arr out

/-- One lower-case hexadecimal digit of `n % 16` (`Char.ofNat`: src/Init/Prelude.lean). -/
def hexDigit (n : Nat) : Char :=
  let d := n % 16
  if d < 10 then Char.ofNat (48 + d) else Char.ofNat (87 + d)

/-- The JSON escape `\uXXXX` of one UTF-16 code unit (below 0x10000). -/
def uEscape (u : Nat) : String :=
  "\\u" ++ (((("".push (hexDigit (u / 4096))).push (hexDigit (u / 256))).push
    (hexDigit (u / 16))).push (hexDigit u))

/-- The line in printable ASCII only: every character below 0x20 or at or above 0x7F becomes a
JSON `\u` escape (a surrogate pair above 0xFFFF). Lean's JSON printer leaves U+2028, U+2029
and U+0085 raw, and line splitters may break on them. Such characters stand only inside JSON
strings here (the keys are ASCII), where the escape means the same character. -/
def asciiOnly (s : String) : String := Id.run do
  let mut out := ""
  for c in s.toList do
    let n := c.toNat
    if 0x20 ≤ n ∧ n < 0x7F then
      out := out.push c
    else if n < 0x10000 then
      out := out ++ uEscape n
    else
      let m := n - 0x10000
      out := out ++ uEscape (0xD800 + m / 1024) ++ uEscape (0xDC00 + m % 1024)
  return out

/-- The one verdict line (`Json.mkObj`, `Json.compress`: src/Lean/Data/Json/Basic.lean and
Printer.lean), ASCII only and bounded in size. -/
def Report.line (r : Report) : String :=
  asciiOnly (Json.mkObj [
    ("judge", toJson (1 : Nat)),
    ("verdict", Json.str r.verdict),
    ("reason", Json.str (clip r.reason maxReasonChars)),
    ("imports", names r.imports),
    ("replayed", toJson r.replayed),
    ("theorem_kind", Json.str r.theoremKind),
    ("axioms", names r.axioms),
    ("check_axioms", names r.checkAxioms)
  ]).compress

def kindOf : ConstantInfo → String
  | .axiomInfo _ => "axiom"
  | .defnInfo _ => "def"
  | .thmInfo _ => "theorem"
  | .opaqueInfo _ => "opaque"
  | .quotInfo _ => "quot"
  | .inductInfo _ => "inductive"
  | .ctorInfo _ => "constructor"
  | .recInfo _ => "recursor"

/-- Every constant a constant's type and value mention (`Expr.getUsedConstants`,
src/Lean/Util/FoldConsts.lean). A superset of what `CollectAxioms` visits
(src/Lean/Util/CollectAxioms.lean): types everywhere, values of definitions, theorems and opaques,
constructors of inductives, the inductive of a constructor and the rules of a recursor. -/
def refs : ConstantInfo → Array Name
  | .axiomInfo v => v.type.getUsedConstants
  | .defnInfo v => v.type.getUsedConstants ++ v.value.getUsedConstants
  | .thmInfo v => v.type.getUsedConstants ++ v.value.getUsedConstants
  | .opaqueInfo v => v.type.getUsedConstants ++ v.value.getUsedConstants
  | .quotInfo v => v.type.getUsedConstants
  | .inductInfo v => v.type.getUsedConstants ++ v.ctors.toArray
  | .ctorInfo v => v.type.getUsedConstants.push v.induct
  | .recInfo v => v.rules.foldl (fun acc r => acc ++ r.rhs.getUsedConstants) v.type.getUsedConstants

/-- The axioms `root` depends on, by walking the kernel environment (`Kernel.Environment.find?`,
src/Lean/Environment.lean). `.error n`: `n` is referenced but absent, which a kernel-checked
environment cannot produce, so the caller treats it as "no verdict". -/
def axiomsOf (env : Kernel.Environment) (root : Name) : Except Name (Array Name) := Id.run do
  let mut seen : NameSet := {}
  let mut stack : Array Name := #[root]
  let mut found : Array Name := #[]
  while !stack.isEmpty do
    let n := stack.back!
    stack := stack.pop
    if seen.contains n then continue
    seen := seen.insert n
    match env.find? n with
    | none => return .error n
    | some ci =>
      if let .axiomInfo _ := ci then found := found.push n
      stack := stack ++ refs ci
  return .ok found

/-- The olean and, when the build wrote them, the module system's further parts, in the order
leanchecker passes them (src/LeanChecker.lean `replayFromImports`; part names from `OLeanLevel`,
src/Lean/Environment.lean). -/
def oleanParts (olean : System.FilePath) : IO (Array System.FilePath) := do
  let mut files := #[olean]
  let server : System.FilePath := ⟨olean.toString ++ ".server"⟩
  if ← server.pathExists then
    files := files.push server
    let priv : System.FilePath := ⟨olean.toString ++ ".private"⟩
    if ← priv.pathExists then
      files := files.push priv
  return files

def kernelMessage (ex : Kernel.Exception) : IO String :=
  return clip (← (ex.toMessageData {}).toString) maxReasonChars

/-- Printed (and flushed) once the trusted set-up is done and the submission's data is about to be
read: from here on, a judge that ends without a verdict ended on the submission's input (a
crash, such as a native stack overflow on a deep term, exits the process outright), so the grader
counts it as a rejection. Before it, an ending without a verdict is the judge's own failure.
`IO.getStdout`, `IO.FS.Stream.putStrLn`/`flush`: src/Init/System/IO.lean. -/
def markReplayStarted : IO Unit := do
  let out ← IO.getStdout
  out.putStrLn "{\"phase\":\"replay\"}"
  out.flush

/-- What a loader hands on: a verdict it reached itself (`stopped`), or the report so far and the
submission's own constants (`constants`), which the shared check replays and checks. -/
inductive Loaded where
  | stopped (r : Report)
  | constants (r : Report) (newConstants : Std.HashMap Name ConstantInfo)

/-- Olean mode, steps 1-2: the submission's module data, read without importing it, its imports
checked and its constants collected. Written with statement-level `try`/`match` and mutable
variables only, the most conservative do-notation forms, so that each early `return` is
unambiguously the function's. -/
def loadOlean (a : Args) : IO Loaded := do
  let mut r : Report := {}
  -- 1. The submission's module data, read without importing it.
  let mut parts : Array (ModuleData × CompactedRegion) := #[]
  try
    parts ← readModuleDataParts (← oleanParts a.olean)
  catch e =>
    return .stopped { r with verdict := "replay", reason := s!"unreadable olean: {e}" }
  let some (first, _) := parts[0]?
    | return .stopped { r with verdict := "replay", reason := "the olean holds no module data" }
  let some (mostPrivate, _) := parts[parts.size - 1]?
    | return .stopped { r with verdict := "replay", reason := "the olean holds no module data" }
  -- 2. Imports: only the allowed modules, and the required one.
  -- Each module once (a file may repeat an import line thousands of times).
  let mut imported : Array Name := #[]
  let mut seenImports : NameSet := {}
  for i in first.imports do
    unless seenImports.contains i.module do
      seenImports := seenImports.insert i.module
      imported := imported.push i.module
  r := { r with imports := imported }
  for m in imported do
    unless a.allowed.contains m do
      return .stopped { r with verdict := "imports", reason := s!"the submission imports {m}, which is not allowed" }
  for m in a.required do
    unless imported.contains m do
      return .stopped { r with verdict := "imports", reason := s!"the submission does not import {m}" }
  -- Every constant of the submission (its most private part subsumes the others,
  -- src/LeanChecker.lean), for the replay into the trusted modules' environment.
  -- Each entry must be filed under its own name, and none may be a quotient constant (only
  -- Init's `init_quot` makes those): crafted module data did both to mislead a replay
  -- (lean4 #15100, #15101). `ConstantInfo.name`: src/Lean/Declaration.lean.
  unless mostPrivate.constNames.size == mostPrivate.constants.size do
    return .stopped { r with verdict := "replay", reason := "the olean's constant names and constants do not pair up" }
  let mut newConstants : Std.HashMap Name ConstantInfo := {}
  for name in mostPrivate.constNames, ci in mostPrivate.constants do
    unless ci.name == name do
      return .stopped { r with verdict := "replay", reason := s!"the olean files a constant under another name: {name}" }
    if let .quotInfo _ := ci then
      return .stopped { r with verdict := "replay", reason := s!"the submission declares a quotient constant: {name}" }
    newConstants := newConstants.insert name ci
  return .constants r newConstants

-- export-mode-begin
/-- `e` without metadata: every `Expr.mdata` node replaced by the expression it wraps, and every
`let` marked dependent (`nonDep := false`). `==` on `Expr` is `Expr.eqv` (src/Lean/Expr.lean),
the kernel's `expr_eq_fn<false>` (src/kernel/expr_eq_fn.cpp), which compares the data of `mdata`
nodes and does not look through them, so both sides are stripped before comparing. The exporter
strips them the same way by default, with the same `nonDep` normalisation (`removeMData`,
`exportMData := false` unless `--export-mdata`: src/LeanExport/Basic.lean), and the parser keeps
only `.mdata {} e` even when they are exported (`parseExprMdata`, src/LeanExport/Parse.lean).
No core function strips nested metadata in one pass (`Expr.replace`, src/Lean/Util/ReplaceExpr.lean,
does not revisit what its function returns), so this is written out, with a cache keyed by the
expression, as the exporter's `removeMData` does: the parsed terms share subterms, and a
traversal without one could take time exponential in their size. Constructors as declared in
src/Lean/Expr.lean (`letE declName type value body nonDep`, `proj typeName idx struct`). -/
partial def stripMData (e : Expr) : StateM (Std.HashMap Expr Expr) Expr := do
  if let some cached := (← get)[e]? then
    return cached
  let mut out := e
  match e with
  | .mdata _ b =>
    out ← stripMData b
  | .app f x =>
    let f' ← stripMData f
    let x' ← stripMData x
    out := .app f' x'
  | .lam n d b bi =>
    let d' ← stripMData d
    let b' ← stripMData b
    out := .lam n d' b' bi
  | .forallE n d b bi =>
    let d' ← stripMData d
    let b' ← stripMData b
    out := .forallE n d' b' bi
  | .letE n t v b _ =>
    let t' ← stripMData t
    let v' ← stripMData v
    let b' ← stripMData b
    out := .letE n t' v' b' false
  | .proj s i b =>
    let b' ← stripMData b
    out := .proj s i b'
  | _ => pure ()
  modify fun m => m.insert e out
  return out

/-- Whether two expressions are equal once their metadata is stripped (`==`: alpha-equivalence,
binder names and binder annotations ignored, src/Lean/Expr.lean `Expr.eqv`). -/
def sameExpr (a b : Expr) : StateM (Std.HashMap Expr Expr) Bool := do
  let a' ← stripMData a
  let b' ← stripMData b
  return a' == b'

/-- Whether an exported constant is the trusted one of its name, modulo metadata: the same kind,
universe parameters and type and, for definitions and opaques, the same value
(`ConstantInfo.levelParams`/`type`: src/Lean/Declaration.lean). Theorem values are not compared
(proof irrelevance: the environment keeps the trusted theorem whatever the export says);
inductives, constructors and recursors compare kind, universe parameters and type only. -/
def sameConstantM (t x : ConstantInfo) : StateM (Std.HashMap Expr Expr) Bool := do
  if kindOf t != kindOf x || t.levelParams != x.levelParams then
    return false
  let sameType ← sameExpr t.type x.type
  if !sameType then
    return false
  match t, x with
  | .defnInfo tv, .defnInfo xv => sameExpr tv.value xv.value
  | .opaqueInfo tv, .opaqueInfo xv => sameExpr tv.value xv.value
  | _, _ => return true

/-- `sameConstantM` with a fresh cache (`StateT.run'`, `StateM`: src/Init/Control/State.lean;
`Id.run`: src/Init/Control/Id.lean). -/
def sameConstant (t x : ConstantInfo) : Bool :=
  Id.run (StateT.run' (sameConstantM t x) {})

/-- Export mode, steps 1-2: the submission's NDJSON export, parsed as text, and its constants
collected. Written in the same conservative do-notation forms as `loadOlean`.

1. The file is opened read-only (`IO.FS.Handle.mk … .read`, `IO.FS.Stream.ofHandle`:
   src/Init/System/IO.lean) and parsed by `LeanExport.parseStream` (src/LeanExport/Parse.lean),
   the way Lake's judge reads one (src/lake/Lake/CLI/Check.lean). The parser skips the first line
   (the exporter's `{"meta":…}` line, `dumpMetadata`, src/LeanExport/Basic.lean) and throws on
   anything it cannot read (an unknown object, an index bound twice or never bound, a duplicate
   declaration); every exception is a "replay" verdict, since the export is the submission's.
2. There is no imports check: an export has no import list (`imports` stays empty), and none is
   needed, because nothing the export holds is trusted for being imported. Every exported
   constant whose name the trusted environment lacks goes through the kernel, and those it has
   are never replayed: the environment keeps the trusted ones. Soundness rests on the kernel
   checking every other constant against the trusted environment, not on the comparisons below,
   which exist to name a redefinition of a trusted constant clearly instead of letting it pass
   silently. The required-import check has nothing to look at either: the statement check below
   is made against the trusted spec whatever the submission imported. -/
def loadExport (env : Environment) (a : Args) : IO Loaded := do
  let r : Report := {}
  -- An `Option`, so that no `ExportedEnv` is ever built here: only the parser makes one.
  let mut parsed : Option LeanExport.ExportedEnv := none
  try
    let handle ← IO.FS.Handle.mk a.exportFile .read
    let result ← LeanExport.parseStream (IO.FS.Stream.ofHandle handle)
    parsed := some result
  catch e =>
    return .stopped { r with verdict := "replay", reason := s!"malformed export: {e}" }
  let some exported := parsed
    | return .stopped { r with verdict := "replay", reason := "malformed export: nothing was parsed" }
  let trusted := env.toKernelEnv
  let mut newConstants : Std.HashMap Name ConstantInfo := {}
  for name in exported.constOrder do
    -- `constMap[name]?` as Lake's judge looks constants up (src/lake/Lake/Check/Compare.lean).
    let some ci := exported.constMap[name]?
      | return .stopped { r with verdict := "replay", reason := s!"the export lists {name} without declaring it" }
    -- The parser files each constant under its own name (`addConst`); checked anyway, as in
    -- olean mode, so that nothing below depends on it.
    unless ci.name == name do
      return .stopped { r with verdict := "replay", reason := s!"the export files a constant under another name: {name}" }
    match trusted.find? name with
    | some tci =>
      unless sameConstant tci ci do
        return .stopped { r with verdict := "replay", reason := s!"the export's {name} differs from the trusted one" }
    | none =>
      if let .quotInfo _ := ci then
        return .stopped { r with verdict := "replay", reason := s!"the submission declares a quotient constant: {name}" }
      newConstants := newConstants.insert name ci
  return .constants r newConstants
-- export-mode-end

/-- Steps 3-6, shared by both modes: replay the submission's constants into the trusted
environment, then check the theorem, the statement and the axioms. Written with statement-level
`try`/`match` and mutable variables only, the most conservative do-notation forms, so that each
early `return` is unambiguously the function's. -/
def checkConstants (a : Args) (env : Environment) (loaded : Report)
    (newConstants : Std.HashMap Name ConstantInfo) : IO Report := do
  let mut r : Report := { loaded with replayed := newConstants.size }
  -- 3. Replay every constant of the submission into the trusted modules' environment.
  let mut kenv := env.toKernelEnv
  try
    kenv ← kenv.replay newConstants
  catch e =>
    return { r with verdict := "replay", reason := s!"the kernel rejected the submission: {e}" }
  -- 4. The theorem: declared by the submission, a theorem, no universe parameters.
  unless newConstants.contains a.thm do
    return { r with verdict := "statement", reason := s!"the submission declares no {a.thm}" }
  match kenv.find? a.thm with
  | some (.thmInfo tv) =>
    r := { r with theoremKind := "theorem" }
    unless tv.levelParams.isEmpty do
      return { r with verdict := "statement", reason := s!"{a.thm} has universe parameters" }
  | some ci =>
    return { r with verdict := "statement", theoremKind := kindOf ci,
                    reason := s!"{a.thm} is a {kindOf ci}, not a theorem" }
  | none =>
    return { r with verdict := "statement",
                    reason := s!"{a.thm} was not replayed (unsafe or partial declarations are skipped)" }
  -- 5. The statement, checked by the kernel: `theorem check : spec := thm`.
  let decl := Declaration.thmDecl
    { name := a.check, levelParams := [], type := mkConst a.spec, value := mkConst a.thm, all := [a.check] }
  -- `addDeclCore env maxHeartbeats maxRecDepth decl cancelTk?`: the maxRecDepth argument exists
  -- since v4.33 (0 = no limit, as in the replay's own call, src/Lean/Replay.lean).
  match kenv.addDeclCore 0 0 decl (cancelTk? := none) with
  | .error ex =>
    let msg ← kernelMessage ex
    return { r with verdict := "statement", reason := s!"{a.thm} does not have type {a.spec}: {msg}" }
  | .ok checked => kenv := checked
  -- 6. Axioms of the theorem and of the check, from the kernel environment itself.
  match axiomsOf kenv a.thm, axiomsOf kenv a.check with
  | .ok ax, .ok checkAx => return { r with axioms := ax, checkAxioms := checkAx }
  | .error n, _ => throw <| IO.userError s!"judge: {n} is referenced but not in the environment"
  | _, .error n => throw <| IO.userError s!"judge: {n} is referenced but not in the environment"

/-- The verdict: the trusted set-up, then the loader of the source given, then the shared check.
Statement-level `unless`/`match` only, as above. -/
def judge (a : Args) : IO Report := do
  -- 0. The trusted environment first (an import failure here is the grader's, not a verdict).
  let env ← importModules (a.allowed.map fun m => ({ module := m } : Import)) {}
  -- The submission's file is opened only after this line, in either mode, so from here on a
  -- failure to open or read it is on the submission's input.
  markReplayStarted
  let mut loaded : Option Loaded := none
  unless a.olean.toString.isEmpty do
    let l ← loadOlean a
    loaded := some l
  -- export-mode-begin
  unless a.exportFile.toString.isEmpty do
    let l ← loadExport env a
    loaded := some l
  -- export-mode-end
  match loaded with
  | none => throw <| IO.userError "judge: no submission to read"
  | some (.stopped verdict) => return verdict
  | some (.constants r newConstants) => checkConstants a env r newConstants

end LeanModAddProofJudge

def main (args : List String) : IO UInt32 := do
  let a ← LeanModAddProofJudge.parseArgs {} args
  -- Exactly one source (`--olean`, or the export-mode flag in the text that has it). Two or none
  -- is the same error as a missing argument, with the text the grader's start-up check expects.
  let mut sources : Nat := 0
  unless a.olean.toString.isEmpty do
    sources := sources + 1
  -- export-mode-begin
  unless a.exportFile.toString.isEmpty do
    sources := sources + 1
  -- export-mode-end
  if a.thm.isAnonymous || a.spec.isAnonymous || a.check.isAnonymous || sources != 1 then
    throw <| IO.userError "judge: --olean, --theorem, --spec and --check are required"
  -- The only search path: the toolchain's library first, so nothing can shadow `Init`.
  searchPathRef.set [a.toolchainLib, a.lib]
  let report ← LeanModAddProofJudge.judge a
  IO.println report.line
  return 0
