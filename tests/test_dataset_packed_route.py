"""The packed route's model (dataset/packed_route.py): one code path counts the kernel's work
(SizeMachine) and runs the check (RealMachine), the check accepts every shipped network and rejects
broken ones, and the Lean draft it mirrors is where `lean-check` expects it."""

from __future__ import annotations

import re

import pytest

from lean_mod_add_proof.dataset import packed_route
from lean_mod_add_proof.dataset.tasks import DEFAULT_TASKS_DIR, is_hard, load_tasks, weights_path
from lean_mod_add_proof.dataset.weights_lean import parse_weights_lean
from lean_mod_add_proof.hard_route import DRAFT_PATH, DRAFT_TASK

RECORDS = {r.id: r for r in load_tasks()}
HARD_IDS = sorted(r.id for r in RECORDS.values() if is_hard(r.split))


def weights(task: str) -> tuple[list[list[int]], list[list[int]], list[list[int]]]:
    _p, e1, e2, w2 = parse_weights_lean(weights_path(DEFAULT_TASKS_DIR, task).read_text(encoding="utf-8"))
    return e1, e2, w2


@pytest.mark.parametrize("task", ["p05_h08_s0", "p23_h32_s2"])
def test_the_count_is_the_checks_own(task: str) -> None:
    """Same operations on the same path: the size-only count equals the real run's, and its
    sizes bound the real ones."""
    e1, e2, w2 = weights(task)
    ok, real = packed_route.check_network(e1, e2, w2)
    counted = packed_route.count_ops(len(e1), len(e1[0]))
    assert ok
    assert (real.steps, real.int_ops, real.nat_ops) == (counted.steps, counted.int_ops, counted.nat_ops)
    assert real.limb_work <= counted.limb_work and real.largest_bits <= counted.largest_bits


@pytest.mark.parametrize("task", HARD_IDS)
def test_the_check_accepts_every_hard_network(task: str) -> None:
    assert packed_route.check_network(*weights(task))[0]


def test_the_check_rejects_broken_networks() -> None:
    e1, e2, w2 = weights("p23_h32_s1")
    swapped = [list(row) for row in w2]
    swapped[0], swapped[1] = swapped[1], swapped[0]  # classes 0 and 1 exchanged: wrong answers
    assert not packed_route.check_network(e1, e2, swapped)[0]
    out_of_range = [list(row) for row in e1]
    out_of_range[3][5] = 128  # outside [-127, 127]: the bounds check refuses it
    assert not packed_route.check_network(out_of_range, e2, w2)[0]


def test_the_work_grows_as_p_times_h_not_as_brute_force() -> None:
    small, large = packed_route.count_ops(23, 32), packed_route.count_ops(47, 32)
    assert 1.5 < large.operations / small.operations < 2.5  # about p·H: 47/23 ≈ 2.04


def test_the_draft_is_a_shipped_hard_task_and_passes_the_guard() -> None:
    from lean_mod_add_proof.grading.guard import check_guard

    record = RECORDS[DRAFT_TASK]
    assert is_hard(record.split) and record.timeout_s is not None
    text = DRAFT_PATH.read_text(encoding="utf-8")
    assert "UNVERIFIED" in text.split("-/")[0]
    assert f"theorem LeanCheckedNetwork.Net.adds_mod_{record.p} :" in text
    assert f"List.replicate {record.hidden} 0" in text and f"List.replicate {record.p} 1" in text
    verdict = check_guard(text)
    assert verdict.passed, verdict.reason
    # The draft's slot width and block sizes are the model's.
    assert f"def blockW : Nat := {packed_route.SLOT_BITS} * {2 * record.p}" in text
    assert re.search(rf"pack \({packed_route.SLOT_BITS} \* {2 * record.p + 1}\)", text)
