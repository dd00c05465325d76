"""Reading what Lean prints for `#print axioms NAME`, and judging the axiom list.

`#print axioms` (lean4 `src/Lean/Elab/Print.lean`, `printAxiomsOf`) logs one *information*
message per resolved constant:

    'NAME' depends on axioms: [propext, Classical.choice, Quot.sound]
    'NAME' does not depend on any axioms

The list is sorted by `Name.lt` (not alphabetically) and, being a `Format`, may wrap after a
comma onto indented lines; names that are not plain identifiers are printed with `«»` escapes.

Two output forms are read:

- `lean --json` (what the pipeline runs): one JSON object per line with `fileName`, `pos`,
  `endPos`, `severity` ("information" / "warning" / "error"), `caption`, `data`, maybe `kind`.
  Message boundaries are explicit here, so text inside one message can never pose as another.
- Plain `lean` output: information messages are printed bare (no `file:line:col:` prefix, see
  `SerialMessage.toString` in `src/Lean/Message.lean`), errors as `file:l:c: error: ...` (with
  `-l:c` after the position when an end position is printed and `(errorName)` after `error`).
  Message boundaries are only guessed from line starts, so this is a fallback.

`parse_axiom_report` uses the JSON reader if any line of the output is a JSON message object,
else the plain reader; `parse_axiom_report_json` and `parse_axiom_report_plain` force one.

Conservative choices: exactly one report per requested name (none, or two, is an error); a
message counts for a name only if it starts with exactly `'NAME' ` (so `'NAME2'` or a look-alike
in another script does not count); a report that starts like one but does not parse (garbage,
a list cut off before `]`, an empty or duplicated entry) is an error rather than ignored; axiom
names are compared as printed, so any name printed with `«»` (for instance `«propext»`, which
Lean would never print for the real `propext`) is simply not an allowed axiom.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Literal

from lean_mod_add_proof.constants import ALLOWED_AXIOMS

NONE_SUFFIX = "does not depend on any axioms"
SOME_SUFFIX = "depends on axioms:"

_WS = " \t\r\n"
_ITEM_STOP = frozenset(",[]«»" + _WS)
# A printed Lean name: components separated by dots, each plain or «escaped».
_PART = r"(?:«[^»]*»|[^\s,\[\]«».]+)"
_NAME_RE = re.compile(rf"{_PART}(?:\.{_PART})*")
_PLAIN_HEADER_RE = re.compile(
    r"^(?P<file>[^\n]*?):(?P<line>\d+):(?P<col>\d+)(?:-\d+:\d+)?: "
    r"(?P<sev>error|warning)(?:\([^)\n]*\))?: ?(?P<msg>[^\n]*)$"
)
_UNCAUGHT = "uncaught exception:"


class AxiomReportError(ValueError):
    """The axiom report could not be read; the message says why, briefly."""


def _parse_list(text: str, pos: int) -> tuple[list[str], int]:
    """Parse `[a, b, ...]` starting at `pos` (after optional whitespace). Returns the names and
    the position after `]`. Whitespace, including line breaks, may surround every entry."""
    n = len(text)
    while pos < n and text[pos] in _WS:
        pos += 1
    if pos >= n or text[pos] != "[":
        raise AxiomReportError("axiom list does not start with '['")
    pos += 1
    names: list[str] = []
    while True:
        while pos < n and text[pos] in _WS:
            pos += 1
        start = pos
        while pos < n:
            if text[pos] == "«":
                close = text.find("»", pos + 1)
                if close < 0:
                    raise AxiomReportError("axiom list ends inside a «» name")
                pos = close + 1
            elif text[pos] in _ITEM_STOP:
                break
            else:
                pos += 1
        item = text[start:pos]
        while pos < n and text[pos] in _WS:
            pos += 1
        if pos >= n:
            raise AxiomReportError("axiom list is cut off before ']'")
        if not item or not _NAME_RE.fullmatch(item):
            raise AxiomReportError(f"unreadable entry in axiom list near {text[start : start + 40]!r}")
        if item in names:
            raise AxiomReportError(f"axiom '{item}' listed twice")
        names.append(item)
        if text[pos] == "]":
            return names, pos + 1
        if text[pos] != ",":
            raise AxiomReportError(f"unexpected {text[pos]!r} in axiom list")
        pos += 1


def _parse_report(text: str, start: int, name: str) -> tuple[list[str], int]:
    """`text[start:]` starts with `'NAME' `; parse that report. Returns the axioms and the
    position where the report ends."""
    pos = start + len(name) + 3
    if text.startswith(NONE_SUFFIX, pos):
        return [], pos + len(NONE_SUFFIX)
    if text.startswith(SOME_SUFFIX, pos):
        return _parse_list(text, pos + len(SOME_SUFFIX))
    raise AxiomReportError(f"unreadable axiom report for '{name}': {text[start : start + 120]!r}")


def _json_messages(output: str) -> list[dict[str, object]]:
    messages: list[dict[str, object]] = []
    for line in output.split("\n"):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if (
            isinstance(obj, dict)
            and isinstance(obj.get("severity"), str)
            and isinstance(obj.get("data"), str)
        ):
            messages.append(obj)
    return messages


def _collect(found: dict[str, list[list[str]]], names: Sequence[str]) -> dict[str, list[str]]:
    result: dict[str, list[str]] = {}
    for name in names:
        reports = found[name]
        if not reports:
            raise AxiomReportError(f"no '#print axioms' report for '{name}'")
        if len(reports) > 1:
            raise AxiomReportError(f"{len(reports)} '#print axioms' reports for '{name}'")
        result[name] = reports[0]
    return result


def parse_axiom_report_json(output: str, names: Sequence[str]) -> dict[str, list[str]]:
    """Axioms per name from `lean --json` output; lines that are not JSON messages are ignored."""
    found: dict[str, list[list[str]]] = {name: [] for name in names}
    for msg in _json_messages(output):
        if msg["severity"] != "information":
            continue
        data = str(msg["data"])
        for name in names:
            if data.startswith(f"'{name}' "):
                axioms, end = _parse_report(data, 0, name)
                if data[end:].strip(_WS):
                    raise AxiomReportError(f"unexpected text after the axiom report for '{name}'")
                found[name].append(axioms)
    return _collect(found, names)


def parse_axiom_report_plain(output: str, names: Sequence[str]) -> dict[str, list[str]]:
    """Axioms per name from plain `lean` output: a report starts at the beginning of a line and
    its list may continue over the following lines up to the closing `]`, which must end its
    line."""
    found: dict[str, list[list[str]]] = {name: [] for name in names}
    line_start = 0
    while line_start <= len(output):
        line_end = output.find("\n", line_start)
        line_end = len(output) if line_end < 0 else line_end
        for name in names:
            if output.startswith(f"'{name}' ", line_start):
                axioms, end = _parse_report(output, line_start, name)
                rest_end = output.find("\n", end)
                rest_end = len(output) if rest_end < 0 else rest_end
                if output[end:rest_end].strip(_WS):
                    raise AxiomReportError(f"unexpected text after the axiom report for '{name}'")
                found[name].append(axioms)
                line_end = max(line_end, rest_end)
        line_start = line_end + 1
    return _collect(found, names)


def parse_axiom_report(output: str, names: Sequence[str]) -> dict[str, list[str]]:
    """Axioms per requested name (`[]` for "does not depend on any axioms").

    Reads `output` as `lean --json` output if any line is a JSON message object, otherwise as
    plain `lean` output. Raises `AxiomReportError` unless there is exactly one readable report
    for every name."""
    if not names:
        raise AxiomReportError("no names to read axioms for")
    if _json_messages(output):
        return parse_axiom_report_json(output, names)
    return parse_axiom_report_plain(output, names)


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


def check_axioms(found: Sequence[str], mode: Literal["subset", "exact"]) -> str | None:
    """None if `found` is acceptable, else the reason. `subset`: every axiom is one of
    `ALLOWED_AXIOMS`; `exact`: also, all of them are there."""
    allowed = ", ".join(ALLOWED_AXIOMS)
    for axiom in found:
        if axiom not in ALLOWED_AXIOMS:
            return f"axiom '{axiom}' is not allowed (allowed: {allowed})"
    if mode == "subset":
        return None
    if mode == "exact":
        missing = [axiom for axiom in ALLOWED_AXIOMS if axiom not in found]
        if missing:
            return f"missing axioms {', '.join(missing)} (exact mode requires all of {allowed})"
        return None
    return f"unknown axioms mode {mode!r}"
