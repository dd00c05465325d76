"""The network's exact evaluator, in integers only.

Two versions that must agree:

* a pure-Python reference that mirrors `Network.lean` definition for definition (`nth`, `dot`,
  `sqSum`, `hidden`, `scores`, `argmax`, `answer`), including its edge cases (`nth` past the end
  is `[]`, `dot`/`sqSum` stop at the shorter list, `argmax []` is `0`, the first maximum wins);
* a vectorised numpy int64 version over all p*p pairs, used by the trainer and the generator.

A network counts as correct only if every pair's answer is `(a + b) % p` *and* the winning score
is strictly larger than every other score (margin > 0), so Lean's tie-break never matters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: Largest absolute weight a frozen network may use.
WEIGHT_BOUND = 127

Matrix = Sequence[Sequence[int]]


# --- Pure-Python reference, one function per Lean definition -------------------------------------


def nth(rows: Matrix, i: int) -> list[int]:
    """Row `i` of a table, or `[]` past its end (Lean `nth`)."""
    if i < 0:
        raise ValueError("nth: Lean indices are natural numbers")
    return list(rows[i]) if i < len(rows) else []


def dot(xs: Sequence[int], ys: Sequence[int]) -> int:
    """Dot product; extra entries of the longer row are ignored (Lean `dot`)."""
    return sum(x * y for x, y in zip(xs, ys, strict=False))


def sq_sum(xs: Sequence[int], ys: Sequence[int]) -> list[int]:
    """Elementwise `(x + y) * (x + y)`, truncated to the shorter row (Lean `sqSum`)."""
    return [(x + y) * (x + y) for x, y in zip(xs, ys, strict=False)]


def hidden(e1: Matrix, e2: Matrix, a: int, b: int) -> list[int]:
    """The hidden layer on inputs `a`, `b` (Lean `hidden`)."""
    return sq_sum(nth(e1, a), nth(e2, b))


def scores(e1: Matrix, e2: Matrix, w2: Matrix, a: int, b: int) -> list[int]:
    """One score per row of `W2` (Lean `scores`)."""
    h = hidden(e1, e2, a, b)
    return [dot(w, h) for w in w2]


def argmax(xs: Sequence[int]) -> int:
    """Index of the first maximum, `0` for the empty list (Lean `argmax`/`argmaxFrom`)."""
    if not xs:
        return 0
    best, best_idx = xs[0], 0
    for i in range(1, len(xs)):
        if best < xs[i]:
            best, best_idx = xs[i], i
    return best_idx


def answer(e1: Matrix, e2: Matrix, w2: Matrix, a: int, b: int) -> int:
    """The network's answer on inputs `a`, `b` (Lean `answer`)."""
    return argmax(scores(e1, e2, w2, a, b))


def reference_margin(xs: Sequence[int]) -> int:
    """Winner minus runner-up score (0 on a tie); a one-score list has no runner-up, margin 0."""
    if len(xs) < 2:
        return 0
    top = sorted(xs, reverse=True)
    return top[0] - top[1]


# --- Vectorised numpy version --------------------------------------------------------------------


def _as_int_matrix(name: str, m: Matrix | np.ndarray) -> np.ndarray:
    arr = np.asarray(m)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a rectangular 2-D table, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must hold integers, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def check_shapes(e1: np.ndarray, e2: np.ndarray, w2: np.ndarray) -> tuple[int, int]:
    """Return (p, H); E1, E2 and W2 must all be p x H with entries in [-127, 127]."""
    if e1.shape != e2.shape or e1.shape != w2.shape:
        raise ValueError(f"E1, E2, W2 shapes differ: {e1.shape}, {e2.shape}, {w2.shape}")
    p, h = e1.shape
    if p < 2 or h < 1:
        raise ValueError(f"need p >= 2 and H >= 1, got p={p}, H={h}")
    for name, m in (("E1", e1), ("E2", e2), ("W2", w2)):
        if int(np.abs(m).max()) > WEIGHT_BOUND:
            raise ValueError(f"{name} has an entry outside [-{WEIGHT_BOUND}, {WEIGHT_BOUND}]")
    return p, h


