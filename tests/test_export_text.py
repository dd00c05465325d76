"""The self-test's crafted exports (export_text.py): each edit does exactly what its canary
needs, on an export in the shapes lean4 src/LeanExport/Parse.lean reads, and fails closed when
the export does not hold what it edits."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lean_mod_add_proof.grading.export_text import (
    ExportEditError,
    append_line,
    drop_constant,
    names,
    require_constant,
    retype_constant,
)

META = '{"meta":{"exporter":{"name":"lean4export","version":"3.1.0"},"format":{"version":"3.1.0"}}}'
LINES = [
    META,
    '{"in":1,"str":{"pre":0,"str":"A"}}',
    '{"in":2,"str":{"pre":1,"str":"thm"}}',
    '{"in":3,"str":{"pre":1,"str":"row"}}',
    '{"in":4,"num":{"pre":3,"i":7}}',
    '{"ie":0,"sort":0}',
    '{"ie":1,"const":{"name":3,"us":[]}}',
    '{"axiom":{"name":3,"levelParams":[],"type":0,"isUnsafe":false}}',
    '{"thm":{"name":2,"levelParams":[],"type":1,"value":1,"all":[2]}}',
]
EXPORT = "\n".join(LINES) + "\n"


def test_names_resolve_through_their_prefixes() -> None:
    assert names(EXPORT) == {1: "A", 2: "A.thm", 3: "A.row", 4: "A.row.7"}


def test_a_name_whose_prefix_is_missing_fails_closed() -> None:
    with pytest.raises(ExportEditError, match="name index 9"):
        names('{"in":1,"str":{"pre":9,"str":"x"}}\n')


def test_drop_removes_exactly_the_constant_line() -> None:
    out = drop_constant(EXPORT, "A.row")
    assert out.split("\n") == [*LINES[:7], LINES[8], ""]


def test_retype_points_the_type_at_the_other_constant_and_keeps_the_rest() -> None:
    out = retype_constant(EXPORT, "A.thm", "A.row").split("\n")
    assert out[:8] == LINES[:8] and out[9:] == [""]
    assert json.loads(out[8]) == {"thm": {"name": 2, "levelParams": [], "type": 0, "value": 1, "all": [2]}}


def test_retype_to_the_same_type_is_refused() -> None:
    with pytest.raises(ExportEditError, match="same type"):
        retype_constant(EXPORT, "A.thm", "A.thm")


@pytest.mark.parametrize(
    "edit", [drop_constant, require_constant, lambda t, n: retype_constant(t, n, "A.row")]
)
def test_an_absent_constant_fails_closed(edit) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ExportEditError, match=r"no constant A\.nope"):
        edit(EXPORT, "A.nope")


def test_append_adds_one_line_at_the_end_and_no_blank_line() -> None:
    # `parseItems` stops at the stream's end (an empty `getLine`); a blank line in between would
    # be read as an item, so the edit keeps exactly one trailing newline.
    out = append_line(EXPORT, '{"bogus":1}')
    assert out == EXPORT + '{"bogus":1}\n'
    assert append_line(EXPORT.rstrip("\n"), "x") == EXPORT + "x\n"


@given(st.lists(st.sampled_from(LINES[1:]), min_size=0, max_size=12))
def test_edits_never_touch_other_lines(extra: list[str]) -> None:
    text = EXPORT + "\n".join(line.replace('"in":', '"in_":') for line in extra)
    out = drop_constant(text, "A.row")
    assert out.split("\n") == [ln for i, ln in enumerate(text.split("\n")) if i != 7]


def test_require_keeps_an_export_that_holds_the_constant() -> None:
    assert require_constant(EXPORT, "A.row") == EXPORT


def _chain(depth: int) -> str:
    """A name `n.n.….n` of `depth` components, deepest first, so that resolving it recurses."""
    return "".join(f'{{"in":{i},"str":{{"pre":{i - 1},"str":"n"}}}}\n' for i in range(depth, 0, -1))


def test_names_defined_before_their_prefix_resolve() -> None:
    assert names(_chain(3)) == {3: "n.n.n", 2: "n.n", 1: "n"}


def test_a_cyclic_or_too_deep_name_fails_closed_as_an_edit_error() -> None:
    # Not a RecursionError: the cap is below Python's recursion limit.
    with pytest.raises(ExportEditError, match="name index 1"):
        names('{"in":1,"str":{"pre":1,"str":"x"}}\n')
    assert names(_chain(201))[201] == ".".join(["n"] * 201)
    with pytest.raises(ExportEditError, match="name index 1 is"):
        names(_chain(202))


def test_lines_with_spaces_and_blank_lines_keep_their_places() -> None:
    spaced = [json.dumps(json.loads(line)) for line in LINES]  # `", "` and `": "` separators
    text = "\n".join([*spaced[:7], "", *spaced[7:]]) + "\n"
    assert names(text) == {1: "A", 2: "A.thm", 3: "A.row", 4: "A.row.7"}
    assert drop_constant(text, "A.row").split("\n") == [*spaced[:7], "", spaced[8], ""]


@pytest.mark.parametrize("kind", ["thm", "def", "axiom", "opaque", "quot"])
def test_every_one_line_constant_kind_is_found(kind: str) -> None:
    text = EXPORT + json.dumps({kind: {"name": 4, "levelParams": [], "type": 0}}) + "\n"
    assert require_constant(text, "A.row.7") == text


def test_an_inductive_block_or_a_nameless_constant_is_not_a_one_line_constant() -> None:
    # `inductive` holds several constants (Parse.lean), so it is never edited as one line.
    text = EXPORT + '{"inductive":{"name":4,"types":[],"ctors":[]}}\n'
    with pytest.raises(ExportEditError, match="no constant"):
        require_constant(text, "A.row.7")
    nameless = EXPORT + '{"def":{"levelParams":[],"type":0}}\n'
    with pytest.raises(ExportEditError, match="no constant"):
        require_constant(nameless, "A")
    with pytest.raises(ExportEditError, match="no constant"):
        require_constant(EXPORT + '{"thm":5}\n', "A")


def test_retype_writes_the_line_compactly() -> None:
    out = retype_constant(EXPORT, "A.thm", "A.row").split("\n")
    assert out[8] == '{"thm":{"name":2,"levelParams":[],"type":0,"value":1,"all":[2]}}'


def test_append_strips_only_trailing_newlines() -> None:
    assert append_line("AX \n\n", "b") == "AX \nb\n"
    assert append_line("AX\n", "b") == "AX\nb\n"
