"""Shared helpers: the toolchain double, tiny tasks built in tmp_path, process inspection."""

from __future__ import annotations

import os
from pathlib import Path

from lean_mod_add_proof.constants import reference_submission, theorem_name
from lean_mod_add_proof.dataset.tasks import TaskRecord, sha256_text
from lean_mod_add_proof.grading.result import GraderConfig

#: The test double of the Lean toolchain (shell scripts; not Lean, decides nothing about proofs).
DOUBLE_DIR = Path(__file__).resolve().parent / "toolchain_double"


def make_task(p: int = 5, hidden: int = 8, seed: int = 0, weights: str | None = None) -> TaskRecord:
    text = weights if weights is not None else weights_text(p)
    return TaskRecord(
        id=f"p{p:02d}_h{hidden:02d}_s{seed}", p=p, hidden=hidden, seed=seed,
        split="eval" if seed == 2 else "train", train_fraction=1.0, theorem=theorem_name(p),
        weights_sha256=sha256_text(text), min_margin=1, n_pairs=p * p, n_train_pairs=p * p,
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
