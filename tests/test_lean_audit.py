"""Every Lean text the package ships or generates has an audit entry at its current sha256.

No Lean toolchain exists where this package is developed, so each Lean text is read, construct
by construct, against the lean4 sources by a reviewer who did not write it, and the reading is
recorded in docs/lean-audit.md under the text's sha256. A change to any of these texts without a
new audit fails here. (The audit is a reading, not a run: see the document for what it cannot
show.)"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from lean_mod_add_proof.dataset.tasks import NETWORK_LEAN_PATH
from lean_mod_add_proof.grading import selftest
from lean_mod_add_proof.grading.judge_source import JUDGE_SOURCE_PATH, judge_text
from lean_mod_add_proof.grading.lean_names import theorem_signature
from lean_mod_add_proof.grading.lean_tokens import TOKEN_TABLE_LEAN
from lean_mod_add_proof.grading.reference import reference_submission, single_decide_submission
from lean_mod_add_proof.grading.routes.comparator import challenge_lean
from lean_mod_add_proof.hard_route import DRAFT_PATH, DRAFT_TASK

ROOT = Path(__file__).resolve().parents[1]
AUDIT = ROOT / "docs" / "lean-audit.md"
TASKS = ROOT / "lean_mod_add_proof" / "tasks"


def audited_texts() -> dict[str, str]:
    """Name -> text of every Lean text the package ships or generates."""
    texts = {
        # The one file, and the two judge texts made from it (judge_source.py).
        "Judge.lean": JUDGE_SOURCE_PATH.read_text(encoding="utf-8"),
        "Judge.lean (olean text)": judge_text("olean"),
        "Judge.lean (export text)": judge_text("export"),
        "Challenge.lean (p=5)": challenge_lean(5),
        "Network.lean": NETWORK_LEAN_PATH.read_text(encoding="utf-8"),
        "SelfTestWeights.lean": selftest.SELFTEST_WEIGHTS_PATH.read_text(encoding="utf-8"),
        # The Weights.lean template, as rendered for the smallest and the largest task.
        "Weights.lean (p05_h08_s0)": (TASKS / "p05_h08_s0" / "Weights.lean").read_text(encoding="utf-8"),
        "Weights.lean (p23_h32_s0)": (TASKS / "p23_h32_s0" / "Weights.lean").read_text(encoding="utf-8"),
        # The hard split: p rows make list literals long enough for the `%[…]` expansion.
        f"Weights.lean ({DRAFT_TASK})": (TASKS / DRAFT_TASK / "Weights.lean").read_text(encoding="utf-8"),
        # The packed route's draft (UNVERIFIED; lean-check tries it, grading never uses it).
        f"PackedDraft.lean (UNVERIFIED, {DRAFT_TASK})": DRAFT_PATH.read_text(encoding="utf-8"),
        "reference proof (p=5)": reference_submission(5),
        "reference proof (p=23)": reference_submission(23),
        "single-decide proof (p=5)": single_decide_submission(5),
        "single-decide proof (p=23)": single_decide_submission(23),
        "prompt theorem signature (p=5)": theorem_signature(5),
        # The guard's token-table check (grading/token_canary.py), run by lean-check and doctor.
        "TokenTable.lean": TOKEN_TABLE_LEAN.read_text(encoding="utf-8"),
    }
    for canary in selftest.CANARIES:
        texts[f"canary: {canary.name}"] = canary.text
        for module, text in canary.extra_modules.items():
            texts[f"canary module: {module}"] = text
    # The checker canaries (`kernels = all`) whose text is not already a canary's above.
    known = set(texts.values())
    for checker_canary in selftest.checker_canaries():
        if checker_canary.text not in known:
            texts[f"checker canary: {checker_canary.name}"] = checker_canary.text
    return texts


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def shipped_lean_files() -> list[Path]:
    return sorted(p for p in (ROOT / "lean_mod_add_proof").rglob("*.lean"))


@pytest.mark.parametrize("name", sorted(audited_texts()))
def test_every_lean_text_has_an_audit_entry_at_its_current_hash(name: str) -> None:
    assert AUDIT.is_file(), "docs/lean-audit.md is missing"
    doc = AUDIT.read_text(encoding="utf-8")
    digest = sha256(audited_texts()[name])
    assert f"`{name}`" in doc, f"{name} has no section in docs/lean-audit.md"
    assert digest in doc, f"{name} changed (sha256 {digest}) since its audit: audit it again"


def test_every_shipped_lean_file_is_listed() -> None:
    # Judge/Network/SelfTestWeights by name; the 63 Weights.lean are renders of one template,
    # checked byte for byte against the renderer in test_dataset_weights.
    listed = {JUDGE_SOURCE_PATH, NETWORK_LEAN_PATH.resolve(), selftest.SELFTEST_WEIGHTS_PATH, DRAFT_PATH}
    listed.add(TOKEN_TABLE_LEAN)
    unlisted = [p for p in shipped_lean_files() if p.resolve() not in listed and p.name != "Weights.lean"]
    assert unlisted == []


_DOC_COMMENT_THEN_DECL = re.compile(r"-/\s*/--")


@pytest.mark.parametrize("name", sorted(audited_texts()))
def test_no_two_doc_comments_before_one_declaration(name: str) -> None:
    # `declModifiers` takes one optional docComment (src/Lean/Parser/Command.lean): a second
    # `/--` right after a doc comment is a parse error.
    text = audited_texts()[name]
    assert not _DOC_COMMENT_THEN_DECL.search(text)
    assert "asString" not in text  # deprecated (src/Init/Data/String/Bootstrap.lean)


def test_the_doc_comment_check_catches_the_old_judge_slip() -> None:
    slip = "/-- The verdict. -/\n/-- Printed once. -/\ndef markReplayStarted : IO Unit := pure ()\n"
    assert _DOC_COMMENT_THEN_DECL.search(slip)
