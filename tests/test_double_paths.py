"""The toolchain double's paths, after the two reviews of its path fix (issue 37, item 7:
docs/readings/review-A.md part 2, review-B.md part 1; tests/toolchain_double/README.md, the path
row). Lean's rules, as the reviews read them: `LEAN_PATH` is split at `:` only, every piece kept
as it is (src/Init/System/FilePath.lean @02edefea5275 `SearchPath.parse`; an empty piece joins
as `/ROOT`, `FilePath.join`), then the toolchain's `lib/lean` (src/Lean/Util/Path.lean @0514f7ca8b36
`initSearchPath`); the first entry with the root directory or a root `.olean` of any file type
decides (`findWithExt`); imports are found by name (`findOLean`); Judge.lean's search path is its
two arguments, never parsed (`searchPathRef.set [a.toolchainLib, a.lib]`), and it imports the
trusted modules before its replay marker. Each test names the finding it checks; each failed on
the double before the fix. The double is shell and Python scripts, not Lean."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from helpers import DOUBLE_DIR, copy_double, double_config, grade_task, run_double, submission
from test_double_export import (
    OLEAN_JUDGE,
    SUB_OLEAN,
    build,
    env_for,
    exported,
    judge_args,
    verdict_dir,
)

from lean_mod_add_proof.grading.grader import grade

LIB = "_double_lib.sh"


def _resolve(module: str, lean_path: str | None) -> str:
    """`resolve MODULE` of `_double_lib.sh`, under `sh`, with this `LEAN_PATH` (None: unset)."""
    env = {"PATH": "/usr/bin:/bin", "here": str(DOUBLE_DIR / "bin")}
    if lean_path is not None:
        env["LEAN_PATH"] = lean_path
    done = subprocess.run(
        ["sh", "-c", f'. "$here/{LIB}"; resolve "$1"', "sh", module],
        env=env, capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def _olean(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("double-olean Foo.Bar 0\n")
    return path


def test_a_bracket_entry_is_the_directory_of_that_name(tmp_path: Path) -> None:
    """A-D1, B-F-D1: an entry `x[ab]` was globbed to its sibling `xa`, whose module it loaded."""
    mine = _olean(tmp_path / "x[ab]" / "Foo" / "Bar.olean")
    _olean(tmp_path / "xa" / "Foo" / "Bar.olean")
    assert _resolve("Foo.Bar", str(tmp_path / "x[ab]")) == str(mine)
    # and `st?r` is not `star` (kinder: the double resolved where Lean finds nothing)
    _olean(tmp_path / "star" / "Foo" / "Bar.olean")
    assert _resolve("Foo.Bar", str(tmp_path / "st?r")) == ""


def test_empty_pieces_are_kept_and_join_at_the_root(tmp_path: Path) -> None:
    """A-D7(b), B-F-D3: a trailing empty piece (dropped by the shell's split) and an empty
    `LEAN_PATH` search `/`; the exporter's empty piece searched the working directory."""
    name = f"lmap{uuid.uuid4().hex[:10]}"
    marker = _olean(Path("/tmp") / f"{name}.olean")  # the module `tmp.NAME`, through `/` + `tmp`
    try:
        assert _resolve(f"tmp.{name}", f"{tmp_path}:") == str(marker)
        assert _resolve(f"tmp.{name}", "") == str(marker)
    finally:
        marker.unlink()
    # leanexport: an empty LEAN_PATH is the entry "" (= `/`), not the working directory
    (tmp_path / "Foo.olean").write_text("double-olean Foo 0\n")
    done = subprocess.run(
        [str(DOUBLE_DIR / "bin" / "leanexport"), "Foo"], cwd=tmp_path, capture_output=True, text=True,
        env={"PATH": "/usr/bin:/bin", "LEAN_SYSROOT": str(DOUBLE_DIR), "LEAN_PATH": ""}, timeout=60,
        check=False,
    )  # fmt: skip
    assert done.returncode == 1 and "unknown module prefix 'Foo'" in done.stderr, done


def test_the_toolchains_library_comes_after_lean_path(tmp_path: Path) -> None:
    """B-F-D7: `initSearchPath` appends `<prefix>/lib/lean`; the double searched `LEAN_PATH` only."""
    assert _resolve("Init", str(tmp_path)) == str(DOUBLE_DIR / "bin" / ".." / "lib" / "lean" / "Init.olean")
    assert _resolve("Init", None).endswith("/lib/lean/Init.olean")


def test_a_root_olean_of_any_file_type_decides(tmp_path: Path) -> None:
    """A-D7(a), B-F-D8: `pathExists`, not "a regular file": a directory `Foo.olean` in an earlier
    entry decides (Lean then fails to read it), so a later entry's module is not loaded."""
    (tmp_path / "first" / "Foo.olean").mkdir(parents=True)
    _olean(tmp_path / "later" / "Foo" / "Bar.olean")
    assert _resolve("Foo.Bar", f"{tmp_path / 'first'}:{tmp_path / 'later'}") == ""


def _plain_judge(vd: Path, tc: Path = DOUBLE_DIR) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(vd)}
    argv = [
        str(tc / "bin" / "lean"),
        "-j",
        "1",
        "--run",
        "Judge.lean",
        *judge_args(("--olean", SUB_OLEAN_IN_VD), tc),
    ]
    return subprocess.run(argv, cwd=vd, env=env, capture_output=True, text=True, timeout=60, check=False)


