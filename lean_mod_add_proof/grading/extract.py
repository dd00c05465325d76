"""Finding the submission in the model's reply.

The submission is the content of a fenced ```lean code block. The rule, and why:

- Line endings are normalised first: CRLF and lone CR become LF. Lean rejects isolated carriage
  returns, and the guard and Lean must see the same text, so the normalised text is what both
  get.
- Fences follow CommonMark: an opening line of up to 3 spaces, then 3 or more backticks (no
  backtick in the info string) or 3 or more tildes; the block ends at a line of up to 3 spaces
  and at least as many of the same character, with nothing but spaces after. Content lines lose
  up to as many leading spaces as the opening fence had. A fence opened with another language
  (or none) is skipped as a whole, so a ```lean line inside a ```text block is not an opening.
- Only blocks whose info string's first word is `lean` or `lean4` (any case) count. `lean4` is
  a common spelling and means the same thing; untagged blocks are not read, so prose examples in
  plain blocks cannot be mistaken for the answer.
- No lean block: rejected ("no ```lean code block").
- Several complete lean blocks: the LAST one is the submission. Models often show a draft or a
  fragment first and the final file last; the prompt asks for one block, and whichever block is
  taken, the guard and Lean judge it alone, so the choice cannot make a wrong proof pass.
- A lean block that is still open at the end of the reply: rejected ("unterminated"), even if an
  earlier block was complete. The reply was cut off mid-answer and guessing which version was
  meant is exactly what the grader must not do. (An unterminated block of another language after
  a complete lean block does not matter.)
- An empty block, or one holding a NUL character or a lone surrogate (debris of bytes that were
  not UTF-8; the file could not be written as UTF-8), is rejected.

The scan is linear: one regex pass finds the candidate fence lines, so multi-megabyte replies
are cheap. Nothing here raises on any `str`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

LEAN_INFO_WORDS: tuple[str, ...] = ("lean", "lean4")

# Every line that could open or close a fence (CommonMark: up to 3 spaces of indentation).
_FENCE_LINE_RE = re.compile(r"^( {0,3})(`{3,}|~{3,})([^\n]*)$", re.MULTILINE)
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Extraction:
    """`code` is the submission (None when rejected); `reason` says what was found or why not;
    `blocks_found` counts the complete lean blocks."""

    code: str | None
    reason: str
    blocks_found: int


@dataclass(frozen=True)
class _Block:
    start: int  # first character of the content
    end: int  # first character of the closing fence line (or len(text) if unterminated)
    indent: int
    closed: bool


def normalise_newlines(reply: str) -> str:
    """CRLF and lone CR become LF (the text guard applies the same function, so a file judged on
    its own and the same file taken from a reply are judged alike)."""
    return reply.replace("\r\n", "\n").replace("\r", "\n")


def as_lean_file(text: str) -> str:
    """`text` as the grader hands it to Lean: LF line endings and a final newline (the guard
    judges its input through this function too)."""
    text = normalise_newlines(text)
    return text if not text or text.endswith("\n") else text + "\n"


@functools.lru_cache(maxsize=64)
def _closing_re(char: str, length: int) -> re.Pattern[str]:
    """A line that closes a fence of `length` times `char` (bounded cache: fence lengths are
    chosen by the model)."""
    return re.compile(rf"^ {{0,3}}{re.escape(char)}{{{length},}}[ \t]*$", re.MULTILINE)


def _blocks(text: str) -> list[_Block]:
    """Every fenced lean block, in order; from an opening fence the scan jumps straight to its
    closing fence, so block contents are never looked at line by line."""
    blocks: list[_Block] = []
    pos, n = 0, len(text)
    while (m := _FENCE_LINE_RE.search(text, pos)) is not None:
        spaces, fence, info = m.groups()
        end = m.end()
        if fence[0] == "`" and "`" in info:
            pos = end + 1  # not a fence opening (CommonMark)
            continue
        words = info.split()
        start = min(end + 1, n)
        close = _closing_re(fence[0], len(fence)).search(text, start)
        if words and words[0].lower() in LEAN_INFO_WORDS:
            stop = n if close is None else close.start()
            blocks.append(_Block(start, stop, len(spaces), close is not None))
        if close is None:
            break
        pos = close.end() + 1
    return blocks


def _content(text: str, block: _Block) -> str:
    body = text[block.start : block.end]
    if block.indent:
        strip = re.compile(rf"^ {{0,{block.indent}}}", re.MULTILINE)
        body = strip.sub("", body)
    return body


def extract_submission(reply: str) -> Extraction:
    """The submission in `reply` by the rule of the module docstring."""
    text = normalise_newlines(reply)
    lean = _blocks(text)
    complete = [b for b in lean if b.closed]
    if not lean:
        return Extraction(None, "no ```lean code block", 0)
    if not lean[-1].closed:
        return Extraction(None, "unterminated ```lean code block (the reply ends inside it)", len(complete))
    code = _content(text, complete[-1])
    if not code.strip():
        return Extraction(None, "the ```lean code block is empty", len(complete))
    if "\x00" in code:
        line = code.count("\n", 0, code.index("\x00")) + 1
        return Extraction(None, f"the code contains a NUL character (line {line})", len(complete))
    if (bad := _SURROGATE_RE.search(code)) is not None:
        line = code.count("\n", 0, bad.start()) + 1
        return Extraction(
            None, f"the code contains text that is not valid Unicode (line {line})", len(complete)
        )
    code = as_lean_file(code)
    which = (
        "the only ```lean code block"
        if len(complete) == 1
        else f"the last of {len(complete)} ```lean code blocks"
    )
    return Extraction(code, which, len(complete))
