"""lean-mod-add-proof: a verifiers v1 taskset in which a model proves, in Lean 4, that a frozen
integer network computes (a + b) % p on every input pair.

`vf-eval lean-mod-add-proof` imports this package and reads `__all__` (one Taskset subclass and
one Env subclass). The classes are imported lazily (PEP 562), so `import lean_mod_add_proof`
(e.g. by the `lean-mod-add-proof` CLI) does not pull in verifiers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lean_mod_add_proof.taskset import LeanEnv, LeanModAddProofTaskset

__all__ = ["LeanEnv", "LeanModAddProofTaskset"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from lean_mod_add_proof import taskset

        return getattr(taskset, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