SUB_OLEAN_IN_VD = "submission/Submission.olean"


def test_the_judge_never_globs_a_name_it_reads(tmp_path: Path) -> None:
    """A-D6: an import `Ini?` forged into the olean, with a file `Init` in the verdict directory:
    globbing made it the allowed `Init`; Lean refuses the module `Ini?`."""
    pkg = build(tmp_path, submission())
    vd = verdict_dir(tmp_path, pkg, None, OLEAN_JUDGE)
    with open(vd / SUB_OLEAN_IN_VD, "a", encoding="utf-8") as f:
        f.write("import Ini? /nowhere/Ini.olean\n")
    (vd / "Init").write_text("")
    done = _plain_judge(vd)
    verdict = json.loads(done.stdout.splitlines()[-1])
    assert verdict["verdict"] == "imports" and "Ini?" in verdict["reason"], verdict


@pytest.mark.parametrize("source", ["olean", "export"])
def test_an_unreadable_trusted_module_is_no_verdict(tmp_path: Path, source: str) -> None:
    """B-F-D2: the judge imports the trusted modules before its replay marker, so a trusted olean
    it cannot read ends it there (could not judge); the double printed the marker first and then
    a verdict (export: the builtins stood in for the trusted environment)."""
    pkg = build(tmp_path, submission())
    vd = verdict_dir(tmp_path, pkg, exported(pkg) if source == "export" else None)
    (vd / "lib" / "LeanCheckedNetwork" / "Weights.olean").write_text("not an olean\n")
    flag = (
        ("--export", "submission/Submission.ndjson") if source == "export" else ("--olean", SUB_OLEAN_IN_VD)
    )
    argv = [str(DOUBLE_DIR / "bin" / "lean"), "-j", "1", "--run", "Judge.lean", *judge_args(flag)]
    done = subprocess.run(
        argv, cwd=vd, env={"PATH": "/usr/bin:/bin", "HOME": str(vd)}, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1 and '{"phase":"replay"}' not in done.stdout, done
    assert "invalid header" in done.stdout


def test_the_judges_search_path_is_its_two_arguments(tmp_path: Path) -> None:
    """B-F-D5: `--toolchain-lib` under a directory with `:` was split by the double."""
    pkg = build(tmp_path, submission())
    vd = verdict_dir(tmp_path, pkg, None, OLEAN_JUDGE)
    odd = tmp_path / "x:y" / "tc"
    copy_double(odd)
    done = _plain_judge(vd, odd)
    assert done.returncode == 0, done
    assert json.loads(done.stdout.splitlines()[-1])["verdict"] == "ok"


async def test_the_native_judge_runs_from_any_toolchain_directory(tmp_path: Path) -> None:
    """B-F-D6: the double's `leanc` wrote the toolchain's path unquoted into the judge program, so
    under `tool chain$'x` it did not run and grading fell back to `lean --run`."""
    tc = copy_double(tmp_path / "tool chain$'x;y")
    res = await run_double(submission(), tmp_path, toolchain_dir=tc)
    assert res.accepted and res.judge_mode == "native", (res.reason, res.judge_note)


async def test_a_newline_in_a_path_grades_as_any_other(tmp_path: Path) -> None:
    """A-D4, B-F-D4: import paths went through newline-separated text (bin/lean's list for
    `record`, and the olean's `import` lines), so a directory with a newline cut them: `record`
    knew no imported name and the honest proof was rejected at the statement check (0.0)."""
    odd = tmp_path / "new\nline"
    res = await grade(submission(), grade_task(), double_config(odd, judge="replay"))
    assert res.accepted and res.verdict_from == "export", res.reason
    pkg = build(tmp_path / "new\ndecl forged", submission())
    olean = (pkg / SUB_OLEAN).read_text(encoding="utf-8")
    assert "\ndecl forged" not in olean and "new\\ndecl forged" in olean


def test_imports_are_found_by_name_not_by_their_recorded_path(tmp_path: Path) -> None:
    """B-F-D8: `known_names` followed the import paths recorded in each olean; Lean's
    `importModules` finds them by name. In a moved package, Weights' olean still names Network's
    old path, so the double no longer knew Network's names (`LeanCheckedNetwork.argmax`)."""
    helper = "theorem helper : LeanCheckedNetwork.argmax [] = 0 := by\n  sorry\n"
    pkg = build(tmp_path, submission() + "\n" + helper, name="before")
    moved = tmp_path / "after"
    shutil.move(str(pkg), moved)
    src = moved / "LeanCheckedNetwork" / "Submission.lean"
    out = moved / SUB_OLEAN
    done = subprocess.run(
        [str(DOUBLE_DIR / "bin" / "lean"), "-j", "1", "--json", "-o", str(out), "-i",
         str(out.with_suffix(".ilean")), str(src.relative_to(moved))],
        cwd=moved, env=env_for(DOUBLE_DIR, moved), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done
    records = [
        json.loads(ln[len("xdecl ") :]) for ln in out.read_text().splitlines() if ln.startswith("xdecl ")
    ]
    (rec,) = [r for r in records if r["name"] == "helper"]
    assert "LeanCheckedNetwork.argmax" in rec["type"]["mentions"], rec
