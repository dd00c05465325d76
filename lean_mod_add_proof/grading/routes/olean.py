"""The olean route (the weaker boundary, tried when the export route is unavailable): the replay
judge (`replay.py`, the olean text of `Judge.lean`) reads the build's `Submission.olean`.

What crosses into the verdict process: the submission's olean, mapped into the judge (its module
data is read, then its declarations replayed), beside the toolchain's library and byte-verified
copies of the trusted Network/Weights outputs. Crafted module data is outside what the olean
reader is hardened against (lean4 #15100, #15101: "use lake check/--from-export"), so every
result graded here carries a warning naming this boundary.

Verdicts and could-not-judge outcomes: those of the shared build (`steps.py`) and of the judge
(`replay.py`); this route adds none of its own.
"""

from __future__ import annotations

from typing import ClassVar

from lean_mod_add_proof.grading.messages import REASON_MAX_CHARS, one_line
from lean_mod_add_proof.grading.routes.protocol import OLEAN_ROUTE, Route
from lean_mod_add_proof.grading.routes.replay import ReplayRoute

WEAKER_BOUNDARY = (
    "warning: verdicts come from the build's olean, mapped into the judge (the "
    "weaker boundary), because the export judge is unavailable"
)


class OleanRoute(ReplayRoute):
    route: ClassVar[Route] = OLEAN_ROUTE

    def chosen(self, skipped: list[str]) -> None:
        """Grading from the olean puts a one-line warning naming the weaker boundary on every
        result, with why the route before it could not grade."""
        result = self.g.result
        notes = [WEAKER_BOUNDARY + (f" ({skipped[0]})" if skipped else ""), result.judge_note]
        result.judge_note = one_line("; ".join(n for n in notes if n), 2 * REASON_MAX_CHARS)
