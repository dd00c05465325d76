"""Reading the messages `lean --json` prints while it compiles a file.

`lean --json` prints one `SerialMessage` per line (lean4 src/Lean/Shell.lean, "report Lean output
(e.g., messages) as JSON (one per line)"); its derived ToJson flattens `BaseMessage`, so
`fileName`, `pos{line,column}`, `endPos`, `severity` ("information" / "warning" / "error"),
`caption` and `data` are top-level keys (src/Lean/Message.lean). Plain `file:l:c: error: ...`
lines (what the runtime prints when it is not in JSON mode) and `uncaught exception: ...` lines
are read too, as a fallback.
"""

from __future__ import annotations

import json
import re

_PLAIN_HEADER_RE = re.compile(
    r"^(?P<file>[^\n]*?):(?P<line>\d+):(?P<col>\d+)(?:-\d+:\d+)?: "
    r"(?P<sev>error|warning)(?:\([^)\n]*\))?: ?(?P<msg>[^\n]*)$"
)
_UNCAUGHT = "uncaught exception:"


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
        msg = None
        if stripped.startswith("{"):
            try:
                obj = json.loads(stripped)
            except ValueError:
                obj = None
            if isinstance(obj, dict) and isinstance(obj.get("severity"), str):
                msg = obj
        if msg is not None:
            flush()
            if msg["severity"] == "error":
                pos = msg.get("pos")
                where = ""
                if isinstance(pos, dict) and "line" in pos and "column" in pos:
                    where = f"{pos['line']}:{pos['column']}: "
                errors.append(f"{where}{msg.get('data', '')}".strip())
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
