"""Shared helpers: the toolchain double, tiny tasks built in tmp_path, process inspection."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from lean_mod_add_proof.constants import reference_submission, theorem_name
from lean_mod_add_proof.dataset.tasks import TaskRecord, sha256_text, split_for_seed, task_id
from lean_mod_add_proof.dataset.weights_lean import render_weights_lean
from lean_mod_add_proof.grading.result import GraderConfig

#: The test double of the Lean toolchain (shell scripts; not Lean, decides nothing about proofs).
DOUBLE_DIR = Path(__file__).resolve().parent / "toolchain_double"


def make_task(p: int = 5, hidden: int = 8, seed: int = 0, weights: str | None = None) -> TaskRecord:
    text = weights if weights is not None else weights_text(p)
    return TaskRecord(
        id=f"p{p:02d}_h{hidden:02d}_s{seed}",
        p=p,
        hidden=hidden,
        seed=seed,
        split="eval" if seed == 2 else "train",
        train_fraction=1.0,
        theorem=theorem_name(p),
        weights_sha256=sha256_text(text),
        min_margin=1,
        n_pairs=p * p,
        n_train_pairs=p * p,
        max_abs_weight=1,
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
    """The reference proof text plus `-- double: ...` directive lines for the double."""
    return reference_submission(p) + "".join(f"-- double: {d}\n" for d in directives)


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


#: The stage metrics every graded trace must carry (spelt out here, not derived from the code).
STAGE_KEYS = frozenset(
    f"lean_stages/{k}"
    for k in (
        "guard_passed",
        "build_passed",
        "leanchecker_passed",
        "statement_passed",
        "axioms_passed",
        "grader_seconds",
    )
)


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
                "split": split_for_seed(seed),
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
