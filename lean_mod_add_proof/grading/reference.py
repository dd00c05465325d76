"""The reference proofs: what an honest brute-force Submission.lean looks like (pure).

Both let the kernel evaluate the network on every pair. The kernel keeps its whnf cache for a
whole declaration, so one `decide +kernel` over all p² pairs holds every intermediate value of
the largest tasks at once; one lemma per row `a` (each a `decide +kernel` over `b`) frees that
cache between rows, which bounds peak memory by one row's work at the same total time. The
grader's build skips kernel checks (`-Ddebug.skipKernelTC=true`), so each lemma is checked once,
by the judge's replay.

Every construct is core Lean 4; sources (leanprover/lean4):
- `decide +kernel`: the `decide` tactic with `DecideConfig.kernel` ("use only kernel reduction"),
  `+opt` config syntax (src/Init/Tactics.lean; src/Lean/Elab/Tactic/Decide.lean `doKernel`, which
  adds the auxiliary lemma through `addDecl`, capped by `maxHeartbeats`);
- `set_option maxHeartbeats 0 in`: the `set_option ... in` command combinator
  (src/Lean/Elab/SetOption.lean, src/Init/Prelude.lean `maxHeartbeats` option), lifting that cap
  for one declaration; without skipKernelTC (a user rebuilding the kept package) it matters;
- `match a, ha with | 0, _ => ... | n + k, h => ...`: matching several discriminants with Nat
  literal and offset patterns (src/Lean/Elab/Match.lean), so `ha` is refined with `a`;
- `absurd : a → ¬a → b` (src/Init/Prelude.lean) and `omega` (src/Lean/Elab/Tactic/Omega),
  closing the impossible `n + p < p` case.
"""

from __future__ import annotations

from lean_mod_add_proof.grading.lean_names import WEIGHTS_MODULE, theorem_name, theorem_signature


def row_lemma_name(p: int, a: int) -> str:
    return f"{theorem_name(p)}_row_{a}"


def reference_submission(p: int) -> str:
    """One `decide +kernel` lemma per row `a`, combined by cases on `a`."""
    rows = "".join(
        f"set_option maxHeartbeats 0 in\n"
        f"theorem {row_lemma_name(p, a)} :\n"
        f"    ∀ b, b < {p} → LeanCheckedNetwork.Net.answer {a} b = ({a} + b) % {p} := by\n"
        f"  decide +kernel\n\n"
        for a in range(p)
    )
    cases = "".join(f"  | {a}, _ => exact {row_lemma_name(p, a)}\n" for a in range(p))
    return (
        f"import {WEIGHTS_MODULE}\n\n"
        f"{rows}"
        f"{theorem_signature(p)} := by\n"
        f"  intro a ha\n"
        f"  match a, ha with\n"
        f"{cases}"
        f"  | n + {p}, h => exact absurd h (by omega)\n"
    )


def single_decide_submission(p: int) -> str:
    """The whole statement in one `decide +kernel` (simplest; the kernel's cache then holds all
    p² evaluations at once, so it is the memory-hungry form on the largest tasks)."""
    return (
        f"import {WEIGHTS_MODULE}\n\n"
        f"set_option maxHeartbeats 0 in\n"
        f"{theorem_signature(p)} := by\n  decide +kernel\n"
    )
