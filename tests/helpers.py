"""Shared test helpers: the toolchain double, tiny tasks built in tmp_path, process inspection.
(Imported as `helpers`; pytest puts this directory on sys.path because conftest.py lives here.)"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import time
import uuid
from pathlib import Path

import pytest

from lean_mod_add_proof.constants import reference_submission, theorem_name
from lean_mod_add_proof.dataset.tasks import (
    NETWORK_LEAN_PATH,
    TaskRecord,
    sha256_text,
    split_for,
    task_id,
)
from lean_mod_add_proof.dataset.weights_lean import render_weights_lean
from lean_mod_add_proof.grading import workdirs
from lean_mod_add_proof.grading.grader import GradeTask, grade
from lean_mod_add_proof.grading.result import GraderConfig, GradeResult
from lean_mod_add_proof.grading.sandbox import probe_sandbox

#: The test double of the Lean toolchain (shell scripts; not Lean, decides nothing about proofs).
DOUBLE_DIR = Path(__file__).resolve().parent / "toolchain_double"


def grade_task(p: int = 5, weights: str | None = None) -> GradeTask:
    """What the grader is given for a task: the real Network.lean and a stand-in Weights.lean."""
    return GradeTask(
        task_id=f"p{p:02d}_h08_s0",
        p=p,
        network_lean=NETWORK_LEAN_PATH.read_text(encoding="utf-8"),
        weights_lean=weights if weights is not None else weights_text(p),
    )


def make_task(p: int = 5, hidden: int = 8, seed: int = 0, weights: str | None = None) -> TaskRecord:
    """A tasks.jsonl row for a stand-in task."""
    text = weights if weights is not None else weights_text(p)
    return TaskRecord(
        id=f"p{p:02d}_h{hidden:02d}_s{seed}",
        p=p,
        hidden=hidden,
        seed=seed,
        split=split_for(p, seed),
        train_fraction=1.0,
        theorem=theorem_name(p),
        weights_sha256=sha256_text(text),
        min_margin=1,
        n_pairs=p * p,
        n_train_pairs=p * p,
        max_abs_weight=1,
        kernel_mul_adds=2 * p**3 * hidden,
    )


def weights_text(p: int = 5, *directives: str) -> str:
    """A stand-in Weights.lean for the double (it only hashes it and reads `-- double:` lines)."""
    lines = [
        "import LeanCheckedNetwork.Network",
        "",
        "namespace LeanCheckedNetwork.Net",
        "def E1 : List (List Int) := [[Int.ofNat 1]]",
        "def E2 : List (List Int) := [[Int.ofNat 1]]",
        "def W2 : List (List Int) := [[Int.ofNat 1]]",
        "def answer (a b : Nat) : Nat := LeanCheckedNetwork.answer E1 E2 W2 a b",
        f"def Spec : Prop := ∀ a, a < {p} → ∀ b, b < {p} → answer a b = (a + b) % {p}",
        "end LeanCheckedNetwork.Net",
        *(f"-- double: weights {d}" for d in directives),
    ]
    return "\n".join(lines) + "\n"


def submission(*directives: str, p: int = 5) -> str:
    """The reference proof text with `-- double: ...` directive lines for the double, written
    right above the theorem: a `judge` directive there belongs to the theorem, so it travels in
    the theorem's export (a verdict directive that belongs to no declaration never does,
    tests/toolchain_double/README.md)."""
    text = reference_submission(p)
    header = f"theorem {theorem_name(p)} "
    at = text.index("\n" + header) + 1
    return text[:at] + "".join(f"-- double: {d}\n" for d in directives) + text[at:]


def double_config(tmp_path: Path, **overrides: object) -> GraderConfig:
    base: dict[str, object] = {
        "toolchain_dir": DOUBLE_DIR,
        "work_root": tmp_path / "work",
        "cache_dir": tmp_path / "cache",
        "sandbox": "off",
        "timeout_s": 30.0,
        "memory_mb": 1024,
    }
    base.update(overrides)
    return GraderConfig(**base)  # type: ignore[arg-type]


def processes_with(marker: str) -> list[int]:
    """PIDs of live processes whose command line mentions `marker` (read from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry))
    return found


#: The stage metrics every trace with a verdict must carry (spelt out here, not derived from the
#: code); a trace without one carries `judged`, `grader_seconds` and only the stages it passed.
STAGE_KEYS = frozenset(
    f"lean_stages/{k}"
    for k in (
        "guard_passed",
        "build_passed",
        "leanchecker_passed",
        "statement_passed",
        "axioms_passed",
        "judged",
        "grader_seconds",
    )
)


def task_dir(tmp_path: Path) -> Path:
    """A tasks directory, `tmp_path / "tasks"`, holding the one stand-in task (`make_task`): its
    Weights.lean and its tasks.jsonl row. Made again over an existing one."""
    tasks = tmp_path / "tasks"
    record = make_task()
    (tasks / record.id).mkdir(parents=True, exist_ok=True)
    (tasks / record.id / "Weights.lean").write_text(weights_text(), encoding="utf-8")
    (tasks / "tasks.jsonl").write_text(json.dumps(record.to_json()) + "\n", encoding="utf-8")
    return tasks


