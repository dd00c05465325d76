"""Finding the ```lean block in a reply (rule in lean_mod_add_proof/grading/extract.py)."""

from __future__ import annotations

import dataclasses
import random
import time

import pytest

from lean_mod_add_proof.grading.extract import (
    Extraction,
    as_lean_file,
    extract_submission,
    normalise_newlines,
)

CODE = "import LeanCheckedNetwork.Weights\n\ntheorem t : True := trivial\n"

ACCEPTED: list[tuple[str, str, str, int]] = [
    # (id, reply, expected code, complete lean blocks)
    ("only-block", f"Here it is:\n```lean\n{CODE}```\nDone.", CODE, 1),
    ("lean4-tag", f"```lean4\n{CODE}```", CODE, 1),
    ("capital-tag", f"```Lean\n{CODE}```", CODE, 1),
    ("info-string-extra-words", f'```lean title="Submission.lean"\n{CODE}```', CODE, 1),
    ("tilde-fence", f"~~~lean\n{CODE}~~~", CODE, 1),
    (
        "longer-fence-holds-backticks",
        "````lean\n/-- ```\nexample\n``` -/\ndef x := 1\n````",
        "/-- ```\nexample\n``` -/\ndef x := 1\n",
        1,
    ),
    ("closing-fence-may-be-longer", f"```lean\n{CODE}`````", CODE, 1),
    ("closing-fence-trailing-spaces", f"```lean\n{CODE}```   \n", CODE, 1),
    ("crlf", f"```lean\r\n{CODE.replace(chr(10), chr(13) + chr(10))}```\r\n", CODE, 1),
    ("lone-cr", "```lean\rdef x := 1\r```", "def x := 1\n", 1),
    ("no-final-newline-added", "```lean\ndef x := 1\n```", "def x := 1\n", 1),
    ("indented-fence-strips-indent", "  ```lean\n  def x := 1\n    y\n  ```", "def x := 1\n  y\n", 1),
    ("last-of-two", f"Draft:\n```lean\ndef draft := 1\n```\nFinal:\n```lean\n{CODE}```", CODE, 2),
    ("last-of-three", "```lean\na\n```\n```lean4\nb\n```\n```lean\nc\n```", "c\n", 3),
    ("other-languages-ignored", f"```python\nprint(1)\n```\n```lean\n{CODE}```\n```\nplain\n```", CODE, 1),
    ("lean-line-inside-text-block", "```text\n```lean\nfake\n```\n```lean\nreal\n```", "real\n", 1),
    ("unterminated-other-block-after", f"```lean\n{CODE}```\n```text\ncut off", CODE, 1),
    ("four-space-indent-is-not-a-fence", f"```lean\n{CODE}    ```\n```", CODE + "    ```\n", 1),
]


@pytest.mark.parametrize(
    ("reply", "code", "blocks"), [(r, c, b) for _, r, c, b in ACCEPTED], ids=[i for i, *_ in ACCEPTED]
)
def test_accepted(reply: str, code: str, blocks: int) -> None:
    result = extract_submission(reply)
    assert result.code == code, result.reason
    assert result.blocks_found == blocks


REJECTED: list[tuple[str, str, str]] = [
    # (id, reply, words in the reason)
    ("empty-reply", "", "no ```lean code block"),
    ("prose-only", "I think decide works.", "no ```lean code block"),
    ("untagged-block", f"```\n{CODE}```", "no ```lean code block"),
    ("other-language", f"```python\n{CODE}```", "no ```lean code block"),
    ("inline-code-only", "use `decide +kernel`", "no ```lean code block"),
    ("lean-inside-text-block", "```text\n```lean\nx\n```\n", "no ```lean code block"),
    ("backtick-in-info-string", f"```lean`x\n{CODE}```", "no ```lean code block"),
    ("unterminated", f"```lean\n{CODE}", "unterminated"),
    ("unterminated-after-complete", f"```lean\n{CODE}```\nBetter:\n```lean\n{CODE}", "unterminated"),
    ("closing-fence-too-short", f"````lean\n{CODE}```", "unterminated"),
    ("closing-fence-other-char", f"```lean\n{CODE}~~~", "unterminated"),
    ("closing-fence-with-info", f"```lean\n{CODE}```lean\n", "unterminated"),
    ("empty-block", "```lean\n```", "empty"),
    ("blank-block", "```lean\n   \n\n```", "empty"),
    ("nul", "```lean\ndef x := 1\n-- \x00\n```", "NUL character (line 2)"),
    ("lone-surrogate", "```lean\ndef x := 1\n-- \udcff\n```", "not valid Unicode (line 2)"),
]


@pytest.mark.parametrize(("reply", "reason"), [(r, w) for _, r, w in REJECTED], ids=[i for i, *_ in REJECTED])
def test_rejected(reply: str, reason: str) -> None:
    result = extract_submission(reply)
    assert result.code is None
    assert reason in result.reason


def test_blocks_found_counts_complete_lean_blocks_on_rejection() -> None:
    result = extract_submission(f"```lean\n{CODE}```\n```lean\n{CODE}")
    assert result.code is None and result.blocks_found == 1


def test_result_is_frozen() -> None:
    result = extract_submission(f"```lean\n{CODE}```")
    assert isinstance(result, Extraction)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.code = "x"  # type: ignore[misc]


def test_never_raises_on_random_text() -> None:
    rng = random.Random(7)
    pieces = ["```", "```lean", "~~~", "~~~lean4", "\n", "\r\n", "\r", " ", "x", "`", "\x00", "\udc80", "é"]
    for _ in range(3000):
        reply = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        result = extract_submission(reply)
        assert (result.code is None) != (result.reason.startswith(("the only", "the last")))
        if result.code is not None:
            assert "\x00" not in result.code and "\r" not in result.code


@pytest.mark.parametrize(
    "reply",
    [
        "a" * 5_000_000,
        "```\n" * 1_250_000,
        "```lean\nx\n```\n" * 300_000,
        "```lean\n" + "x\n" * 2_500_000 + "```",
        "`" * 5_000_000,
        "\r\n" * 2_500_000,
    ],
    ids=["prose", "many-empty-blocks", "many-lean-blocks", "one-huge-block", "backticks", "crlf"],
)
def test_several_megabytes_is_fast(reply: str) -> None:
    started = time.perf_counter()
    extract_submission(reply)
    assert time.perf_counter() - started < 3.0


def test_newline_normalisation_is_shared_with_the_guard() -> None:
    # The guard normalises with the same function, so a CRLF file is judged alike on its own
    # (`lean-mod-add-proof guard FILE`) and inside a reply (the pipeline).
    assert normalise_newlines("a\r\nb\rc\n\r\n") == "a\nb\nc\n\n"
    assert as_lean_file("a\r\nb") == "a\nb\n"
    reply = "```lean\r\nimport X\r\n-- y\r```"
    code = extract_submission(reply).code
    assert code is not None and code == as_lean_file("import X\r\n-- y")
