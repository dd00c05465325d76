"""Reading the messages `lean --json` prints while it compiles a file.

`lean --json` prints one `SerialMessage` per line (lean4 src/Lean/Shell.lean, "report Lean output
(e.g., messages) as JSON (one per line)"); its derived ToJson flattens `BaseMessage`, so
`fileName`, `pos{line,column}`, `endPos`, `severity` ("information" / "warning" / "error"),
`caption` and `data` are top-level keys (src/Lean/Message.lean). Plain `file:l:c: error: ...`
lines (what the runtime prints when it is not in JSON mode) and `uncaught exception: ...` lines
are read too, as a fallback.

The build's output is written by the submission's build as much as by Lean (build-time code can
print anything, and a panic message can quote the submission), so reading it is bounded and
total: every line that is not a well-formed message is plain text, and nothing here raises on
any `str`. A line is read as JSON only when it is at most `MAX_JSON_LINE_CHARS` long and its
brackets (outside strings) nest at most `MAX_JSON_DEPTH` deep, both checked by a linear scan
before `json.loads` sees it (deep nesting would make `json.loads` raise `RecursionError`). Only a
JSON object whose `severity` is a string is a message; a missing or malformed `pos` gives no
position, a missing or non-string `data` no text. Lines end at `\\n` alone; a `\\r` before it
(CRLF output) is dropped.
"""

from __future__ import annotations

import json
import re

#: Longest line (in characters) read as a JSON message; a longer one is plain text. Lean's own
#: messages are far shorter; the build's whole output is capped anyway (`output_cap_bytes`).
MAX_JSON_LINE_CHARS = 1 << 18
#: Deepest bracket nesting read as JSON: a Lean message nests 2 deep (`{"pos": {...}}`).
MAX_JSON_DEPTH = 16
#: How long one line of a reason or a note may be (`one_line`).
REASON_MAX_CHARS = 300

_PLAIN_HEADER_RE = re.compile(
    r"^(?P<file>[^\n]*?):(?P<line>\d+):(?P<col>\d+)(?:-\d+:\d+)?: "
    r"(?P<sev>error|warning)(?:\([^)\n]*\))?: ?(?P<msg>[^\n]*)$"
)
_UNCAUGHT = "uncaught exception:"
# A JSON string (possessive, so an unterminated one costs one linear scan), or a bracket.
_JSON_TOKEN_RE = re.compile(r'"(?:[^"\\]++|\\.)*+"|[\[\]{}]')
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _json_nesting_ok(line: str) -> bool:
    """Whether the brackets of `line` outside JSON strings nest at most `MAX_JSON_DEPTH` deep and
    never close more than they opened (linear; stops at the first bracket out of bounds). Where
    this count and `json.loads` disagree, `json.loads` has already failed."""
    depth = 0
    for m in _JSON_TOKEN_RE.finditer(line):
        depth += _DEPTH_STEP.get(m.group(0), 0)
        if not 0 <= depth <= MAX_JSON_DEPTH:
            return False
    return True


def _json_message(stripped: str) -> dict | None:
    """The JSON message on a (stripped) line, or None when the line is not one."""
    if not stripped.startswith("{") or len(stripped) > MAX_JSON_LINE_CHARS:
        return None
    if not _json_nesting_ok(stripped):
        return None
    try:
        obj = json.loads(stripped)
    except (ValueError, RecursionError):  # RecursionError only if the depth check were wrong
        return None
    if isinstance(obj, dict) and isinstance(obj.get("severity"), str):
        return obj
    return None


def _json_error_text(msg: dict) -> str:
    """`line:col: data` of a JSON error message (either part left out when it is malformed)."""
    pos = msg.get("pos")
    where = ""
    if isinstance(pos, dict):
        line, column = pos.get("line"), pos.get("column")
        if isinstance(line, int) and isinstance(column, int):
            where = f"{line}:{column}: "
    data = msg.get("data")
    return f"{where}{data if isinstance(data, str) else ''}".strip()


def error_messages(output: str) -> list[str]:
    """Error messages in Lean's output, in order: JSON messages with severity "error" (as
    `line:col: data`), plain `file:l:c: error: ...` messages (with the lines that follow them up
    to the next message header or JSON line), and `uncaught exception: ...` lines."""
    errors: list[str] = []
    current: list[str] | None = None  # the plain error message being continued

    def flush() -> None:
        nonlocal current
        if current is not None:
            errors.append("\n".join(current).strip())
            current = None

    for raw in output.split("\n"):
        line = raw.rstrip("\r")
        stripped = line.strip()
        if (msg := _json_message(stripped)) is not None:
            flush()
            if msg["severity"] == "error":
                errors.append(_json_error_text(msg))
            continue
        if (header := _PLAIN_HEADER_RE.match(line)) is not None:
            flush()
            if header["sev"] == "error":
                current = [f"{header['line']}:{header['col']}: {header['msg']}"]
            continue
        if stripped.startswith(_UNCAUGHT):
            flush()
            errors.append(stripped)
            continue
        if current is not None:
            current.append(line)
    flush()
    return errors


def one_line(text: str, limit: int = REASON_MAX_CHARS) -> str:
    """`text` on one line (its whitespace runs folded to one space), at most `limit` characters,
    an ellipsis marking a cut (pure): how a reason, a note or a log line quotes output."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
