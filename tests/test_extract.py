"""Finding the ```lean block in a reply (rule in lean_mod_add_proof/grading/extract.py)."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable

import pytest
from timing import assert_time_is_linear

from lean_mod_add_proof.grading.extract import (
    LEAN_INFO_WORDS,
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
    # CommonMark: a backtick in a backtick fence's info string makes the line no fence at all,
    # so the real block right after it is found (issue 21).
    ("backtick-info-line-before-block", f"```lean `x`\n```lean\n{CODE}```", CODE, 1),
    ("backtick-info-line-then-prose", f"```lean `x`\nprose\n```lean\n{CODE}```", CODE, 1),
    ("two-backtick-info-lines", f"```lean`\n```a`b\n```lean\n{CODE}```", CODE, 1),
    ("tilde-fence-may-hold-backticks-in-info", f"~~~lean `x`\n{CODE}~~~", CODE, 1),
    ("info-string-three-words", f"```lean a b\n{CODE}```", CODE, 1),
    ("info-string-tab", f"```lean\tx\n{CODE}```", CODE, 1),
    ("info-string-leading-space", f"``` lean\n{CODE}```", CODE, 1),
    ("three-space-indent-is-a-fence", f"   ```lean\n{CODE}   ```", CODE, 1),
    ("four-space-indented-opening-is-text", f"    ```lean\nx\n    ```\n```lean\n{CODE}```", CODE, 1),
    ("two-backtick-line-is-content", f"```lean\n{CODE}``\n```", CODE + "``\n", 1),
    ("tilde-inside-backtick-block", f"```lean\n{CODE}~~~\n```", CODE + "~~~\n", 1),
    ("block-at-the-very-end", f"```lean\n{CODE}```", CODE, 1),
    ("unterminated-text-block-swallows-nothing-before", f"```lean\n{CODE}```\n~~~\n```lean\nx\n```", CODE, 1),
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


NO_BLOCK = "no ```lean code block"
UNTERMINATED = "unterminated ```lean code block (the reply ends inside it)"
EMPTY = "the ```lean code block is empty"

EXACT: list[tuple[str, str, Extraction]] = [
    # (id, reply, the whole extraction)
    ("nothing", "", Extraction(None, NO_BLOCK, 0)),
    ("four-space-indented-opening", f"    ```lean\n{CODE}    ```", Extraction(None, NO_BLOCK, 0)),
    ("two-backtick-fence", f"``lean\n{CODE}``", Extraction(None, NO_BLOCK, 0)),
    ("backtick-info-only", f"```lean `x`\n{CODE}```", Extraction(None, NO_BLOCK, 0)),
    ("unterminated-first", f"```lean\n{CODE}", Extraction(None, UNTERMINATED, 0)),
    ("unterminated-third", f"```lean\na\n```\n```lean\nb\n```\n```lean\n{CODE}",
     Extraction(None, UNTERMINATED, 2)),
    ("empty-only", "```lean\n```", Extraction(None, EMPTY, 1)),
    ("empty-last-of-two", f"```lean\n{CODE}```\n```lean\n \n```", Extraction(None, EMPTY, 2)),
    ("nul-line-3", "```lean\na\nb\n-- \x00\nc\n```",
     Extraction(None, "the code contains a NUL character (line 3)", 1)),
    ("nul-after-leading-newline", "```lean\n\n\x00\n```",
     Extraction(None, "the code contains a NUL character (line 2)", 1)),
    ("first-of-two-nuls", "```lean\na\x00\nb\n\x00\n```",
     Extraction(None, "the code contains a NUL character (line 1)", 1)),
    ("nul-in-second-block", f"```lean\n{CODE}```\n```lean\nx\n\x00\n```",
     Extraction(None, "the code contains a NUL character (line 2)", 2)),
    ("surrogate-line-3", "```lean\na\nb\n-- \udc80\nc\n```",
     Extraction(None, "the code contains text that is not valid Unicode (line 3)", 1)),
    ("surrogate-line-1-of-3", "```lean\n\udc80\nb\nc\n```",
     Extraction(None, "the code contains text that is not valid Unicode (line 1)", 1)),
    ("surrogate-after-leading-newline", "```lean\n\n\ud800\n```",
     Extraction(None, "the code contains text that is not valid Unicode (line 2)", 1)),
    ("only", f"```lean\n{CODE}```", Extraction(CODE, "the only ```lean code block", 1)),
    ("last-of-two", f"```lean\nx\n```\n```lean\n{CODE}```",
     Extraction(CODE, "the last of 2 ```lean code blocks", 2)),
    ("last-of-three", f"```lean\nx\n```\n```lean\nx\n```\n```lean\n{CODE}```",
     Extraction(CODE, "the last of 3 ```lean code blocks", 3)),
]  # fmt: skip


@pytest.mark.parametrize(("reply", "expected"), [(r, e) for _, r, e in EXACT], ids=[i for i, *_ in EXACT])
def test_extraction_is_exact(reply: str, expected: Extraction) -> None:
    assert extract_submission(reply) == expected


def test_lean_info_words_are_exactly() -> None:
    assert LEAN_INFO_WORDS == ("lean", "lean4")


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


#: Reply shapes of about `8 * n` characters, one per path the scan could be slow on.
HUGE_REPLIES: dict[str, Callable[[int], str]] = {
    "prose": lambda n: "a" * (8 * n),
    "many-empty-blocks": lambda n: "```\n" * (2 * n),
    "many-lean-blocks": lambda n: "```lean\nx\n```\n" * (n // 2),
    "one-huge-block": lambda n: "```lean\n" + "x\n" * (4 * n) + "```",
    "backticks": lambda n: "`" * (8 * n),
    "crlf": lambda n: "\r\n" * (4 * n),
    "backtick-info-lines": lambda n: "```a`\n" * (n + n // 2),
    "unterminated-blocks": lambda n: "````lean\n```\n" * (n // 2),
}


@pytest.mark.parametrize("shape", list(HUGE_REPLIES.values()), ids=list(HUGE_REPLIES))
def test_extraction_time_is_linear(shape: Callable[[int], str]) -> None:
    # Was an absolute bound (5 MB in under 3 s), which failed on a loaded machine (issue 18).
    assert_time_is_linear(extract_submission, shape(20_000), shape(160_000), scale=8)


def test_newline_normalisation_is_shared_with_the_guard() -> None:
    # The guard normalises with the same function, so a CRLF file is judged alike on its own
    # (`lean-mod-add-proof guard FILE`) and inside a reply (the pipeline).
    assert normalise_newlines("a\r\nb\rc\n\r\n") == "a\nb\nc\n\n"
    assert as_lean_file("a\r\nb") == "a\nb\n"
    reply = "```lean\r\nimport X\r\n-- y\r```"
    code = extract_submission(reply).code
    assert code is not None and code == as_lean_file("import X\r\n-- y")