def make_task_set(root: Path, specs=((5, 8, 0), (5, 8, 2), (7, 16, 1), (11, 8, 0))) -> Path:
    """A small task set in the generated format (random weights: tests using it never run Lean).
    Seed 1 rows claim train_fraction 0.9 and rows have min_margin 3 + seed, so filters show."""
    root.mkdir(parents=True, exist_ok=True)
    rows = []
    rng = random.Random(1)
    for p, hidden, seed in specs:
        tid = task_id(p, hidden, seed)
        mats = [[[rng.randint(-127, 127) for _ in range(hidden)] for _ in range(p)] for _ in range(3)]
        text = render_weights_lean(tid, p, hidden, seed, *mats)
        (root / tid).mkdir()
        (root / tid / "Weights.lean").write_text(text, encoding="utf-8")
        rows.append(
            {
                "id": tid,
                "p": p,
                "hidden": hidden,
                "seed": seed,
                "split": split_for(p, seed),
                "train_fraction": 0.9 if seed == 1 else 1.0,
                "theorem": f"LeanCheckedNetwork.Net.adds_mod_{p}",
                "weights_sha256": sha256_text(text),
                "min_margin": 3 + seed,
                "n_pairs": p * p,
                "n_train_pairs": p * p,
                "max_abs_weight": 127,
                "kernel_mul_adds": 2 * p**3 * hidden,
            }
        )
    (root / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return root


async def run_double(
    text: str,
    tmp_path: Path,
    stages: list[str] | None = None,
    *,
    task: GradeTask | None = None,
    skip_guard: bool = False,
    olean_route: bool = False,
    **cfg: object,
) -> GradeResult:
    """Grade `text` against the toolchain double. The self-test is skipped explicitly: the
    double acts out only what the directives in the text script (`grade(skip_selftest=True)` is
    the documented test-only switch; the self-test itself is tested in test_selftest.py).
    `olean_route`: a double without `leanexport`, so the judge reads the build's olean (for tests
    of what that route alone must refuse, and of commands in the olean route's order)."""
    if olean_route:
        cfg.setdefault("toolchain_dir", olean_only_double(tmp_path))
    return await grade(
        text,
        task or grade_task(),
        double_config(tmp_path, **cfg),
        on_stage=stages.append if stages is not None else None,
        skip_guard=skip_guard,
        skip_selftest=True,
    )


def olean_only_double(tmp_path: Path) -> Path:
    """A private copy of the double that has no `leanexport` (made once per test)."""
    dest = tmp_path / "double-without-leanexport"
    if not dest.exists():
        copy_double(dest)
        (dest / "double-no-leanexport").write_text("")
    return dest


def copy_double(dest: Path) -> Path:
    """A private copy of the toolchain double (for tests that script it by files in its dir)."""
    shutil.copytree(DOUBLE_DIR, dest, symlinks=True)
    return dest


def marker() -> str:
    """A unique string to find a test's processes by."""
    return f"lmap{uuid.uuid4().hex[:12]}"


def work_dirs(tmp_path: Path) -> list[Path]:
    """What is left under the work root once the grader's queued removals have ended."""
    assert workdirs.wait_reaped(timeout=30), "a grade directory's queued removal did not end"
    root = tmp_path / "work"
    return list(root.iterdir()) if root.exists() else []


async def wait_gone(mark: str, seconds: float = 3.0) -> list[int]:
    """Killed processes may take a moment to vanish from /proc."""
    end = time.monotonic() + seconds
    while (left := processes_with(mark)) and time.monotonic() < end:
        await asyncio.sleep(0.05)
    return left


BWRAP = probe_sandbox()
needs_bwrap = pytest.mark.skipif(not BWRAP.available, reason=f"no working sandbox: {BWRAP.reason}")


def require_comparator() -> None:
    """Skip, with the probe's reason, where the comparator cannot run on this host (it needs
    bubblewrap, which some machines cannot install: issue 29). The probe is the grader's own, so
    a host where it says "available" still runs every comparator test. Called inside a test, not
    at import, so that collection does not run `lake --help`."""
    from lean_mod_add_proof.grading.routes.comparator import probe_comparator

    probe = probe_comparator(DOUBLE_DIR)
    if not probe.available:
        pytest.skip(f"the comparator cannot run on this host: {probe.reason}")


#: For a test that runs the comparator (see `require_comparator`).
needs_comparator = pytest.mark.usefixtures("comparator_host")


#: A well-formed accepting verdict of the judge, as a dict (tests build verdict lines from it).
GOOD_VERDICT: dict[str, object] = {
    "judge": 1,
    "verdict": "ok",
    "reason": "",
    "imports": ["Init", "LeanCheckedNetwork.Weights"],
    "replayed": 3,
    "theorem_kind": "theorem",
    "axioms": ["propext"],
    "check_axioms": ["propext"],
}


def toolchain_dir_of(res: GradeResult) -> Path:
    """The directory of the toolchain that graded `res` (its `toolchain` is `Toolchain.label`:
    `DIR (VERSION)`, the double's with its banner first)."""
    from lean_mod_add_proof.grading.toolchain import DOUBLE_BANNER

    assert res.toolchain is not None
    return Path(res.toolchain.removeprefix(f"{DOUBLE_BANNER}: ").split(" (")[0])


def build_output(res: GradeResult) -> str:
    """The kept output of the submission's own build (`lean ... Submission.lean`), wherever it
    stands among the grade's commands (the export and the judge come after it)."""
    builds = [c for c in res.commands if c.argv and c.argv[-1].endswith("Submission.lean")]
    assert builds, [c.argv for c in res.commands]
    return builds[-1].output_tail


def count_selftest_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the self-test runs from here on (one entry each); the real self-test still runs."""
    from lean_mod_add_proof.grading import selftest

    runs: list[int] = []
    real = selftest.run_selftest

    async def counting(*args: object) -> selftest.SelfTestReport:
        runs.append(1)
        return await real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(selftest, "run_selftest", counting)
    return runs
