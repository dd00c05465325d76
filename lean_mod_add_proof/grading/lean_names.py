"""The Lean names and pins the grader enforces. The grader owns them; the prompt and the data set
read them from here (through `lean_mod_add_proof.constants`), so what the model is told and what is
enforced cannot drift apart.

Where they are used: the grader writes the submission to `SUBMISSION_PATH` in a package with
Lake's layout and compiles it with the pinned toolchain's `lean` (Lake never runs while grading);
the trusted judge `Judge.lean` then reads the resulting olean without importing it, checks its
imports (only `Init` and `ALLOWED_IMPORTS`, with `REQUIRED_IMPORT` among them), replays it
through the kernel, kernel-checks the theorem against `SPEC_CONSTANT` under the name
`CHECK_THEOREM`, and reports the axioms, which must be among `ALLOWED_AXIOMS`."""

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

#: Name of the theorem the trusted judge (`Judge.lean`) adds to the replayed environment,
#: `theorem <CHECK_THEOREM> : <SPEC_CONSTANT> := <the submission's theorem>`, checked by the kernel
#: alone (no elaborator runs); a root-level name with no dots, so it lives in no namespace the
#: submission could have declared things in.
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
