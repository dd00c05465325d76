"""The second judge: the toolchain's own `lake comparator` (grading/comparator.py).

The pure parts are checked against what lean4's sources require (Check.lean's `Config`,
Manifest.lean's schema, the prompt signature). The runs go through real processes with the
toolchain double's `bin/lake`, which acts out Check.lean's `runChallenge` and decides nothing
about proofs: its verdicts are scripted by `-- double: comparator ...` lines (and it rejects a
solution mentioning `sorry`, as `checkAxioms` rejects `sorryAx`)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from helpers import DOUBLE_DIR, copy_double, grade_task, submission

from lean_mod_add_proof.grading import comparator as cmp
from lean_mod_add_proof.grading.lean_names import ALLOWED_AXIOMS, theorem_signature
from lean_mod_add_proof.grading.process import find_prlimit
from lean_mod_add_proof.grading.reference import reference_submission
from lean_mod_add_proof.grading.result import GraderConfig

P = 5
THEOREM = "LeanCheckedNetwork.Net.adds_mod_5"

# ---- the generated files are what the sources require (pure) ----------------------------------


def test_challenge_is_the_prompt_signature_proved_by_sorry() -> None:
    text = cmp.challenge_lean(P)
    assert text == (
        "import LeanCheckedNetwork.Weights\n\n"
        "theorem LeanCheckedNetwork.Net.adds_mod_5 : ∀ a, a < 5 → ∀ b, b < 5 → "
        "LeanCheckedNetwork.Net.answer a b = (a + b) % 5 := sorry\n"
    )
    assert text.splitlines()[2] == f"{theorem_signature(P)} := sorry"


def test_config_has_checks_config_fields() -> None:
    cfg = json.loads(cmp.config_json(P))
    assert cfg == {
        "challenge_module": "Challenge",
        "solution_module": "LeanCheckedNetwork.Submission",
        "theorem_names": [THEOREM],
        "definition_names": [],
        "permitted_axioms": ["propext", "Classical.choice", "Quot.sound"],
        "enable_nanoda": False,
    }
    # Both axioms modes permit exactly the allowed axioms (exact is handled by the verdict).
    assert json.loads(cmp.config_json(P, "exact"))["permitted_axioms"] == list(ALLOWED_AXIOMS)
    with pytest.raises(ValueError):
        cmp.permitted_axioms("bogus")  # type: ignore[arg-type]


def test_manifest_is_lakes_minimal_form() -> None:
    assert json.loads(cmp.MANIFEST_JSON) == {
        "version": "1.1.0",
        "packagesDir": ".lake/packages",
        "packages": [],
        "name": "LeanCheckedNetwork",
        "lakeDir": ".lake",
    }
    assert cmp.MANIFEST_JSON.endswith("}\n")


def test_package_files_and_command_line(tmp_path: Path) -> None:
    task = grade_task(P)
    files = cmp.comparator_files(P, task.network_lean, task.weights_lean, "SUB")
    assert set(files) == {
        "lakefile.toml",
        "lean-toolchain",
        "lake-manifest.json",
        "Challenge.lean",
        "LeanCheckedNetwork/Network.lean",
        "LeanCheckedNetwork/Weights.lean",
        "LeanCheckedNetwork/Submission.lean",
    }
    assert files["LeanCheckedNetwork/Submission.lean"] == b"SUB"
    assert files["lean-toolchain"] == b"leanprover/lean4:v4.35.0-rc2\n"
    lakefile = files["lakefile.toml"].decode()
    # Every module the comparator builds is a root of a library (isBuildableModule).
    assert 'name = "Challenge"' in lakefile
    assert '"LeanCheckedNetwork.Submission"' in lakefile and '"LeanCheckedNetwork.Weights"' in lakefile
    assert cmp.comparator_argv("/t/bin/lake", "comparator", tmp_path / "c.json") == [
        "/t/bin/lake",
        "comparator",
        "--config",
        str(tmp_path / "c.json"),
    ]
    assert cmp.comparator_argv("lake", "challenge", Path("c"), paranoid=True)[-1] == "--paranoid"
    cmp.write_package(tmp_path / "pkg", files)
    assert (tmp_path / "pkg" / "Challenge.lean").read_text(encoding="utf-8") == cmp.challenge_lean(P)
    with pytest.raises(FileExistsError):  # a fresh directory, always
        cmp.write_package(tmp_path / "pkg", files)


# ---- parsing `lake --help` and mapping outcomes (pure) -----------------------------------------

_USAGE = """Lake version 5.0.0 (Lean version 4.35.0-rc2)

