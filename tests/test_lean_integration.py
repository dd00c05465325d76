"""The grader against the real pinned Lean toolchain. Every test here is skipped, with the reason
shown, when `leanprover/lean4:v4.35.0-rc2` is not installed; none of them has run on the machines
this was written on, which have no Lean. `make lean-check` runs them after the self-test.

They exercise what the self-test's canaries do not: the largest task, both reference proofs,
coercions, shadowed names, native evaluation and build-time code under the sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from lean_mod_add_proof.constants import (
    LEAN_TOOLCHAIN,
    reference_submission,
    single_decide_submission,
    theorem_signature,
)
from lean_mod_add_proof.dataset.tasks import DEFAULT_TASKS_DIR, NETWORK_LEAN_PATH, load_tasks, weights_path
from lean_mod_add_proof.grading.result import GraderConfig, GradeResult
from lean_mod_add_proof.grading.toolchain import Toolchain, locate_toolchain

_FOUND = locate_toolchain()
if not isinstance(_FOUND, Toolchain):
    pytest.skip(
        f"Lean toolchain {LEAN_TOOLCHAIN} not found (run `lean-mod-add-proof install-lean`): {_FOUND.reason}",
        allow_module_level=True,
    )
if "toolchain double" in _FOUND.version:
    pytest.skip("the located toolchain is the test double, not Lean", allow_module_level=True)

pytestmark = pytest.mark.lean
P = 5
HEADER = "import LeanCheckedNetwork.Weights\n\n"


def _task(p: int, hidden: int):  # -> GradeTask, imported after the module-level skip
    from lean_mod_add_proof.grading.pipeline import GradeTask

    records = [r for r in load_tasks(DEFAULT_TASKS_DIR) if r.p == p and r.hidden == hidden]
    if not records:
        pytest.skip(f"the committed task set has no p={p}, H={hidden} task")
    record = min(records, key=lambda r: r.seed)
    return GradeTask(
        task_id=record.id,
        p=p,
        network_lean=NETWORK_LEAN_PATH.read_text(encoding="utf-8"),
        weights_lean=weights_path(DEFAULT_TASKS_DIR, record.id).read_text(encoding="utf-8"),
    )


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> GraderConfig:
    root = tmp_path_factory.mktemp("lean")
    return GraderConfig(timeout_s=600, work_root=root / "work", cache_dir=root / "cache", sandbox="auto")


async def _grade(text: str, config: GraderConfig, *, skip_guard: bool = False, p: int = P) -> GradeResult:
    from lean_mod_add_proof.grading.grader import grade

    hidden = 8
    return await grade(text, _task(p, hidden), config, skip_guard=skip_guard)


def _explain(res: GradeResult) -> tuple[str, list[str]]:
    return res.reason, [c.output_tail for c in res.commands]


def test_toolchain_is_the_pinned_one() -> None:
    assert isinstance(_FOUND, Toolchain)
    assert _FOUND.lean.is_file() and (_FOUND.dir / "lib" / "lean" / "Init.olean").is_file()


@pytest.mark.parametrize("route", ["replay (export)", "replay (olean)", "comparator"])
async def test_the_selftest_passes(config: GraderConfig, route: str) -> None:
    # Each route on its own: the export boundary is the goal; the olean replay and the
    # comparator are what grades where it is missing.
    from lean_mod_add_proof.grading.pipeline import ROUTES
    from lean_mod_add_proof.grading.selftest import run_selftest

    assert isinstance(_FOUND, Toolchain)
    chosen = next(r for r in ROUTES["auto"] if r.label == route)
    report = await run_selftest(_FOUND, config, NETWORK_LEAN_PATH.read_text(encoding="utf-8"), chosen)
    assert report.passed, [(c.name, c.got) for c in report.canaries if not c.passed]


@pytest.mark.parametrize("proof", [reference_submission, single_decide_submission], ids=["per-row", "single"])
@pytest.mark.parametrize(("p", "hidden"), [(5, 8), (23, 32)], ids=["smallest", "largest"])
async def test_reference_proofs_are_accepted_kernel_once(
    config: GraderConfig, proof, p: int, hidden: int
) -> None:
    # The build skips the kernel (-Ddebug.skipKernelTC=true); the judge's replay is the one check.
    from lean_mod_add_proof.grading.grader import grade

    res = await grade(proof(p), _task(p, hidden), config.model_copy(update={"timeout_s": 900}))
    print(f"p={p} H={hidden} {proof.__name__}: {res.stage_seconds}, peak {res.peak_memory_mb} MiB")
    assert res.accepted, _explain(res)
    assert "-Ddebug.skipKernelTC=true" in res.commands[-2].argv
    assert set(res.axioms or []) <= {"propext", "Classical.choice", "Quot.sound"}


async def test_true_plus_coercion_fails_at_the_statement(config: GraderConfig) -> None:
    # A theorem stated as True, and a CoeDep instance that would let `theorem _ : Spec := thm`
    # elaborate by coercion. The judge's kernel check inserts nothing, so the types must match.
    text = HEADER + (
        "open LeanCheckedNetwork.Net in\n"
        "instance coeTrueSpec : CoeDep True trivial Spec := ⟨by decide⟩\n\n"
        f"theorem LeanCheckedNetwork.Net.adds_mod_{P} : True := trivial\n"
    )
    res = await _grade(text, config, skip_guard=True)
    assert res.judged and res.failed_stage == "statement", _explain(res)


async def test_a_shadow_spec_fails_at_the_statement(config: GraderConfig) -> None:
    text = HEADER + (
        "def LeanModAddProofCheck.LeanCheckedNetwork.Net.Spec : Prop := True\n\n"
        f"theorem LeanCheckedNetwork.Net.adds_mod_{P} : "
        "LeanModAddProofCheck.LeanCheckedNetwork.Net.Spec := trivial\n"
    )
    res = await _grade(text, config)
    assert res.judged and res.failed_stage == "statement", _explain(res)


async def test_a_sorry_with_the_guard_skipped_fails_at_the_axiom_walk(config: GraderConfig) -> None:
    res = await _grade(HEADER + f"{theorem_signature(P)} := by\n  sorry\n", config, skip_guard=True)
    assert res.judged and res.failed_stage == "axioms", _explain(res)
    assert "sorryAx" in (res.axioms or [])


async def test_a_planted_import_is_rejected(config: GraderConfig) -> None:
    from lean_mod_add_proof.grading.grader import grade

    text = HEADER + "import LeanCheckedNetwork.Extra\n\n" + reference_submission(P).removeprefix(HEADER)
    res = await grade(
        text,
        _task(P, 8),
        config,
        skip_guard=True,
        extra_modules={"LeanCheckedNetwork.Extra": "theorem extraFact : True := trivial\n"},
    )
    assert res.judged and res.failed_stage == "leanchecker", _explain(res)
    assert "LeanCheckedNetwork.Extra" in res.reason


async def test_unsafe_under_skip_kernel_tc_is_caught_by_the_replay(config: GraderConfig) -> None:
    # The replay skips unsafe constants (src/Lean/Replay.lean), so the theorem meets an unknown
    # constant in the kernel.
    text = HEADER + (
        "unsafe def cheat : False := cheat\n\n"
        "set_option debug.skipKernelTC true in\n"
        f"{theorem_signature(P)} := cheat.elim\n"
    )
    res = await _grade(text, config, skip_guard=True)
    assert res.judged and res.failed_stage in ("build", "leanchecker"), _explain(res)


@pytest.mark.parametrize("tactic", ["decide +native", "native_decide"])
async def test_native_evaluation_fails_at_axioms(config: GraderConfig, tactic: str) -> None:
    res = await _grade(HEADER + f"{theorem_signature(P)} := by\n  {tactic}\n", config, skip_guard=True)
    assert res.judged and res.failed_stage == "axioms", _explain(res)


async def test_build_time_code_stays_inside_the_sandbox(config: GraderConfig, tmp_path: Path) -> None:
    # With the guard off, a tactic configuration runs code while the file elaborates
    # (Meta.evalExpr', src/Lean/Elab/Tactic/Config.lean). Under bubblewrap only the grade's own
    # directory is writable, so the file must not appear on the host, whatever the verdict.
    from lean_mod_add_proof.grading.sandbox import probe_sandbox

    if not probe_sandbox().available:
        pytest.skip(f"sandbox unavailable: {probe_sandbox().reason}")
    marker = tmp_path / "written-by-the-build"
    text = HEADER + (
        "def pwn (_ : Unit) : Bool :=\n"
        f'  match EStateM.run (IO.FS.writeFile "{marker}" "x") () with\n'
        "  | .ok _ _ => true\n"
        "  | .error _ _ => false\n\n"
        f"{theorem_signature(P)} := by\n  decide (kernel := pwn ())\n"
    )
    res = await _grade(text, config.model_copy(update={"sandbox": "on"}), skip_guard=True)
    assert res.sandboxed
    assert not marker.exists(), "build-time code wrote outside its grade despite the sandbox"
