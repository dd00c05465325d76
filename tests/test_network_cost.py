"""`kernel_mul_adds` is the count an evaluator following Network.lean literally performs."""

from __future__ import annotations

import pytest

from lean_mod_add_proof.dataset.network import kernel_mul_adds


class CountingNetwork:
    """Network.lean's definitions as written, counting Int multiply-adds. `scores` evaluates
    `hidden E1 E2 a b` inside the mapped lambda, once per row of W2, as the Lean text does."""

    def __init__(self) -> None:
        self.mul_adds = 0

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

    def scores(self, e1, e2, w2, a: int, b: int) -> list[int]:
        return [self.dot(w, self.sq_sum(e1[a], e2[b])) for w in w2]


@pytest.mark.parametrize(("p", "hidden"), [(2, 1), (5, 8), (7, 3)])
def test_kernel_mul_adds_counts_the_literal_evaluation(p: int, hidden: int) -> None:
    rows = [[(i * 7 + k * 3) % 11 - 5 for k in range(hidden)] for i in range(p)]
    net = CountingNetwork()
    for a in range(p):
        for b in range(p):
            net.scores(rows, rows, rows, a, b)
    assert net.mul_adds == kernel_mul_adds(p, hidden) == 2 * p**3 * hidden
