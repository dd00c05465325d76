"""Reading the messages `lean --json` (and plain `lean`) prints."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lean_mod_add_proof.grading import messages
from lean_mod_add_proof.grading.messages import MAX_JSON_DEPTH, MAX_JSON_LINE_CHARS, error_messages


def msg(data: str, severity: str = "information", line: int = 3) -> str:
    """One line of `lean --json` output."""
    return json.dumps(
        {
            "fileName": "/pkg/Check.lean",
            "pos": {"line": line, "column": 0},
            "endPos": {"line": line, "column": 14},
            "keepFullRange": False,
            "severity": severity,
            "caption": "",
            "data": data,
            "kind": "[anonymous]",
        }
    )


def json_out(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def test_error_messages_json_and_plain() -> None:
    output = "\n".join(
        [
            msg("unused variable", severity="warning"),
            msg("type mismatch\n  adds_mod_7\nhas type\n  True", severity="error", line=4),
            msg("'adds_mod_7' depends on axioms: [propext]"),
            "/pkg/Check.lean:5:2: error: unknown constant 'X'",
            "  more detail",
            "/pkg/Check.lean:6:0-6:9: error(lean.unknownIdentifier): unknown identifier 'y'",
            "/pkg/Check.lean:7:0: warning: a warning",
            "  warning detail",
            "uncaught exception: boom",
        ]
    )
    assert error_messages(output) == [
        "4:0: type mismatch\n  adds_mod_7\nhas type\n  True",
        "5:2: unknown constant 'X'\n  more detail",
        "6:0: unknown identifier 'y'",
        "uncaught exception: boom",
    ]


def test_error_messages_none() -> None:
    assert error_messages(json_out(msg("'adds_mod_7' does not depend on any axioms"))) == []
    assert error_messages("") == []


# --- malformed JSON messages are read as far as they go ------------------------------------------


def raw_msg(**fields: object) -> str:
    return json.dumps({"severity": "error", **fields})


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (raw_msg(pos=None, data="no position"), "no position"),
        (raw_msg(pos={"line": 4}, data="no column"), "no column"),
        (raw_msg(pos={"column": 2}, data="no line"), "no line"),
        (raw_msg(pos={"line": "4", "column": 2}, data="string line"), "string line"),
        (raw_msg(pos={"line": 4, "column": None}, data="null column"), "null column"),
        (raw_msg(pos=[4, 2], data="list position"), "list position"),
        (raw_msg(pos={"line": 4, "column": 2}), "4:2:"),
        (raw_msg(pos={"line": 4, "column": 2}, data=None), "4:2:"),
        (raw_msg(pos={"line": 4, "column": 2}, data={"text": "x"}), "4:2:"),
        (raw_msg(pos={"line": 4, "column": 2}, data=7), "4:2:"),
        (raw_msg(), ""),
        (raw_msg(pos={"line": 4, "column": 2}, data="  padded  "), "4:2:   padded"),
        ("   " + raw_msg(pos={"line": 1, "column": 0}, data="indented") + "  ", "1:0: indented"),
    ],
    ids=["pos-null", "no-column", "no-line", "string-line", "null-column", "pos-list", "no-data",
         "data-null", "data-object", "data-number", "bare", "padded", "indented-line"],
)  # fmt: skip
def test_malformed_json_error_is_read_as_far_as_it_goes(line: str, expected: str) -> None:
    assert error_messages(line + "\n") == [expected]


@pytest.mark.parametrize(
    "line",
    [
        "[1, 2, 3]",
        '"error"',
        "123",
        "null",
        '{"severity": 1, "data": "x"}',
        '{"severity": null, "data": "x"}',
        '{"data": "x"}',
        '{"severity": "error", "data": "x"',
        "{not json at all}",
        "{",
        '{"severity": "error", "data": "' + "9" * 5000 + '"}x',
        '{"severity": "error", "pos": {"line": ' + "9" * 5000 + ', "column": 0}}',
    ],
    ids=["list", "string", "number", "null", "severity-number", "severity-null", "no-severity",
         "unterminated", "not-json", "brace", "extra-data", "huge-int"],
)  # fmt: skip
def test_a_line_that_is_no_json_message_is_plain_text(line: str) -> None:
    assert error_messages(line + "\n") == []
    # ... and so continues a plain error message like any other line
    assert error_messages(f"/pkg/S.lean:1:0: error: boom\n{line}\n") == [f"1:0: boom\n{line}"]


def test_error_after_a_plain_error_keeps_the_order() -> None:
    output = json_out(
        "/pkg/S.lean:1:0: error: first",
        "  detail",
        msg("second", severity="error", line=2),
        msg("a warning", severity="warning"),
        "/pkg/S.lean:3:0: error: third",
    )
    assert error_messages(output) == ["1:0: first\n  detail", "2:0: second", "3:0: third"]


def test_a_json_information_line_ends_a_plain_error() -> None:
    output = json_out("/pkg/S.lean:1:0: error: first", msg("info"), "after the info")
    assert error_messages(output) == ["1:0: first"]


def test_a_plain_warning_is_not_an_error_and_ends_the_previous_one() -> None:
    output = json_out("/pkg/S.lean:1:0: error: e", "/pkg/S.lean:2:0: warning: w", "  detail of w")
    assert error_messages(output) == ["1:0: e"]


# --- hostile lines: bounded and total ------------------------------------------------------------


def nested(depth: int) -> str:
    """An error message with one more field nested `depth` deep in all (the message is depth 1)."""
    inner = "[" * (depth - 1) + "]" * (depth - 1)
    return '{"severity": "error", "data": "deep", "extra": ' + inner + "}"


def test_nesting_up_to_the_bound_is_read_and_deeper_is_plain_text() -> None:
    assert error_messages(nested(MAX_JSON_DEPTH)) == ["deep"]
    assert error_messages(nested(MAX_JSON_DEPTH + 1)) == []


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    data = "[" * 100 + '\\" {{{{' + "]" * 3
    line = json.dumps({"severity": "error", "data": data})
    assert error_messages(line) == [json.loads(line)["data"]]


@pytest.mark.parametrize(
    "line",
    [
        '{"a": ' + "[" * 100_000,
        '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"a": ' + '{"b": ' * 50_000 + "1" + "}" * 50_000 + "}",
        "{" * 1_000_000,
        '{"severity": "error", "data": "x"}' + "]" * 10 + "[" * 20,
        '{"a": "' + "\\" * 99_999,
    ],
    ids=["open-lists", "balanced-lists", "nested-objects", "open-braces", "closes-first", "backslashes"],
)
def test_deep_nesting_is_plain_text_not_an_exception(line: str) -> None:
    # json.loads raises RecursionError on these (nesting deeper than the interpreter's limit).
    assert error_messages(line + "\n") == []
    assert error_messages(f"/pkg/S.lean:1:0: error: boom\n{line}\n") == [f"1:0: boom\n{line}"]


def test_recursion_in_the_json_parser_is_plain_text(monkeypatch: pytest.MonkeyPatch) -> None:
    # Were the depth check ever wrong, json.loads's RecursionError would still be plain text.
    monkeypatch.setattr(messages, "MAX_JSON_DEPTH", 10**9)
    line = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(RecursionError):
        json.loads(line)
    assert error_messages(line) == []


def test_line_length_bound() -> None:
    def line_of(size: int) -> str:
        head = '{"severity": "error", "data": "'
        return head + "x" * (size - len(head) - 2) + '"}'

    at_bound, over = line_of(MAX_JSON_LINE_CHARS), line_of(MAX_JSON_LINE_CHARS + 1)
    assert len(at_bound) == MAX_JSON_LINE_CHARS and len(over) == MAX_JSON_LINE_CHARS + 1
    assert error_messages(at_bound) == [json.loads(at_bound)["data"]]
    assert error_messages(over) == []
    # the bound is on the stripped line: surrounding spaces do not count
    assert error_messages("  " + at_bound + "  ") == [json.loads(at_bound)["data"]]


def test_bounds() -> None:
    assert MAX_JSON_DEPTH == 16 and MAX_JSON_LINE_CHARS == 262_144


# --- line endings and `uncaught exception:` ------------------------------------------------------

MIXED = [
    msg("type mismatch", severity="error", line=4),
    "/pkg/S.lean:5:2: error: unknown constant 'X'",
    "  more detail",
    "uncaught exception: boom",
    "  not part of the exception",
    msg("after the exception", severity="error", line=9),
    "/pkg/S.lean:10:0: error: plain after",
    "  its detail",
]
MIXED_ERRORS = [
    "4:0: type mismatch",
    "5:2: unknown constant 'X'\n  more detail",
    "uncaught exception: boom",
    "9:0: after the exception",
    "10:0: plain after\n  its detail",
]


def test_errors_after_an_uncaught_exception_are_read() -> None:
    assert error_messages(json_out(*MIXED)) == MIXED_ERRORS


def test_uncaught_exception_ends_a_plain_error() -> None:
    output = json_out("/pkg/S.lean:1:0: error: e", "  detail", "  uncaught exception: x", "tail")
    assert error_messages(output) == ["1:0: e\n  detail", "uncaught exception: x"]


def test_crlf_output_reads_like_lf() -> None:
    assert error_messages("\r\n".join(MIXED) + "\r\n") == MIXED_ERRORS
    assert error_messages("\r\n".join(MIXED)) == MIXED_ERRORS


def test_lines_end_at_newline_only() -> None:
    # U+2028 and a lone CR are characters inside a line, not line breaks.
    first = msg("a\u2028b", severity="error", line=1)
    assert error_messages(first + "\n") == ["1:0: a\u2028b"]
    assert error_messages("/pkg/S.lean:1:0: error: a\rb\n") == ["1:0: a\rb"]


# --- nothing raises ------------------------------------------------------------------------------

PIECES = [
    "{", "}", "[", "]", '"', "\\", ":", ",", "\n", "\r\n", "\r", " ", "null", "1", "-1", "error",
    '"severity"', '"error"', '"pos"', '"line"', '"column"', '"data"', '{"severity": "error"',
    "/pkg/S.lean:1:0: error: ", "/pkg/S.lean:1:0-1:4: warning(x): ", "uncaught exception:",
    "[" * 40, "{" * 40, "]" * 40, '{"a": ' + "[" * 5000, "\u2028", "\x00", "\udc80", "é",
]  # fmt: skip
output_text = st.lists(st.sampled_from(PIECES) | st.text(max_size=6), max_size=80).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(st.characters(exclude_categories=()), max_size=300) | output_text)
def test_error_messages_never_raises(output: str) -> None:
    errors = error_messages(output)
    assert isinstance(errors, list) and all(isinstance(e, str) for e in errors)
    assert error_messages(output.replace("\n", "\r\n")) == errors  # CRLF output reads like LF


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                                 max_size=3),
                    max_leaves=30))  # fmt: skip
def test_any_json_value_as_a_field_never_raises(value: object) -> None:
    for key in ("pos", "data", "severity", "extra"):
        line = json.dumps({"severity": "error", key: value})
        errors = error_messages(line)
        assert len(errors) <= 1


def test_only_a_carriage_return_is_dropped_from_a_line_end() -> None:
    output = "/pkg/S.lean:1:0: error: ends in XX\n  a tab\t\n  trailing space  \n  last\r\n"
    assert error_messages(output) == ["1:0: ends in XX\n  a tab\t\n  trailing space  \n  last"]


def test_one_line_folds_whitespace_and_marks_a_cut_with_an_ellipsis() -> None:
    """How every reason, note and log line quotes output (messages.one_line, 300 by default)."""
    from lean_mod_add_proof.grading.messages import REASON_MAX_CHARS, one_line

    assert REASON_MAX_CHARS == 300
    assert one_line("  a\n\tb   c \n") == "a b c"
    assert one_line("x" * 300) == "x" * 300  # exactly the limit: kept whole
    cut = one_line("x" * 301)
    assert cut == "x" * 299 + "…" and len(cut) == 300
    assert one_line("abcdef", limit=4) == "abc…"
    assert one_line("", limit=4) == ""
