"""Issue 37, item 6: the toolchain double made as strict as Lean where its README said it was
kinder (tests/toolchain_double/README.md, "Strict where it was kind"). Each test builds with the
double (shell and Python scripts, not Lean) and names the Lean source of the behaviour; each
failed on the double before the change.

- a tab (or a lone carriage return) between tokens is a parse error with Lean's words (lean4
  src/Lean/Parser/Basic.lean `whitespace`), in the double's `lean` and in its `lake`;
- `analyze` records a declaration behind a same-line doc comment, at any indentation, after
  `open … in`, and with its name on the next line (src/Lean/Parser/Command.lean
  `declModifiers`, `declaration`, `«in»`, `«theorem»`), so what it uses (a `sorry`) reaches the
  export;
- `open X` ends with its `section`/`namespace`, `open X in` holds for one command (the
  `«section»`/`«namespace»` docstrings; src/Lean/Elab/BuiltinCommand.lean `expandInCmd`);
- `resolve()` splits `$LEAN_PATH` at `:` with globbing off (src/Init/System/FilePath.lean
  `SearchPath.parse`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers import DOUBLE_DIR, needs_comparator, run_double, submission
from test_double_export import THEOREM, build, env_for, exported, judged

from lean_mod_add_proof.grading.reference import reference_submission

P = 5
TAB_ERROR = "tabs are not allowed; please configure your editor to expand them"
HEADER = "import LeanCheckedNetwork.Weights\n\n"
ANSWER = "LeanCheckedNetwork.Net.answer"


def _fails_to_build(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        build(tmp_path, text)


# ---- tabs -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "where",
    [
        "theorem LeanCheckedNetwork.Net.adds_mod_5 :\t∀ a",  # between tokens of the header
        "  intro a\tha",  # inside the proof
        "  intro a ha\t",  # trailing whitespace
    ],
)
def test_a_tab_between_tokens_fails_the_build(tmp_path: Path, where: str) -> None:
    text = reference_submission(P)
    plain = where.replace("\t", " ").rstrip() if where.endswith("\t") else where.replace("\t", " ")
    assert plain in text, plain
    _fails_to_build(tmp_path, text.replace(plain, where, 1), TAB_ERROR)


def test_a_tab_in_a_comment_or_a_string_is_fine(tmp_path: Path) -> None:
    text = (
        reference_submission(P)
        + "-- a\tline comment\n/- a\tblock comment -/\n/-- a\tdoc comment -/\n"
        + 'def someString : String := "a\ttab"\n'
    )
    pkg = build(tmp_path, text)
    assert judged(tmp_path, pkg, exported(pkg))["verdict"] == "ok"


def test_a_lone_carriage_return_fails_the_build(tmp_path: Path) -> None:
    text = reference_submission(P).replace("  intro a ha\n", "  intro a\rha\n", 1)
    _fails_to_build(tmp_path, text, "isolated carriage returns are not allowed")
    crlf = reference_submission(P).replace("\n", "\r\n")  # CR LF is a line break: fine
    build(tmp_path, crlf, name="crlf")


@needs_comparator
async def test_lake_comparator_refuses_a_tab_too(tmp_path: Path) -> None:
    text = reference_submission(P).replace("  intro a ha\n", "  intro a\tha\n", 1)
    res = await run_double(text, tmp_path, judge="comparator", skip_guard=True)
    assert res.judged and not res.accepted, res.reason
    assert TAB_ERROR in res.commands[-1].output_tail


# ---- declarations analyze must see ----------------------------------------------------------

#: A helper with a `sorry`, used by the graded theorem: its `sorryAx` must reach the export.
USE = "  have _h := helper\n  intro a ha\n"
#: Written just above the helper and used by nothing: a helper the double misses would have its
#: lines (and its `sorry`) taken as this declaration's, outside the closure, so they vanish.
UNUSED = "theorem unused : True := trivial\n"


@pytest.mark.parametrize(
    "helper",
    [
        "/-- A helper. -/ theorem helper : True := by\n  sorry\n",  # same-line doc comment
        "/-- A helper,\n    over two lines. -/ theorem helper : True := by\n  sorry\n",
        "  theorem helper : True := by\n    sorry\n",  # indented
        "open LeanCheckedNetwork.Net in\ntheorem helper : True := by\n  sorry\n",  # `open … in` (held)
        "open LeanCheckedNetwork.Net in theorem helper : True := by\n  sorry\n",
        "theorem\n  helper : True := by\n  sorry\n",  # the name on the next line
        "@[simp]\nprotected theorem\n    helper : True := by\n  sorry\n",
    ],
)
def test_a_declaration_lean_sees_is_recorded(tmp_path: Path, helper: str) -> None:
    text = reference_submission(P).replace(
        f"theorem {THEOREM} ", UNUSED + helper + f"\ntheorem {THEOREM} ", 1
    )
    text = text.replace("  intro a ha\n", USE, 1)
    assert USE in text and helper in text
    pkg = build(tmp_path, text)
    verdict = judged(tmp_path, pkg, exported(pkg))
    assert "sorryAx" in verdict["axioms"], verdict


# ---- the scope of `open` --------------------------------------------------------------------

#: The graded theorem at the root (`_root_.`: no namespace of its own, lean4
#: src/Lean/Elab/Declaration.lean `expandDeclNamespace?`), naming `answer` short: it resolves
#: only through an `open LeanCheckedNetwork.Net` in force.
SHORT = reference_submission(P).replace(
    f"theorem {THEOREM} : ∀ a, a < {P} → ∀ b, b < {P} → {ANSWER} a b",
    f"theorem _root_.{THEOREM} : ∀ a, a < {P} → ∀ b, b < {P} → answer a b",
    1,
)


def _statement_verdict(tmp_path: Path, before: str, name: str) -> str:
    assert "answer a b" in SHORT
    text = SHORT.replace(f"theorem _root_.{THEOREM}", before + f"theorem _root_.{THEOREM}", 1)
    pkg = build(tmp_path, text, name=name)
    return str(judged(tmp_path, pkg, exported(pkg))["verdict"])


def test_open_in_force_resolves_the_short_name(tmp_path: Path) -> None:
    """The control: with the `open` in force, the statement is Spec's (as in Lean)."""
    assert _statement_verdict(tmp_path, "open LeanCheckedNetwork.Net\n\n", "open") == "ok"
    inside = "section\nopen LeanCheckedNetwork.Net\n\n"  # the section still open at the theorem
    assert _statement_verdict(tmp_path, inside, "inside") == "ok"


