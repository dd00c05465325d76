"""The two texts of the trusted judge (lean_mod_add_proof/grading/judge_source.py): the olean
text is Judge.lean without its marked export-mode blocks, the export text is the file as is.
Pure; no Lean runs (no toolchain here), so these check the texts, and the stripping itself on
generated texts."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lean_mod_add_proof.grading.judge_source import (
    EXPORT_BEGIN,
    EXPORT_END,
    JUDGE_SOURCE_PATH,
    judge_text,
    strip_export_blocks,
)

#: What Judge.lean's `main` prints without arguments; the grader's start-up check looks for it.
REQUIRED_MESSAGE = "judge: --olean, --theorem, --spec and --check are required"
#: The replay-phase line as the Lean string literal writes it (`markReplayStarted`).
REPLAY_LITERAL = r'"{\"phase\":\"replay\"}"'
#: Names only export mode may use.
EXPORT_ONLY = ("LeanExport", "--export", "parseStream", "loadExport", "stripMData", "sameConstant")


def is_marker(line: str) -> bool:
    return line.strip(" \t\r") in (EXPORT_BEGIN, EXPORT_END)


# --- the stripping, on hand-written texts ----------------------------------------------------------


def test_a_block_goes_with_both_markers() -> None:
    text = f"a\n{EXPORT_BEGIN}\nb\n{EXPORT_END}\nc\n"
    assert strip_export_blocks(text) == "a\nc\n"


def test_indented_markers_and_crlf_lines_count() -> None:
    text = f"a\n    {EXPORT_BEGIN}\r\nb\n\t{EXPORT_END}  \nc"
    assert strip_export_blocks(text) == "a\nc"


def test_a_text_without_markers_is_unchanged() -> None:
    text = "x\n  y -- export-mode-begin is mentioned here\n`-- export-mode-end` in prose\n"
    assert strip_export_blocks(text) == text


@pytest.mark.parametrize(
    "text",
    [
        f"a\n{EXPORT_END}\n",  # an end without a begin
        f"a\n{EXPORT_BEGIN}\nb\n",  # a block never ended
        f"{EXPORT_BEGIN}\n{EXPORT_BEGIN}\n{EXPORT_END}\n{EXPORT_END}\n",  # nested
        f"{EXPORT_BEGIN}\nb\n{EXPORT_END}\n{EXPORT_END}\n",  # one end too many
        f"{EXPORT_BEGIN}\n",  # only a begin
        f"{EXPORT_BEGIN} and more\nb\n{EXPORT_END}\n",  # a begin with trailing text
        "-- export-mode-ends\n",  # misspelt
        "  -- export-mode-start\n",  # misspelt, indented
    ],
)
def test_broken_markers_raise(text: str) -> None:
    with pytest.raises(ValueError):
        strip_export_blocks(text)


# --- the judge's two texts -----------------------------------------------------------------------


def test_the_export_text_is_the_file_as_is() -> None:
    assert judge_text("export") == JUDGE_SOURCE_PATH.read_text(encoding="utf-8")


def test_the_texts_are_read_once() -> None:
    assert judge_text("olean") is judge_text("olean")
    assert judge_text("export") is judge_text("export")


def test_an_unknown_mode_raises() -> None:
    with pytest.raises(ValueError):
        judge_text("lake")  # type: ignore[arg-type]


def test_the_file_has_marked_blocks_and_the_olean_text_none() -> None:
    export_lines = judge_text("export").split("\n")
    assert sum(is_marker(line) for line in export_lines) >= 2
    assert not any(is_marker(line) for line in judge_text("olean").split("\n"))


def test_the_olean_text_is_the_file_minus_whole_lines() -> None:
    # every line of the olean text is a line of the file, in order (nothing is rewritten)
    remaining = iter(judge_text("export").split("\n"))
    for line in judge_text("olean").split("\n"):
        assert any(line == candidate for candidate in remaining), line


@pytest.mark.parametrize("word", EXPORT_ONLY)
def test_export_mode_is_only_in_the_export_text(word: str) -> None:
    assert word not in judge_text("olean")
    assert word in judge_text("export")


def test_the_export_text_imports_the_parser() -> None:
    assert re.search(r"^import LeanExport\.Parse$", judge_text("export"), re.MULTILINE)
    assert not re.search(r"^import LeanExport", judge_text("olean"), re.MULTILINE)


@pytest.mark.parametrize("mode", ["export", "olean"])
def test_neither_text_is_a_module_root(mode: str) -> None:
    """A `module` header would make the judge a module root: its imports would then come at
    `.exported` level, without IR for LeanExport's non-`meta` code (lean4 #8664, #8666), and
    `lean --run` could not run the export text. As a plain root it imports at `.private`, with
    every import's full IR (src/Lean/Elab/Import.lean `processHeaderCore`; first-contact.md Q1)."""
    header = re.compile(r"^\s*(public\s+|private\s+)?module\b")
    assert not [ln for ln in judge_text(mode).splitlines() if header.match(ln)]
    assert header.match("module") and header.match("public module")  # the check can fail


