"""Reading the messages `lean --json` (and plain `lean`) prints."""

from __future__ import annotations

import json

from lean_mod_add_proof.grading.messages import error_messages


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