@pytest.mark.parametrize(
    "before",
    [
        "section\nopen LeanCheckedNetwork.Net\nend\n\n",
        "namespace Elsewhere\nopen LeanCheckedNetwork.Net\nend Elsewhere\n\n",
        "open LeanCheckedNetwork.Net in\ntheorem other : True := trivial\n\n",
        "open scoped LeanCheckedNetwork.Net\n\n",  # scoped notations and instances only, no names
    ],
)
def test_an_open_out_of_scope_resolves_nothing(tmp_path: Path, before: str) -> None:
    """In Lean `answer` is then an unknown identifier (the build fails); the double, which never
    fails a build on a name, keys the statement by its raw text: not Spec's (stricter)."""
    assert _statement_verdict(tmp_path, before, "closed") == "statement"


def test_open_only_and_hiding_open_what_they_name(tmp_path: Path) -> None:
    only = "open LeanCheckedNetwork.Net (answer)\n\n"
    assert _statement_verdict(tmp_path, only, "only") == "ok"
    other = "open LeanCheckedNetwork.Net (Spec)\n\n"
    assert _statement_verdict(tmp_path, other, "other") == "statement"
    hiding = "open LeanCheckedNetwork.Net hiding answer\n\n"
    assert _statement_verdict(tmp_path, hiding, "hiding") == "statement"


# ---- LEAN_PATH ------------------------------------------------------------------------------


def test_lean_path_is_split_at_colons_and_never_globbed(tmp_path: Path) -> None:
    """An entry `DIR/*` is the directory named `*` to Lean (`SearchPath.parse`): it holds nothing
    here, so the import does not resolve; the double's unquoted split globbed it to `DIR/pkg`."""
    pkg = build(tmp_path, submission())
    (tmp_path / "other").mkdir()
    env = env_for(DOUBLE_DIR, pkg)
    env["LEAN_PATH"] = f"{DOUBLE_DIR / 'lib' / 'lean'}:{pkg / '.lake/build/lib'}/*"
    assert (pkg / ".lake/build/lib/lean/LeanCheckedNetwork/Weights.olean").exists()
    argv = [str(DOUBLE_DIR / "bin" / "lean"), "-j", "1", "--json", "-o", str(tmp_path / "S.olean")]
    done = subprocess.run(
        [*argv, "LeanCheckedNetwork/Submission.lean"], cwd=pkg, env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1 and "unknown module prefix 'LeanCheckedNetwork.Weights'" in done.stdout, done
    env["LEAN_PATH"] = f"{DOUBLE_DIR / 'lib' / 'lean'}:{pkg / '.lake/build/lib/lean'}"
    ok = subprocess.run(
        [*argv, "LeanCheckedNetwork/Submission.lean"], cwd=pkg, env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert ok.returncode == 0, ok
