"""The Lean names and pins the grader enforces. The grader owns them; the prompt and the data set
read them from here (through `lean_mod_add_proof.constants`), so what the model is told and what is
enforced cannot drift apart."""

from __future__ import annotations

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


def theorem_signature(p: int) -> str:
    """The full signature the model must state (fully qualified, as written at top level)."""
    return (
        f"theorem {theorem_name(p)} : ∀ a, a < {p} → ∀ b, b < {p} → "
        f"LeanCheckedNetwork.Net.answer a b = (a + b) % {p}"
    )
