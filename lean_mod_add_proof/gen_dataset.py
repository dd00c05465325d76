"""`python -m lean_mod_add_proof.gen_dataset OUT_DIR RUN.npz ...`: trained networks to a task set.

A thin entry point; the logic lives in `lean_mod_add_proof.dataset.generator`."""

from __future__ import annotations

import sys

from lean_mod_add_proof.dataset.generator import main

if __name__ == "__main__":
    sys.exit(main())
