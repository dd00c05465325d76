"""The grader against the real pinned Lean toolchain. Every test here is skipped (with the reason
shown) when `leanprover/lean4:v4.35.0-rc2` is not installed; none of them ran on the machine this
was written on, which has no Lean. The expected stages follow lean-facts.md; premises marked [U]
there are noted where a test depends on them."""

from __future__ import annotations

from pathlib import Path

import pytest

from lean_mod_add_proof.constants import LEAN_TOOLCHAIN, reference_submission, theorem_signature
from lean_mod_add_proof.dataset.tasks import (
    DEFAULT_TASKS_DIR,
    TaskRecord,
    TaskSetError,
    load_tasks,
    weights_path,
)
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


def _small_task() -> tuple[TaskRecord, str]:
    try:
        records = [r for r in load_tasks(DEFAULT_TASKS_DIR) if r.p == P]
    except TaskSetError as exc:
        pytest.skip(f"no committed task set to take a p={P} network from: {exc}")
    if not records:
        pytest.skip(f"the committed task set has no p={P} task")
    record = min(records, key=lambda r: (r.hidden, r.seed))
    return record, weights_path(DEFAULT_TASKS_DIR, record.id).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> GraderConfig:
    root = tmp_path_factory.mktemp("lean")
    return GraderConfig(timeout_s=600, work_root=root / "work", cache_dir=root / "cache")


async def _grade(text: str, config: GraderConfig, *, skip_guard: bool = False) -> GradeResult:
    from lean_mod_add_proof.grading.pipeline import grade  # after the module-level skip

    task, weights = _small_task()
    return await grade(text, task, weights, config, skip_guard=skip_guard)


HEADER = "import LeanCheckedNetwork.Weights\n\n"


async def test_reference_proof_is_accepted(config: GraderConfig) -> None:
    res = await _grade(reference_submission(P), config)
    assert res.accepted, (res.reason, [c.output_tail for c in res.commands])
    assert set(res.axioms or []) <= {"propext", "Classical.choice", "Quot.sound"}


async def test_reference_proof_is_accepted_on_the_largest_task(config: GraderConfig) -> None:
    # The heaviest brute force in the set (p=23, H=32: 529 pairs x 23 dot products of 32 Ints),
    # under the default 300 s deadline. Never measured here [U]; the build time is printed so a
    # run on a machine with Lean shows how much of the budget it takes.
    from lean_mod_add_proof.grading.pipeline import grade

    records = [r for r in load_tasks(DEFAULT_TASKS_DIR) if r.p == 23 and r.hidden == 32]
    if not records:
        pytest.skip("the committed task set has no p=23, H=32 task")
    task = min(records, key=lambda r: r.seed)
    weights = weights_path(DEFAULT_TASKS_DIR, task.id).read_text(encoding="utf-8")
    res = await grade(reference_submission(23), task, weights, config.model_copy(update={"timeout_s": 300}))
    print(f"{task.id}: {res.stage_seconds} (grader {res.grader_seconds} s)")
    assert res.accepted, (res.reason, [c.output_tail for c in res.commands])


async def test_weaker_statement_fails_at_statement(config: GraderConfig) -> None:
    res = await _grade(HEADER + f"theorem LeanCheckedNetwork.Net.adds_mod_{P} : True := trivial\n", config)
    assert res.failed_stage == "statement", res.reason


async def test_ix_c_shadow_spec_fails_at_statement(config: GraderConfig) -> None:
    # A Spec of its own in a namespace the old dotted check-theorem name would have opened.
    text = HEADER + (
        "def LeanModAddProofCheck.LeanCheckedNetwork.Net.Spec : Prop := True\n\n"
        f"theorem LeanCheckedNetwork.Net.adds_mod_{P} : "
        "LeanModAddProofCheck.LeanCheckedNetwork.Net.Spec := trivial\n"
    )
    res = await _grade(text, config)
    assert res.failed_stage == "statement", res.reason


async def test_skip_kernel_tc_is_caught_by_leanchecker(config: GraderConfig) -> None:
    # Premises ([L], not run on a toolchain):
    # - The "invalid declaration, it uses unsafe declaration" check lives in the kernel
    #   (type_checker::infer_constant); the elaborator's addDecl calls addDeclCore with
    #   check := !debug.skipKernelTC (lean4 src/Lean/AddDecl.lean), so the build accepts the
    #   theorem. No elaborator-side unsafe check was found in the sources read.
    # - leanchecker's replay does NOT add unsafe/partial constants at all
    #   (lean4 src/Lean/Replay.lean, `replay`: "We skip unsafe constants, and also partial
    #   constants"), so the replay of the theorem fails with "(kernel) unknown constant 'cheat'"
    #   (or similar), not with "uses unsafe declaration". Either way the stage is leanchecker.
    # - `«debug».skipKernelTC` is the escaped spelling of the option `debug.skipKernelTC`; the
    #   guard is skipped here on purpose (it rejects `«`, `debug`, `unsafe`, `skipKernelTC`).
    text = HEADER + (
        "unsafe def cheat : False := cheat\n\n"
        "set_option «debug».skipKernelTC true in\n"
        f"{theorem_signature(P)} := cheat.elim\n"
    )
    res = await _grade(text, config, skip_guard=True)
    assert res.failed_stage == "leanchecker", (res.reason, [c.output_tail for c in res.commands])


async def test_custom_axiom_fails_at_axioms(config: GraderConfig) -> None:
    text = HEADER + f"axiom cheat : False\n\n{theorem_signature(P)} := cheat.elim\n"
    res = await _grade(text, config, skip_guard=True)
    assert res.failed_stage == "axioms", res.reason
    assert any("cheat" in a for a in res.axioms or [])


@pytest.mark.parametrize("tactic", ["decide +native", "native_decide"])
async def test_native_evaluation_fails_at_axioms(config: GraderConfig, tactic: str) -> None:
    res = await _grade(HEADER + f"{theorem_signature(P)} := by\n  {tactic}\n", config, skip_guard=True)
    assert res.failed_stage == "axioms", res.reason


def test_toolchain_is_the_pinned_one() -> None:
    assert isinstance(_FOUND, Toolchain)
    assert Path(_FOUND.lake).is_file() and Path(_FOUND.leanchecker).is_file()


async def test_build_time_code_stays_inside_the_sandbox(config: GraderConfig, tmp_path: Path) -> None:
    # With the guard off, a tactic configuration runs code during `lake build` (Meta.evalExpr',
    # premise [U] from the guard red-team): here it tries to write a file on the host. Under
    # bubblewrap the host's temp directory is hidden behind a fresh tmpfs and only the package
    # is writable, so the file must not appear, whatever the grade's verdict.
    from lean_mod_add_proof.grading.sandbox import probe_sandbox

    if not probe_sandbox().available:
        pytest.skip(f"sandbox unavailable: {probe_sandbox().reason}")
    marker = tmp_path / "written-by-the-build"
    text = HEADER + (
        "def pwn (_ : Unit) : Bool :=\n"
        f'  match EStateM.run (timeit "" (.FS.writeFile "{marker}" "x")) () with\n'
        "  | .ok _ _ => true\n"
        "  | .error _ _ => false\n\n"
        f"{theorem_signature(P)} := by\n  decide (kernel := pwn ())\n"
    )
    res = await _grade(text, config.model_copy(update={"sandbox": "on"}), skip_guard=True)
    assert res.sandboxed
    assert not marker.exists(), "the build wrote outside its package despite the sandbox"
