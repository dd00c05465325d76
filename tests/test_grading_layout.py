"""Pure pieces of the grader: the package layout, the judge's protocol, the cache key, the
toolchain pin. No processes."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from helpers import GOOD_VERDICT

from lean_mod_add_proof.constants import CHECK_THEOREM, SPEC_CONSTANT, SUBMISSION_MODULE, theorem_name
from lean_mod_add_proof.grading import package as pkgmod
from lean_mod_add_proof.grading import process, toolchain
from lean_mod_add_proof.grading.judge import (
    JudgeOutputError,
    interpreted_judge,
    judge_argv,
    parse_judge_output,
)
from lean_mod_add_proof.grading.result import GradeResult
from lean_mod_add_proof.grading.routes.replay import JUDGE_IMPORTS
from lean_mod_add_proof.grading.routes.steps import SKIP_KERNEL_OPTION


def test_cache_key_covers_its_inputs() -> None:
    sources = pkgmod.package_sources(b"network", "weights")
    key = pkgmod.cache_key("v1", Path("/tc"), sources)
    assert key == pkgmod.cache_key("v1", Path("/tc"), dict(sources))
    assert key != pkgmod.cache_key("v2", Path("/tc"), sources)
    assert key != pkgmod.cache_key("v1", Path("/tc2"), sources)
    assert key != pkgmod.cache_key("v1", Path("/tc"), pkgmod.package_sources(b"network", "weights2"))
    assert key != pkgmod.cache_key("v1", Path("/tc"), pkgmod.package_sources(b"network2", "weights"))


def test_trusted_selection() -> None:
    assert pkgmod.is_trusted("LeanCheckedNetwork/Weights.lean")
    assert pkgmod.is_trusted("lakefile.toml")
    assert pkgmod.is_trusted(".lake/build/lib/lean/LeanCheckedNetwork/Weights.olean")
    assert pkgmod.is_trusted(".lake/build/lib/lean/LeanCheckedNetwork/Network.ilean")
    assert not pkgmod.is_trusted(".lake/build/lib/lean/LeanCheckedNetwork/Weights.trace")
    assert not pkgmod.is_trusted(".lake/build/lib/lean/LeanCheckedNetwork/Submission.olean")
    assert not pkgmod.is_trusted("LeanCheckedNetwork/Submission.lean")
    assert not pkgmod.is_trusted(".lake/build/lib/lean/Init.olean")
    assert pkgmod.missing_outputs({"LeanCheckedNetwork/Weights.lean": "x"}) == [
        "LeanCheckedNetwork.Network",
        "LeanCheckedNetwork.Weights",
    ]


def test_compile_argv_is_plain_lean_with_lakes_layout() -> None:
    argv = pkgmod.compile_argv("/tc/bin/lean", SUBMISSION_MODULE, (SKIP_KERNEL_OPTION,), threads=3)
    assert argv == [
        "/tc/bin/lean",
        "-j",
        "3",
        "--json",
        "-Ddebug.skipKernelTC=true",
        "-o",
        ".lake/build/lib/lean/LeanCheckedNetwork/Submission.olean",
        "-i",
        ".lake/build/lib/lean/LeanCheckedNetwork/Submission.ilean",
        "LeanCheckedNetwork/Submission.lean",
    ]
    assert not any(Path(a).name == "lake" for a in argv)


def test_lean_path_puts_the_toolchain_first() -> None:
    path = pkgmod.lean_path(Path("/tc"), Path("/grade/verdict/lib"))
    assert path.split(":") == ["/tc/lib/lean", "/grade/verdict/lib"]


def test_judge_argv_reads_the_submission_off_the_search_path() -> None:
    argv = judge_argv(
        interpreted_judge("/tc/bin/lean", 1),
        submission_module=SUBMISSION_MODULE,
        theorem=theorem_name(7),
        spec=SPEC_CONSTANT,
        check=CHECK_THEOREM,
        toolchain_dir=Path("/tc"),
        allowed_imports=JUDGE_IMPORTS,
        required_imports=("LeanCheckedNetwork.Weights",),
    )
    # the shell's own `-j` before `--run`: after the file, everything goes to the judge's main
    assert argv[:5] == ["/tc/bin/lean", "-j", "1", "--run", "Judge.lean"]
    pairs = dict(zip(argv[5::2], argv[6::2], strict=False))
    assert pairs["--olean"] == "submission/Submission.olean"
    assert pairs["--lib"] == "lib" and not pairs["--olean"].startswith(pairs["--lib"] + "/")
    assert pairs["--toolchain-lib"] == "/tc/lib/lean"
    assert pairs["--theorem"] == "LeanCheckedNetwork.Net.adds_mod_7"
    allowed = [argv[i + 1] for i, a in enumerate(argv) if a == "--allow-import"]
    assert allowed == ["Init", "LeanCheckedNetwork.Network", "LeanCheckedNetwork.Weights"]


GOOD = GOOD_VERDICT


def _as_lean_prints(obj: dict) -> str:
    """A verdict line as Lean could print it: no spaces; the parser relies on no key order."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def test_parse_judge_output_takes_the_last_line() -> None:
    line = _as_lean_prints(GOOD)
    assert line.startswith('{"axioms":')  # so no parser may expect the judge key first
    report = parse_judge_output("some log line\n" + line + "\n\n")
    assert report.verdict == "ok" and report.axioms == ["propext"]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "no verdict"),
        ("plain text only", "no verdict"),
        (_as_lean_prints(GOOD) + "\n" + json.dumps(GOOD), "more than one"),
        (_as_lean_prints(GOOD) + "\ntrailing", "after its verdict"),
        ('{"axioms":[],"judge":1,"verdict":"ok"', "unreadable"),
        (json.dumps({**GOOD, "verdict": "yes"}), "unreadable"),
        (json.dumps({**GOOD, "judge": 2}), "unreadable"),
        (json.dumps({**GOOD, "extra": 1}), "unreadable"),
        (json.dumps({k: v for k, v in GOOD.items() if k != "axioms"}), "unreadable"),
        ('{"judge": 1, "verdict": "ok"', "unreadable"),
    ],
)
def test_parse_judge_output_is_strict(text: str, why: str) -> None:
    with pytest.raises(JudgeOutputError, match=why):
        parse_judge_output(text)


