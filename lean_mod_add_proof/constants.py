"""Facts shared by the data set, the prompt and the grader, so that what the model is told and
what the grader enforces come from one place."""

from __future__ import annotations

#: The id `vf-eval` and the Environments Hub know this taskset by (module `lean_mod_add_proof`).
TASKSET_ID = "lean-mod-add-proof"

#: The Lean toolchain every grade runs on (written into each package's `lean-toolchain`).
LEAN_TOOLCHAIN = "leanprover/lean4:v4.35.0-rc2"
#: The version string `lean --version` must contain for the toolchain to count as the pinned one.
LEAN_VERSION = "4.35.0-rc2"

PACKAGE_NAME = "LeanCheckedNetwork"
NETWORK_MODULE = "LeanCheckedNetwork.Network"
WEIGHTS_MODULE = "LeanCheckedNetwork.Weights"
SUBMISSION_MODULE = "LeanCheckedNetwork.Submission"
SUBMISSION_PATH = "LeanCheckedNetwork/Submission.lean"

#: Imports a submission may use; the Weights import is also required.
ALLOWED_IMPORTS: tuple[str, ...] = (NETWORK_MODULE, WEIGHTS_MODULE)
REQUIRED_IMPORT = WEIGHTS_MODULE

#: The only axioms a proof may depend on.
ALLOWED_AXIOMS: tuple[str, ...] = ("propext", "Classical.choice", "Quot.sound")

#: Name of the theorem Check.lean states; no dots, so no namespace opens while it elaborates.
CHECK_THEOREM = "leanModAddProofCheck_statement_matches"
SPEC_CONSTANT = "LeanCheckedNetwork.Net.Spec"


def theorem_name(p: int) -> str:
    """The fully qualified name of the theorem a submission for modulus `p` must prove."""
    return f"LeanCheckedNetwork.Net.adds_mod_{p}"


def theorem_statement(p: int) -> str:
    """The statement of `Spec` for modulus `p`, as it is written in Weights.lean's namespace."""
    return f"∀ a, a < {p} → ∀ b, b < {p} → answer a b = (a + b) % {p}"


def theorem_signature(p: int) -> str:
    """The full signature the model must state (fully qualified, as written at top level)."""
    return (
        f"theorem {theorem_name(p)} : ∀ a, a < {p} → ∀ b, b < {p} → "
        f"LeanCheckedNetwork.Net.answer a b = (a + b) % {p}"
    )


def reference_submission(p: int) -> str:
    """The brute-force reference proof: the kernel evaluates the network on all p*p pairs.

    `decide +kernel` checks its auxiliary lemma through `addDecl`, which is capped by
    `maxHeartbeats` (default 200000, lean4 src/Lean/AddDecl.lean); the largest tasks may need more
    than that (unmeasured: no Lean here), so the limit is lifted for this one theorem. The grader's
    deadline and memory cap still bound the run. `set_option ... in` is core syntax."""
    return (
        f"import {WEIGHTS_MODULE}\n\n"
        f"set_option maxHeartbeats 0 in\n"
        f"{theorem_signature(p)} := by\n  decide +kernel\n"
    )