USAGE:
  lake [OPTIONS] <COMMAND>

COMMANDS:
  new <name> <temp>     create a Lean package in a new directory
  build <targets>...    build targets
{extra}  serve                 start the Lean language server

BASIC OPTIONS:
  --version             print version and exit
  --config              not a command
"""


@pytest.mark.parametrize(
    ("extra", "want"),
    [
        ("  comparator            check a solution against a challenge\n", "comparator"),
        ("  challenge             check a solution against a challenge\n", "challenge"),
        ("  challenge   x\n  comparator   y\n", "comparator"),
        ("", None),
    ],
)
def test_parse_lake_help(extra: str, want: str | None) -> None:
    assert cmp.parse_lake_help(_USAGE.format(extra=extra)) == want


def _verdict(**kw: object) -> tuple[str, str]:
    base: dict[str, object] = {
        "exit_code": 0,
        "signal": None,
        "timed_out": False,
        "limit_exceeded": None,
        "text": "",
        "truncated": False,
    }
    base.update(kw)
    return cmp.comparator_verdict(**base)  # type: ignore[arg-type]


BEFORE = "Resolving dependencies\nBuilding Challenge\n"
AFTER = BEFORE + "Exporting #[x] from Challenge\nBuilding LeanCheckedNetwork.Submission\n"


def test_verdict_mapping() -> None:
    assert _verdict(text=AFTER + "Your solution is okay!\n") == ("accepted", "Your solution is okay!")
    assert _verdict(text=AFTER)[0] == "not_judged"  # exit 0 without the okay line
    assert _verdict(text=AFTER + "Your solution is okay!\n", axioms_mode="exact")[0] == "not_judged"
    v, why = _verdict(exit_code=1, text=AFTER + "error: Axiom 'sorryAx' is not permitted\n")
    assert v == "rejected" and "sorryAx" in why
    # Exit 1 before the solution's build: the trusted part failed (sandbox, challenge build).
    v, why = _verdict(exit_code=1, text=BEFORE + "error: Child exited with 1\n")
    assert v == "not_judged" and "before it reached the submission" in why
    assert _verdict(exit_code=1, text=AFTER + "error: Child exited with 137\n")[0] == "not_judged"
    assert _verdict(exit_code=1, text="x", truncated=True)[0] == "rejected"
    assert _verdict(exit_code=2, text="error: no bwrap\n") == (
        "not_judged",
        "lake comparator cannot run: error: no bwrap",
    )
    assert _verdict(exit_code=3, text=AFTER)[0] == "not_judged"
    assert _verdict(exit_code=None, signal=11, text=AFTER)[0] == "not_judged"
    assert _verdict(exit_code=None, signal=9, timed_out=True, text=AFTER)[0] == "rejected"
    assert _verdict(exit_code=None, signal=9, timed_out=True, text=BEFORE)[0] == "not_judged"
    assert (
        _verdict(exit_code=None, signal=9, limit_exceeded="memory cap exceeded", text=AFTER)[0] == "rejected"
    )
    # The okay line alone, printed by the submission's build, is no acceptance.
    assert _verdict(exit_code=1, text=AFTER + "Your solution is okay!\nerror: x\n")[0] == "rejected"


def test_host_requirements_name_what_is_missing(tmp_path: Path) -> None:
    found, missing = cmp.host_requirements(
        tmp_path, {"COMPARATOR_BWRAP": "/nonexistent/bwrap"}, system="Darwin"
    )
    text = "; ".join(missing)
    for want in ("Linux", "lake", "leanexport", "leanchecker", "/nonexistent/bwrap", "COMPARATOR_BWRAP"):
        assert want in text
    assert "git" in found and "env" in found and "which" in found


# ---- through real processes with the double ---------------------------------------------------


def _toolchain(tmp_path: Path, *switches: str, without: tuple[str, ...] = ()) -> Path:
    """A private copy of the double with the bundled `leanexport`/`leanchecker` present (stubs,
    unless the double already has its own) and `switches` set."""
    tc = copy_double(tmp_path / "toolchain")
    for tool in ("leanexport", "leanchecker"):
        stub = tc / "bin" / tool
        if not stub.exists():
            stub.write_text(f"#!/bin/sh\n# TOOLCHAIN DOUBLE stub for {tool} (not Lean)\nexit 0\n")
            stub.chmod(0o755)
    for name in switches:
        (tc / name).write_text("")
    for tool in without:
        (tc / "bin" / tool).unlink()
    return tc


def _run(
    text: str,
    tmp_path: Path,
    toolchain: Path,
    *,
    probe: cmp.ComparatorProbe | None = None,
    timeout_s: float = 30.0,
    **kw: object,
) -> cmp.ComparatorOutcome:
    task = grade_task(P)
    work = tmp_path / "grade"
    work.mkdir(exist_ok=True)
    cmp.clear_probe_cache()
    settings = GraderConfig(timeout_s=timeout_s)
    return asyncio.run(
        cmp.run_comparator(
            text,
            p=P,
            network_lean=task.network_lean,
            weights_lean=task.weights_lean,
            toolchain_dir=toolchain,
            work_dir=work,
            deadline=time.monotonic() + timeout_s,
            limits=cmp.comparator_limits(settings, work),
            prlimit=find_prlimit(),
            timeout_s=timeout_s,
            probe=probe,
            **kw,  # type: ignore[arg-type]
        )
    )


def test_reference_is_accepted(tmp_path: Path) -> None:
    tc = _toolchain(tmp_path)
    out = _run(reference_submission(P), tmp_path, tc)
    assert out.verdict == "accepted", out.reason
    assert out.judged and out.accepted and out.subcommand == "comparator" and out.judge == "comparator"
    (rec,) = out.commands
    config = tmp_path / "grade" / cmp.CONFIG_FILE
    assert rec.argv == [str(tc / "bin" / "lake"), "comparator", "--config", str(config)]
    assert rec.exit_code == 0 and "Your solution is okay!" in rec.output_tail
    assert "Building LeanCheckedNetwork.Submission" in rec.output_tail
    assert json.loads(config.read_text()) == cmp.comparator_config(P)
    pkg = tmp_path / "grade" / cmp.PACKAGE_DIR
    assert (pkg / "LeanCheckedNetwork" / "Submission.lean").read_text(
        encoding="utf-8"
    ) == reference_submission(P)
    assert (pkg / "lake-manifest.json").read_text() == cmp.MANIFEST_JSON


def test_reference_is_accepted_by_lake_challenge(tmp_path: Path) -> None:
    tc = _toolchain(tmp_path, "double-lake-challenge")
    out = _run(reference_submission(P), tmp_path, tc)
    assert out.verdict == "accepted", out.reason
    assert out.subcommand == "challenge" and out.commands[0].argv[1] == "challenge"


def test_sorry_proof_is_rejected(tmp_path: Path) -> None:
    text = f"import LeanCheckedNetwork.Weights\n\n{theorem_signature(P)} := by\n  sorry\n"
    out = _run(text, tmp_path, _toolchain(tmp_path))
    assert out.verdict == "rejected", out.reason
    assert "sorryAx" in out.reason and out.commands[0].exit_code == 1


@pytest.mark.parametrize(
    ("directive", "verdict"),
    [
        ("comparator reject the statement differs", "rejected"),
        ("comparator build-fail unknown identifier", "rejected"),
        ("comparator kernel-reject", "rejected"),
        ("comparator axioms propext Lean.ofReduceBool", "rejected"),
        ("comparator axioms propext Classical.choice Quot.sound", "accepted"),
        ("comparator killed", "not_judged"),
        ("comparator exit 3", "not_judged"),
        ("comparator crash", "not_judged"),
    ],
)
def test_scripted_outcomes(tmp_path: Path, directive: str, verdict: str) -> None:
    out = _run(submission(directive), tmp_path, _toolchain(tmp_path))
    assert out.verdict == verdict, out.reason


def test_wrong_statement_is_rejected(tmp_path: Path) -> None:
    text = reference_submission(P).replace("(a + b) % 5 := by", "(b + a) % 5 := by")
    out = _run(text, tmp_path, _toolchain(tmp_path))
    assert out.verdict == "rejected" and "statement differs" in out.reason


def test_missing_toolchain_is_not_judged(tmp_path: Path) -> None:
    out = _run(reference_submission(P), tmp_path, tmp_path / "no-such-toolchain")
    assert out.verdict == "not_judged" and "lake" in out.reason and out.commands == []


def test_missing_lake_is_not_judged(tmp_path: Path) -> None:
    tc = _toolchain(tmp_path, without=("lake",))
    out = _run(reference_submission(P), tmp_path, tc)
    assert out.verdict == "not_judged" and "lake (not in" in out.reason


def test_lake_without_the_subcommand_is_not_judged(tmp_path: Path) -> None:
    tc = _toolchain(tmp_path, "double-lake-no-comparator")
    probe = cmp.probe_comparator(tc, refresh=True)
    assert not probe.available and probe.subcommand is None and probe.lake is not None
    out = _run(reference_submission(P), tmp_path, tc)
    assert out.verdict == "not_judged" and "neither" in out.reason


def test_probe_reports_the_host(tmp_path: Path) -> None:
    tc = _toolchain(tmp_path)
    probe = cmp.probe_comparator(tc, refresh=True)
    assert probe.available, probe.reason
    assert probe.subcommand == "comparator" and probe.lake == str(tc / "bin" / "lake")
    assert probe.bwrap and Path(probe.bwrap).name == "bwrap"
    assert cmp.probe_comparator(tc) is probe  # cached
    bare = cmp.probe_comparator(tc, environ={"COMPARATOR_BWRAP": "/nonexistent/bwrap"}, refresh=True)
    assert not bare.available and "/nonexistent/bwrap" in bare.reason


def test_exit_2_is_not_judged(tmp_path: Path) -> None:
    """A bwrap Lake cannot find: `cannotRun`, exit 2 (the probe is bypassed to get there)."""
    tc = _toolchain(tmp_path)
    real = cmp.probe_comparator(tc, refresh=True)
    probe = cmp.ComparatorProbe(
        True, "forced", "comparator", lake=real.lake, bwrap="/nonexistent/bwrap", path_dirs=real.path_dirs
    )
    out = _run(reference_submission(P), tmp_path, tc, probe=probe)
    assert out.verdict == "not_judged" and "cannot run" in out.reason
    assert out.commands[0].exit_code == 2 and "bwrap" in out.reason


def test_no_manifest_is_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = cmp.comparator_files
    monkeypatch.setattr(
        cmp, "comparator_files", lambda *a: {k: v for k, v in files(*a).items() if k != "lake-manifest.json"}
    )
    out = _run(reference_submission(P), tmp_path, _toolchain(tmp_path))
    assert out.verdict == "not_judged" and "lake-manifest.json" in out.reason
    assert out.commands[0].exit_code == 2


def test_failure_before_the_solution_is_not_judged(tmp_path: Path) -> None:
    """No bundled exporter: Lake's export of the trusted challenge fails (exit 1), which says
    nothing about the submission."""
    tc = _toolchain(tmp_path)
    probe = cmp.probe_comparator(tc, refresh=True)
    (tc / "bin" / "leanexport").unlink()
    out = _run(reference_submission(P), tmp_path, tc, probe=probe)
    assert out.commands[0].exit_code == 1
    assert out.verdict == "not_judged" and "before it reached the submission" in out.reason


def test_timeout_in_the_solutions_build_is_rejected(tmp_path: Path) -> None:
    out = _run(submission("comparator sleep 30"), tmp_path, _toolchain(tmp_path), timeout_s=2.0)
    assert out.verdict == "rejected" and "timed out" in out.reason
    assert out.commands[0].exit_code is None


def test_flood_then_failure_is_rejected(tmp_path: Path) -> None:
    out = _run(
        submission("comparator flood 3000000", "comparator build-fail x"), tmp_path, _toolchain(tmp_path)
    )
    assert out.commands[0].truncated and out.verdict == "rejected"


def test_exact_axioms_mode_cannot_accept(tmp_path: Path) -> None:
    out = _run(reference_submission(P), tmp_path, _toolchain(tmp_path), axioms_mode="exact")
    assert out.verdict == "not_judged" and "exact" in out.reason


def test_no_time_left_is_not_judged(tmp_path: Path) -> None:
    task = grade_task(P)
    work = tmp_path / "grade"
    work.mkdir()
    tc = _toolchain(tmp_path)
    out = asyncio.run(
        cmp.run_comparator(
            reference_submission(P),
            p=P,
            network_lean=task.network_lean,
            weights_lean=task.weights_lean,
            toolchain_dir=tc,
            work_dir=work,
            deadline=time.monotonic() - 1,
            limits=None,
            prlimit=None,
            probe=cmp.probe_comparator(tc, refresh=True),
        )
    )
    assert out.verdict == "not_judged"


def test_reused_directory_is_not_judged(tmp_path: Path) -> None:
    tc = _toolchain(tmp_path)
    assert _run(reference_submission(P), tmp_path, tc).verdict == "accepted"
    out = _run(reference_submission(P), tmp_path, tc)  # the same work_dir again
    assert out.verdict == "not_judged" and "could not write" in out.reason


def test_the_shared_double_lists_the_subcommand() -> None:
    import subprocess

    done = subprocess.run([str(DOUBLE_DIR / "bin" / "lake"), "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and cmp.parse_lake_help(done.stdout) == "comparator"