@pytest.mark.parametrize("mode", ["olean", "export"])
def test_both_texts_keep_the_shared_judge(mode: str) -> None:
    text = judge_text(mode)  # type: ignore[arg-type]
    for needed in (
        '"--olean"',
        REQUIRED_MESSAGE,
        REPLAY_LITERAL,
        "Json.compress",
        ").compress",
        "def loadOlean",
        "def checkConstants",
        "def judge",
        "def main",
        "kenv.replay newConstants",
        "readModuleDataParts",
    ):
        assert needed in text, needed


@pytest.mark.parametrize("mode", ["olean", "export"])
def test_both_texts_keep_the_repo_rules_for_lean_texts(mode: str) -> None:
    text = judge_text(mode)  # type: ignore[arg-type]
    assert not re.search(r"-/\s*/--", text)  # two doc comments before one declaration
    assert "asString" not in text


def test_the_export_flag_sets_a_field_the_olean_text_keeps() -> None:
    # the `Args` field stays shared, so the olean text's `Args` still has it (unused there)
    assert "exportFile : System.FilePath" in judge_text("olean")
    assert "exportFile := ⟨value⟩" not in judge_text("olean")
    assert '| "--export" => pure { acc with exportFile := ⟨value⟩ }' in judge_text("export")


# --- the stripping, on generated texts -----------------------------------------------------------

# A line that is not a marker and does not start like one (markers are matched after stripping
# this indentation). Lines may mention the markers anywhere but at their start.
_plain_line = st.one_of(
    st.text(alphabet=st.characters(blacklist_characters="\n"), max_size=30).filter(
        lambda s: not s.strip(" \t\r").startswith("-- export-mode")
    ),
    st.sampled_from([f"x {EXPORT_BEGIN}", f"`{EXPORT_END}`", "-- export", "--", ""]),
)
_indent = st.sampled_from(["", "  ", "\t", "    "])
_trail = st.sampled_from(["", " ", "\r", "\t"])
_marker = st.builds(lambda i, m, t: f"{i}{m}{t}", _indent, st.sampled_from([EXPORT_BEGIN]), _trail)
_end_marker = st.builds(lambda i, m, t: f"{i}{m}{t}", _indent, st.sampled_from([EXPORT_END]), _trail)
# A text is a list of segments: a plain line (kept), or a block of plain lines (removed).
_segment = st.one_of(
    st.tuples(st.just("line"), _plain_line, st.just(""), st.just("")),
    st.tuples(st.just("block"), st.lists(_plain_line, max_size=4).map("\n".join), _marker, _end_marker),
)


def render(segments: list[tuple[str, str, str, str]]) -> tuple[str, str]:
    """(the text, what stripping it must give)."""
    lines: list[str] = []
    kept: list[str] = []
    for kind, body, begin, end in segments:
        if kind == "line":
            lines.append(body)
            kept.append(body)
        else:
            lines.append(begin)
            if body:
                lines.extend(body.split("\n"))
            lines.append(end)
    return "\n".join(lines), "\n".join(kept)


@given(st.lists(_segment, max_size=12))
def test_stripping_removes_exactly_the_blocks(segments: list[tuple[str, str, str, str]]) -> None:
    text, expected = render(segments)
    stripped = strip_export_blocks(text)
    assert stripped == expected
    assert not any(is_marker(line) for line in stripped.split("\n"))
    assert strip_export_blocks(stripped) == stripped  # idempotent


@given(st.lists(_plain_line, max_size=12))
def test_unmarked_texts_are_unchanged(lines: list[str]) -> None:
    text = "\n".join(lines)
    assert strip_export_blocks(text) == text


@given(st.lists(_segment, max_size=12), st.sampled_from([EXPORT_BEGIN, EXPORT_END]), st.data())
def test_one_extra_marker_anywhere_raises(
    segments: list[tuple[str, str, str, str]], extra: str, data: st.DataObject
) -> None:
    text, _ = render(segments)
    lines = text.split("\n")
    at = data.draw(st.integers(min_value=0, max_value=len(lines)))
    broken = "\n".join([*lines[:at], extra, *lines[at:]])
    with pytest.raises(ValueError):
        strip_export_blocks(broken)


@given(st.lists(_segment, min_size=1, max_size=12), st.data())
def test_a_dropped_marker_raises(segments: list[tuple[str, str, str, str]], data: st.DataObject) -> None:
    text, _ = render(segments)
    lines = text.split("\n")
    markers = [i for i, line in enumerate(lines) if is_marker(line)]
    if not markers:
        return
    drop = data.draw(st.sampled_from(markers))
    with pytest.raises(ValueError):
        strip_export_blocks("\n".join(lines[:drop] + lines[drop + 1 :]))
