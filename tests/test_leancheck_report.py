"""The pure parts of lean-check's report (issue 37): where it goes, the toolchain's manifest, the
measured kernel rate, and what to do about each failure."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from lean_mod_add_proof.cli.leancheck_report import (
    DEFAULT_ADVICE,
    PART_ADVICE,
    advice_lines,
    default_report_path,
    kernel_rate_line,
    manifest_digest,
    toolchain_section,
)
from lean_mod_add_proof.grading.toolchain_manifest import FileEntry, Manifest

NOW = datetime(2026, 12, 6, 9, 30, 5, tzinfo=UTC)


def _manifest(files: dict[str, str]) -> Manifest:
    entries = {
        rel: FileEntry(size=len(h), mtime_ns=1, inode=i, sha256=h, ctime_ns=1)
        for i, (rel, h) in enumerate(files.items())
    }
    return Manifest(toolchain_dir="/tc", version="v4.35.0-rc2", files=entries)


def test_the_default_report_lies_under_the_work_root_or_the_temp_dir(tmp_path: Path) -> None:
    assert default_report_path(tmp_path, NOW) == tmp_path / "lean-check-20261206T093005Z.md"
    assert default_report_path(None, NOW).name == "lean-check-20261206T093005Z.md"
    assert default_report_path(None, NOW).parent != tmp_path


def test_the_manifest_digest_depends_on_every_path_and_hash_but_not_their_order() -> None:
    a = _manifest({"bin/lean": "aa", "lib/lean/Init.olean": "bb"})
    b = _manifest({"lib/lean/Init.olean": "bb", "bin/lean": "aa"})
    assert manifest_digest(a) == manifest_digest(b)
    assert manifest_digest(a) != manifest_digest(_manifest({"bin/lean": "aa", "lib/lean/Init.olean": "bc"}))
    assert manifest_digest(a) != manifest_digest(_manifest({"bin/lean": "aa", "lib/lean/Init.oleam": "bb"}))


def test_the_toolchain_section_sums_folders_and_lists_each_program() -> None:
    m = _manifest(
        {"bin/lean": "a" * 64, "bin/lake": "b" * 64, "lib/lean/Init.olean": "cc", "lib/lean/x": "d"}
    )
    lines = toolchain_section("Lean (leanprover/lean4:v4.35.0-rc2)", m)
    text = "\n".join(lines)
    assert "- toolchain: Lean (leanprover/lean4:v4.35.0-rc2)" in lines
    assert f"- manifest: 4 files; sha256 over (path, sha256): {manifest_digest(m)}" in lines
    assert "  - bin/: 2 files, 128 bytes" in lines and "  - lib/lean/: 2 files, 3 bytes" in lines
    assert f"| bin/lake | 64 | {'b' * 64} |" in lines and f"| bin/lean | 64 | {'a' * 64} |" in lines
    assert text.index("bin/lake |") < text.index("bin/lean |")
    assert "Init.olean |" not in text  # only programs are listed one by one


def test_the_kernel_rate_is_fitted_over_accepted_reference_proofs_only() -> None:
    rows = [
        {"task": "a", "kernel_mul_adds": 1_000_000, "checked_seconds": 1.5, "accepted": True},
        {"task": "b", "kernel_mul_adds": 3_000_000, "checked_seconds": 2.5, "accepted": True},
        {"task": "c", "kernel_mul_adds": 9_000_000, "checked_seconds": 0.1, "accepted": False},
    ]
    line = kernel_rate_line(rows)
    assert line.startswith("measured kernel rate: 0.5 µs per Int multiply-add (+ 1.00 s a grade, fit over 2")
    assert "the model plans with 75-340 µs per kernel operation: the cited 150-170 µs" in line
    none = kernel_rate_line(rows[2:])
    assert none.startswith("measured kernel rate: none (no reference proof was accepted)")


def test_what_to_do_names_each_failed_part_and_route_and_nothing_else() -> None:
    results = {
        "self-test": "passed",
        "calibration": "FAILED",
        "integration tests": "not run",
        "odd": "FAILED",
    }
    lines = advice_lines(results, {"replay (export)": "unavailable: build leanc"}, "FAILED")
    assert lines == [
        "- route replay (export): unavailable: build leanc",
        f"- calibration: {PART_ADVICE['calibration']}",
        f"- odd: {DEFAULT_ADVICE}",
    ]
    assert advice_lines({"self-test": "passed"}, {}, "FAILED") == []
