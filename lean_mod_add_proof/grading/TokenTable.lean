/-
Prints the token table of the toolchain that runs it, for the guard's check of its own table
(grading/lean_tokens.py, `compare_token_table`; docs/trust-model.md, "The guard's token table").
The grader runs it as

  lean -j 1 --run TokenTable.lean --toolchain-lib <toolchain>/lib/lean

It sets the search path to that directory only (as Judge.lean sets its own), imports `Init`
with `importModules` and its default `loadExts := false`, so no extension's import function and
no initializer of any module runs (src/Lean/Environment.lean, the `importModules` docstring),
and prints, between a `tokens-begin` and a `tokens-end` line, one token a line as the decimal
code points of its characters, separated by spaces (so that no character needs quoting):

* the builtin tokens: `Lean.Parser.builtinTokenTable` (src/Lean/Parser/Extension.lean), filled
  when this process started by the builtin parsers of Lean's own modules, which the `lean` that
  builds a submission holds too;
* every token that a module `Init` imports recorded in the parser extension's entries, global
  and scoped alike (`ScopedEnvExtension.Entry.global` and `.scoped` of
  `ParserExtension.OLeanEntry.token`, src/Lean/ScopedEnvExtension.lean and
  src/Lean/Parser/Extension.lean): every token a file importing `Init` can meet, whichever
  namespaces it opens. The entries are read as data (`PersistentEnvExtension.getModuleEntries`);
  no parser is built from them.

A token may be printed more than once (a builtin token that a module also records); the reader
takes the set. Nothing of a submission is read.

Not listed, and why neither matters to the guard's three beliefs (docs/lean-audit.md, the audit
of this file, F3): the tokens added only while a header is parsed
(`Lean.Parser.Module.updateTokens`, src/Lean/Parser/Module.lean: `import`, `prelude`, `module`,
...), none of which holds an apostrophe, a double quote or a lead character; and tokens a file
declares itself, which the guard refuses (`syntax`, `notation`, `macro`, ... are banned words).
The listing is `Init`'s closure only because the imports a submission may have
(`LeanCheckedNetwork.Network`, `LeanCheckedNetwork.Weights`) declare no tokens: if those texts
ever gain notation, this program must list their modules' entries too.

If `Init` brings no module, or its modules record no token at all, the reading failed (an API or
a behaviour that changed), not the table: the program then stops with an error (exit 1), which
the grader reports as "not checked", never as a difference (audit F1).
-/
import Lean

open Lean

/-- One token as the decimal code points of its characters, separated by spaces. -/
def codePoints (tk : String) : String :=
  " ".intercalate (tk.toList.map fun c => toString c.toNat)

def main (args : List String) : IO UInt32 := do
  let lib ← match args with
    | ["--toolchain-lib", dir] => pure dir
    | _ => throw <| IO.userError "token table: --toolchain-lib DIR is required"
  -- The only search path: the toolchain's own library.
  searchPathRef.set [⟨lib⟩]
  let env ← importModules #[({ module := `Init } : Import)] {}
  let modules := env.allImportedModuleNames
  if modules.size == 0 then
    throw <| IO.userError "token table: importing Init brought no module"
  let mut tokens : Array String := Lean.Data.Trie.values (← Parser.builtinTokenTable.get)
  -- How many token entries Init's modules recorded: none means the reading failed.
  let mut initTokens : Nat := 0
  for modName in modules do
    if let some idx := env.getModuleIdx? modName then
      for entry in PersistentEnvExtension.getModuleEntries Parser.parserExtension.ext env idx do
        match entry with
        | ScopedEnvExtension.Entry.global (Parser.ParserExtension.OLeanEntry.token tk) =>
          tokens := tokens.push tk
          initTokens := initTokens + 1
        | ScopedEnvExtension.Entry.«scoped» _ (Parser.ParserExtension.OLeanEntry.token tk) =>
          tokens := tokens.push tk
          initTokens := initTokens + 1
        | _ => pure ()
  if initTokens == 0 then
    throw <| IO.userError "token table: no token entries in Init's modules"
  IO.println "tokens-begin"
  for tk in tokens do
    IO.println (codePoints tk)
  IO.println "tokens-end"
  return 0
