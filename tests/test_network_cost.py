"""`kernel_mul_adds` counts what Lean's kernel evaluates for the brute force: Network.lean's
`scores` with each pair's `hidden` shared through the kernel's whnf cache, (p + 1)·p²·H; the
literal, uncached reading is `uncached_mul_adds`, 2·p³·H."""

from __future__ import annotations

import pytest

from lean_mod_add_proof.dataset.network import kernel_mul_adds, uncached_mul_adds


class CountingNetwork:
    """Network.lean's definitions as written, counting Int multiplications. With `cache`, a
    reduced `hidden E1 E2 a b` is remembered per pair, as the kernel's whnf cache remembers the
    weak head normal form of that closed term (leanprover/lean4 src/kernel/type_checker.cpp,
    `type_checker::whnf`, `m_st->m_whnf`); without it, every row's score re-evaluates it."""

    def __init__(self, cache: bool) -> None:
        self.mul_adds = 0
        self.cache: dict[tuple[int, int], list[int]] | None = {} if cache else None

    def dot(self, xs: list[int], ys: list[int]) -> int:
        if xs and ys:
            self.mul_adds += 1  # x * y + dot xs ys
            return xs[0] * ys[0] + self.dot(xs[1:], ys[1:])
        return 0

    def sq_sum(self, xs: list[int], ys: list[int]) -> list[int]:
        if xs and ys:
            self.mul_adds += 1  # (x + y) * (x + y)
            return [(xs[0] + ys[0]) * (xs[0] + ys[0]), *self.sq_sum(xs[1:], ys[1:])]
        return []

    def hidden(self, e1, e2, a: int, b: int) -> list[int]:
        if self.cache is None:
            return self.sq_sum(e1[a], e2[b])
        if (a, b) not in self.cache:
            self.cache[(a, b)] = self.sq_sum(e1[a], e2[b])
        return self.cache[(a, b)]

    def scores(self, e1, e2, w2, a: int, b: int) -> list[int]:
        return [self.dot(w, self.hidden(e1, e2, a, b)) for w in w2]


@pytest.mark.parametrize(("p", "hidden"), [(2, 1), (5, 8), (7, 3)])
def test_kernel_mul_adds_counts_the_cached_evaluation(p: int, hidden: int) -> None:
    rows = [[(i * 7 + k * 3) % 11 - 5 for k in range(hidden)] for i in range(p)]
    cached, literal = CountingNetwork(cache=True), CountingNetwork(cache=False)
    for a in range(p):
        for b in range(p):
            assert cached.scores(rows, rows, rows, a, b) == literal.scores(rows, rows, rows, a, b)
    assert cached.mul_adds == kernel_mul_adds(p, hidden) == (p + 1) * p**2 * hidden
    assert literal.mul_adds == uncached_mul_adds(p, hidden) == 2 * p**3 * hidden
