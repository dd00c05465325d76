"""Reading and crafting NDJSON exports, for the self-test's crafted-export canaries only (pure).

The judge alone decides what an export means (`LeanExport.parseStream`, lean4
src/LeanExport/Parse.lean). Nothing here takes part in a verdict: these functions make the
malformed exports that the judge must reject, from an export the real `leanexport` wrote. The
shapes are Parse.lean's `parseItem`: one JSON object per line, names as
`{"in": i, "str": {"pre": j, "str": s}}` or `{"in": i, "num": {"pre": j, "i": n}}` (index 0 is
the anonymous name, never written), and each constant as a one-key object (`thm`, `def`,
`axiom`, `opaque`, `quot`, `inductive`) whose `name` is a name index. A canary that cannot find
what it edits raises `ExportEditError`, so the self-test fails closed instead of running a
canary that tests nothing.
"""

from __future__ import annotations

import json

#: The constant kinds of one line each that `parseItem` reads (`inductive` holds several).
CONSTANT_KEYS: tuple[str, ...] = ("thm", "def", "axiom", "opaque", "quot")


class ExportEditError(ValueError):
    """The export does not hold what the edit needs."""


def _objects(text: str) -> list[tuple[str, object]]:
    """Each line with its parsed object (None for the metadata line or an unparsable one)."""
    out: list[tuple[str, object]] = []
    for line in text.split("\n"):
        try:
            obj = json.loads(line) if line.strip() else None
        except ValueError:
            obj = None
        out.append((line, obj))
    return out


def names(text: str) -> dict[int, str]:
    """Name index -> dotted name (components joined by `.`, unescaped), from the `in` lines."""
    parts: dict[int, tuple[int, str]] = {}
    for _, obj in _objects(text):
        if isinstance(obj, dict) and isinstance(obj.get("in"), int):
            if isinstance(body := obj.get("str"), dict):
                parts[obj["in"]] = (int(body["pre"]), str(body["str"]))
            elif isinstance(body := obj.get("num"), dict):
                parts[obj["in"]] = (int(body["pre"]), str(body["i"]))
    resolved: dict[int, str] = {0: ""}

    def resolve(i: int, depth: int = 0) -> str:
        if i in resolved:
            return resolved[i]
        # Far below Python's recursion limit (1000), so that a cyclic or absurdly deep name is
        # this error rather than a RecursionError; real names are a few components deep.
        if i not in parts or depth > 200:
            raise ExportEditError(f"name index {i} is not defined")
        pre, last = parts[i]
        head = resolve(pre, depth + 1)
        resolved[i] = f"{head}.{last}" if head else last
        return resolved[i]

    return {i: resolve(i) for i in parts}


def _constant_line(text: str, name: str) -> tuple[int, str, dict[str, object]]:
    """(line number, kind, body) of the one-line constant called `name`."""
    by_index = names(text)
    for n, (_, obj) in enumerate(_objects(text)):
        if isinstance(obj, dict) and len(obj) == 1:
            kind = next(iter(obj))
            body = obj[kind]
            if kind in CONSTANT_KEYS and isinstance(body, dict):
                if by_index.get(body.get("name", -1)) == name:
                    return n, kind, body
    raise ExportEditError(f"the export holds no constant {name}")


def require_constant(text: str, name: str) -> str:
    """The export unchanged, if it declares `name` (a canary whose bad declaration never reached
    the export would test nothing)."""
    _constant_line(text, name)
    return text


def drop_constant(text: str, name: str) -> str:
    """The export without the line declaring `name`: a dependency gone missing."""
    n, _, _ = _constant_line(text, name)
    lines = text.split("\n")
    return "\n".join(lines[:n] + lines[n + 1 :])


def retype_constant(text: str, name: str, like: str) -> str:
    """The export with `name` stated at the type of `like`, its value unchanged: a theorem whose
    stated type is not what its value proves."""
    n, kind, body = _constant_line(text, name)
    _, _, other = _constant_line(text, like)
    if body.get("type") == other.get("type"):
        raise ExportEditError(f"{name} and {like} have the same type")
    lines = text.split("\n")
    lines[n] = json.dumps({kind: {**body, "type": other["type"]}}, separators=(",", ":"))
    return "\n".join(lines)


def append_line(text: str, line: str) -> str:
    """The export with one more line (a shape the reader must refuse)."""
    return text.rstrip("\n") + "\n" + line + "\n"
