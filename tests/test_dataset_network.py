"""The exact evaluator: the Lean mirror's edge cases, agreement with numpy, and the committed set
re-verified from the Weights.lean text alone."""

from __future__ import annotations

import numpy as np
import pytest

from lean_mod_add_proof.dataset import network as net
from lean_mod_add_proof.dataset.tasks import DEFAULT_TASKS_DIR, load_tasks, sha256_text, weights_path
from lean_mod_add_proof.dataset.weights_lean import parse_weights_lean

COMMITTED = load_tasks(DEFAULT_TASKS_DIR)


def test_lean_edge_semantics() -> None:
    assert net.nth([[1], [2]], 1) == [2]
    assert net.nth([[1], [2]], 2) == []
    assert net.dot([1, 2, 3], [4, 5]) == 14  # zip truncates
    assert net.sq_sum([1, -3], [2]) == [9]
    assert net.argmax([]) == 0
    assert net.argmax([3, 7, 7, 1]) == 1  # first maximum wins
    assert net.argmax([-5, -2, -9]) == 1
    assert net.answer([[1]], [[1]], [[1], [2]], 5, 0) == 0  # nth past the end -> empty hidden, all 0


def test_tie_counts_as_tie() -> None:
    # W2 rows identical -> every pair ties between classes 0 and 1.
    e = [[1, 2], [3, 4]]
    w = [[1, 1], [1, 1]]
    v = net.verify(e, e, w)
    assert v.n_ties == 4 and v.min_margin == 0 and not v.correct
    assert net.verify_reference(e, e, w, 2) == v


@pytest.mark.parametrize("seed", range(5))
def test_reference_and_numpy_agree_on_random_networks(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p, h = 7, 4
    e1, e2, w2 = (rng.integers(-127, 128, size=(p, h)) for _ in range(3))
    answers, margins = net.evaluate_all(e1, e2, w2)
    for a in range(p):
        for b in range(p):
            s = net.scores(e1.tolist(), e2.tolist(), w2.tolist(), a, b)
            assert answers[a, b] == net.argmax(s)
            assert margins[a, b] == net.reference_margin(s)
    assert net.verify(e1, e2, w2) == net.verify_reference(e1.tolist(), e2.tolist(), w2.tolist(), p)


def test_extreme_weights_are_exact() -> None:
    p, h = 3, 32
    e = np.full((p, h), 127)
    w = np.full((p, h), -127)
    s = net.all_scores(e, e, w)
    assert int(s.min()) == -127 * 254 * 254 * 32  # exact, no float rounding


def test_rejects_out_of_range_weights() -> None:
    e = np.zeros((3, 2), dtype=np.int64)
    with pytest.raises(ValueError, match="outside"):
        net.verify(e, e, e + 128)


def test_committed_set_is_complete() -> None:
    from lean_mod_add_proof.dataset.tasks import is_hard
    from lean_mod_add_proof.dataset.trainer import hard_grid

    grid = [r for r in COMMITTED if not is_hard(r.split)]
    hard = [r for r in COMMITTED if is_hard(r.split)]
    assert len(grid) == 63, "the grid has 63 runs; a missing task means one failed to freeze"
    assert len(hard) == len(hard_grid()) >= 6, "a missing hard task means one failed to freeze"


@pytest.mark.parametrize("record", COMMITTED, ids=[r.id for r in COMMITTED])
def test_committed_task_verifies_from_text(record) -> None:
    text = weights_path(DEFAULT_TASKS_DIR, record.id).read_text(encoding="utf-8")
    assert sha256_text(text) == record.weights_sha256
    p, e1, e2, w2 = parse_weights_lean(text)
    assert (p, len(e1[0])) == (record.p, record.hidden)
    v = net.verify(e1, e2, w2)
    assert v.correct and v.n_wrong == 0 and v.n_ties == 0
    assert v.min_margin == record.min_margin
    assert record.max_abs_weight == max(abs(x) for m in (e1, e2, w2) for row in m for x in row)
    assert record.max_abs_weight <= net.WEIGHT_BOUND
    if record.p <= 13:  # the pure-Python mirror is slow; check it on the smaller half
        assert net.verify_reference(e1, e2, w2, p) == v
