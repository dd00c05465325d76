"""Facts shared by the data set, the prompt and the grader, so that what the model is told and
what the grader enforces come from one place."""

from __future__ import annotations

from lean_mod_add_proof.grading.lean_names import (  # noqa: F401  (re-exported)
    ALLOWED_AXIOMS,
    ALLOWED_IMPORTS,
    CHECK_THEOREM,
    LEAN_TOOLCHAIN,
    LEAN_VERSION,
    NETWORK_MODULE,
    PACKAGE_NAME,
    REQUIRED_IMPORT,
    SPEC_CONSTANT,
    SUBMISSION_MODULE,
    SUBMISSION_PATH,
    WEIGHTS_MODULE,
    theorem_name,
    theorem_signature,
)
from lean_mod_add_proof.grading.reference import (  # noqa: F401  (re-exported)
    reference_submission,
    single_decide_submission,
)

#: The id `vf-eval` and the Environments Hub know this taskset by (module `lean_mod_add_proof`).
TASKSET_ID = "lean-mod-add-proof"


def theorem_statement(p: int) -> str:
    """The statement of `Spec` for modulus `p`, as it is written in Weights.lean's namespace."""
    return f"∀ a, a < {p} → ∀ b, b < {p} → answer a b = (a + b) % {p}"
