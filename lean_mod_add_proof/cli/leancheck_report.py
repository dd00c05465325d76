"""Where `lean-check`'s report goes and what its reader does next (issue 37: a first-contact report
that goes somewhere).

The report is one Markdown file (`--report PATH`; by default `lean-check-<UTC time>.md` under the
grader's work root, the system temp directory unless `--work-root` says otherwise). It holds the
toolchain and its manifest, every route's canaries and the comparator's probe, the other parts'
results and the measured kernel rate. This module holds the pure parts: the default path, the
toolchain's section, the measured rate's line, and the advice for each kind of failure; the
command (`leancheck.py`) runs the parts and writes the file.

There is no public issue tracker (pyproject.toml names no project URL): the report is for whoever
maintains the copy of the grader being run, and the README says so.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

from lean_mod_add_proof.dataset.cost import CITED_RATE_SOURCE, PLAUSIBLE_RATES, fit_rate
from lean_mod_add_proof.grading.toolchain_manifest import Manifest

REPORT_PREFIX = "lean-check-"

#: What to do when a part failed, by part (the route and probe parts carry their own advice, from
#: `selftest.route_outcome` and `probe_report`).
PART_ADVICE: dict[str, str] = {
    "self-test": (
        "no route passed its self-test, so every grade is could-not-judge: read each route's canary "
        "table above; a host fault (bwrap, disk, memory) is fixed on the host, a wrong belief about "
        "the toolchain means stop grading with this toolchain and send the report"
    ),
    "integration tests": (
        "a Lean integration test failed: the grader's belief about this toolchain that the test names "
        "is wrong; grade only by a route whose self-test passed, and send the report"
    ),
    "calibration": (
        "a reference proof did not pass under the default limits: its row says whether it was "
        "rejected (a wrong belief: stop and send the report) or not judged (a host fault or a limit "
        "too small for this machine: `calibrate --timeouts-out` sets per-task limits)"
    ),
    "guard token table": (
        "the toolchain's token table differs from the guard's: grading goes on (the statement and axiom "
        "checks do not read tokens), but the guard may misread a submission; send the report"
    ),
}
#: When a part failed that has no advice of its own.
DEFAULT_ADVICE = "read the part's section above; send the report if the cause is not this machine's"


def default_report_path(work_root: Path | None, now: datetime) -> Path:
    """`lean-check-<UTC time>.md` under the work root, or the system temp directory (pure apart
    from reading the temp directory's name)."""
    root = work_root if work_root is not None else Path(tempfile.gettempdir())
    return root / f"{REPORT_PREFIX}{now.strftime('%Y%m%dT%H%M%SZ')}.md"


def manifest_digest(manifest: Manifest) -> str:
    """One sha256 over every watched file's path and content hash, sorted (pure): two machines
    with the same toolchain files print the same digest."""
    h = hashlib.sha256()
    for rel in sorted(manifest.files):
        h.update(f"{rel}\0{manifest.files[rel].sha256}\n".encode())
    return h.hexdigest()


def toolchain_section(label: str, manifest: Manifest) -> list[str]:
    """The toolchain and its manifest (pure): the files the grader trusts, summed up by folder,
    the digest over them all, and each program under `bin/` by its hash."""
    by_top: dict[str, tuple[int, int]] = {}
    for rel, entry in manifest.files.items():
        top = "/".join(Path(rel).parts[:2]) if rel.startswith("lib/") else Path(rel).parts[0]
        count, size = by_top.get(top, (0, 0))
        by_top[top] = (count + 1, size + entry.size)
    lines = [
        f"- toolchain: {label}",
        f"- directory: {manifest.toolchain_dir}",
        f"- version: {manifest.version}",
        f"- manifest: {len(manifest.files)} files; sha256 over (path, sha256): {manifest_digest(manifest)}",
    ]
    lines += [f"  - {top}/: {count} files, {size:,} bytes" for top, (count, size) in sorted(by_top.items())]
    lines += ["", "| program | bytes | sha256 |", "|---|---:|---|"]
    for rel in sorted(r for r in manifest.files if r.startswith("bin/")):
        entry = manifest.files[rel]
        lines.append(f"| {rel} | {entry.size:,} | {entry.sha256} |")
    return lines


def kernel_rate_line(rows: Sequence[Mapping[str, object]]) -> str:
    """The kernel's rate measured by calibration's accepted reference proofs, beside the rate the
    cost model plans with (pure)."""
    points = [
        (int(str(r["kernel_mul_adds"])), float(str(r["checked_seconds"])))
        for r in rows
        if r.get("accepted") and "checked_seconds" in r
    ]
    planned = f"{PLAUSIBLE_RATES.source} ({CITED_RATE_SOURCE})"
    if not points:
        return f"measured kernel rate: none (no reference proof was accepted); the model plans with {planned}"
    fit = fit_rate(points)
    return (
        f"measured kernel rate: {fit.seconds_per_mul_add * 1e6:.3g} µs per Int multiply-add "
        f"(+ {fit.intercept_s:.2f} s a grade, fit over {fit.n_tasks} task(s)); the model plans with {planned}"
    )


def advice_lines(results: Mapping[str, str], route_advice: Mapping[str, str], failed: str) -> list[str]:
    """What to do, one line per part that failed (`failed` is the FAILED word) and per route whose
    self-test did not pass (pure). Empty when nothing failed."""
    lines = [f"- route {route}: {advice}" for route, advice in route_advice.items()]
    for part, status in results.items():
        if status == failed:
            lines.append(f"- {part}: {PART_ADVICE.get(part, DEFAULT_ADVICE)}")
    return lines