def all_scores(e1: Matrix | np.ndarray, e2: Matrix | np.ndarray, w2: Matrix | np.ndarray) -> np.ndarray:
    """Scores for every pair as an int64 array `[a, b, c]`, exact.

    Each score is at most H * 127 * 254^2 in absolute value; the bound is asserted to stay below
    2^31, far inside int64, so numpy's integer matmul cannot overflow."""
    E1, E2, W2 = (_as_int_matrix(n, m) for n, m in (("E1", e1), ("E2", e2), ("W2", w2)))
    _p, h = check_shapes(E1, E2, W2)
    bound = h * WEIGHT_BOUND * (2 * WEIGHT_BOUND) ** 2
    assert bound < 2**31, f"H={h} too wide for the exactness bound"
    z = E1[:, None, :] + E2[None, :, :]  # [a, b, k]
    hid = z * z
    return np.matmul(hid, W2.T)  # int64: numpy's own exact loop, never BLAS


def evaluate_all(
    e1: Matrix | np.ndarray, e2: Matrix | np.ndarray, w2: Matrix | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(answers[p, p], margins[p, p]): first-max argmax and winner minus runner-up (0 = tie)."""
    s = all_scores(e1, e2, w2)
    answers = np.argmax(s, axis=2)  # numpy's argmax also returns the first maximum
    top2 = np.sort(s, axis=2)[:, :, -2:]
    margins = top2[:, :, 1] - top2[:, :, 0]
    return answers.astype(np.int64), margins.astype(np.int64)


def kernel_mul_adds(p: int, hidden: int) -> int:
    """Int multiply-adds Lean's kernel performs to evaluate `answer` on all p*p pairs (the brute
    force): (p + 1) * p^2 * H.

    `scores` maps `fun w => dot w (hidden E1 E2 a b)` over the p rows of W2. Read literally, that
    evaluates `hidden` once per row (2 * p^3 * H in all, `uncached_mul_adds`). The kernel does not:
    `hidden E1 E2 a b` is a closed term, the same one in every row's `dot` after beta-reduction,
    and the kernel caches the weak head normal form of every term it reduces
    (leanprover/lean4 src/kernel/type_checker.cpp @ b2bb7c48: `type_checker::whnf` looks up and
    inserts `m_st->m_whnf`, `whnf_core` likewise `m_st->m_whnf_core`, and a recursor's major
    premise is reduced through that `whnf` in `inductive_reduce_rec`). So each pair's H squares
    `(x + y) * (x + y)` are computed once, and only the p dot products of H terms each remain:
    p^2 * H + p^3 * H. The cache lives as long as one declaration's check."""
    return (p + 1) * p**2 * hidden


def uncached_mul_adds(p: int, hidden: int) -> int:
    """The literal count with no sharing, 2 * p^3 * H: `hidden` re-evaluated in every row's score
    (what an evaluator without a cache, such as `scores` below, performs)."""
    return 2 * p**3 * hidden


def targets(p: int) -> np.ndarray:
    """The correct answers `(a + b) % p` as a p x p array."""
    r = np.arange(p)
    return (r[:, None] + r[None, :]) % p


@dataclass(frozen=True)
class Verdict:
    """The exact check of one frozen network over all p*p pairs."""

    p: int
    hidden: int
    n_wrong: int  # pairs whose answer is not (a + b) % p
    n_ties: int  # pairs whose top two scores are equal
    min_margin: int  # smallest winner minus runner-up over all pairs

    @property
    def correct(self) -> bool:
        """Right on every pair with a strictly unique maximum."""
        return self.n_wrong == 0 and self.n_ties == 0 and self.min_margin > 0


def verify(e1: Matrix | np.ndarray, e2: Matrix | np.ndarray, w2: Matrix | np.ndarray) -> Verdict:
    """Check a network on all p*p pairs exactly (numpy int64)."""
    answers, margins = evaluate_all(e1, e2, w2)
    p, h = np.asarray(e1).shape
    return Verdict(
        p=int(p),
        hidden=int(h),
        n_wrong=int((answers != targets(p)).sum()),
        n_ties=int((margins == 0).sum()),
        min_margin=int(margins.min()),
    )


def verify_reference(e1: Matrix, e2: Matrix, w2: Matrix, p: int) -> Verdict:
    """The same check with the pure-Python Lean mirror (slow; for tests and cross-checks)."""
    wrong = ties = 0
    min_margin: int | None = None
    for a in range(p):
        for b in range(p):
            s = scores(e1, e2, w2, a, b)
            if argmax(s) != (a + b) % p:
                wrong += 1
            m = reference_margin(s)
            ties += m == 0
            min_margin = m if min_margin is None else min(min_margin, m)
    width = len(e1[0]) if e1 else 0
    return Verdict(p=p, hidden=width, n_wrong=wrong, n_ties=ties, min_margin=min_margin or 0)
