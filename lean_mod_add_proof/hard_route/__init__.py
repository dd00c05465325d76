"""The packed route's Lean draft (UNVERIFIED): the file and the task it is written for.

`PackedDraft.lean` is a whole Submission.lean for one hard task. It was written where no Lean
toolchain exists and has never been compiled. Two reviewers who did not write it audited it, and
their findings are fixed (docs/lean-audit.md). `lean-check` grades it on a machine with Lean and
reports the verdict, which counts for nothing in grading. Its Part 1 is the
computation `dataset/packed_route.py` models and counts.
"""

from __future__ import annotations

from pathlib import Path

#: The draft, shipped in the package so that `lean-check` finds it outside a checkout too.
DRAFT_PATH = Path(__file__).resolve().parent / "PackedDraft.lean"
#: The task the draft's literals (p, H) are written for.
DRAFT_TASK = "p109_h14_s0"