def test_stage_flags_are_derived() -> None:
    rejected = GradeResult(stage_reached="statement", failed_stage="statement")
    assert rejected.build_passed and rejected.leanchecker_passed and not rejected.statement_passed
    assert not rejected.accepted and rejected.reward == 0.0 and rejected.judged
    accepted = GradeResult(stage_reached="axioms")
    assert accepted.accepted and accepted.reward == 1.0 and accepted.axioms_passed
    unjudged = GradeResult(stage_reached="axioms", failed_stage="leanchecker", judged=False)
    assert not unjudged.accepted and unjudged.stage_flags()["judged"] == 0.0
    # the flags go onto traces as computed; reading a trace back derives them again
    dumped = accepted.model_dump(mode="json")
    assert dumped["accepted"] is True and dumped["guard_passed"] is True
    assert GradeResult.model_validate({**dumped, "accepted": False, "reward": 0.0}).reward == 1.0
    assert GradeResult.model_validate({**dumped, "judged": False}).reward == 0.0


def test_version_match_is_exact() -> None:
    assert toolchain.version_matches("Lean (version 4.35.0-rc2, x86_64-unknown-linux-gnu, commit abc)")
    assert not toolchain.version_matches("Lean (version 4.35.0-rc20, x86_64)")
    assert not toolchain.version_matches("Lean (version 4.35.0, x86_64)")
    assert toolchain.ELAN_DIR_NAME == "leanprover--lean4---v4.35.0-rc2"


def test_the_process_package_imports_one_way_and_stays_small() -> None:
    """Issue 35: the layout its docstring gives, bottom to top, is the import order (each module
    imports only modules above it: no cycle); no module over 900 lines, no class over 300."""
    root = Path(process.__file__).parent
    order = re.findall(r"^- (\w+)\.py:", process.__doc__ or "", re.M)
    assert sorted(order) == sorted(p.stem for p in root.glob("*.py") if p.stem != "__init__")
    for i, name in enumerate(order):
        source = (root / f"{name}.py").read_text(encoding="utf-8")
        assert source.count("\n") <= 900, name
        nodes = list(ast.walk(ast.parse(source)))
        imported = {n.module or "" for n in nodes if isinstance(n, ast.ImportFrom)}
        ours = {m.rsplit(".", 1)[-1] for m in imported if m.startswith(process.__name__ + ".")}
        assert ours <= set(order[:i]), (name, ours - set(order[:i]))
        assert process.__name__ not in imported, name  # never through the package's __init__
        big = [n.name for n in nodes if isinstance(n, ast.ClassDef) and (n.end_lineno or 0) - n.lineno >= 300]
        assert big == [], (name, big)


#: Modules over 900 lines that this test found and that are not split yet, with their size: the
#: test fails when one grows, shrinks under the limit (take it off) or another appears. (kernels.py,
#: 920 lines after issue 36, is split: its cited table is checker_rows.py.)
OVERSIZED_MODULES: dict[str, int] = {}


def test_every_grading_module_and_class_stays_small() -> None:
    """The project's standard for all of grading/ (the process package checks its own above): no
    module over 900 lines, no class over 300."""
    root = Path(process.__file__).parent.parent
    oversized = {}
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        name = str(path.relative_to(root))
        if source.count("\n") > 900:
            oversized[name] = source.count("\n")
        nodes = ast.walk(ast.parse(source))
        big = [n.name for n in nodes if isinstance(n, ast.ClassDef) and (n.end_lineno or 0) - n.lineno >= 300]
        assert big == [], (name, big)
    assert oversized == OVERSIZED_MODULES
