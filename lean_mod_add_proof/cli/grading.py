"""Sub-commands: `guard FILE`, `grade TASK_ID FILE`, `doctor` (can this machine grade for real?)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lean_mod_add_proof.dataset.tasks import DEFAULT_TASKS_DIR

EXIT_OK, EXIT_REJECTED, EXIT_USAGE = 0, 1, 2


def _read_utf8(path: Path) -> str:
    """The file as text; raises ValueError with a one-line message for I/O and encoding errors."""
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not UTF-8 (byte {exc.start})") from None


# ---- guard -------------------------------------------------------------------------------------


def cmd_guard(args: argparse.Namespace) -> int:
    from lean_mod_add_proof.grading.guard import check_guard

    try:
        text = _read_utf8(args.file)
    except ValueError as exc:
        print(f"guard: {exc}", file=sys.stderr)
        return EXIT_USAGE
    verdict = check_guard(text)
    if args.json:
        print(
            json.dumps(
                {
                    "passed": verdict.passed,
                    "reason": verdict.reason,
                    "word": verdict.word,
                    "line": verdict.line,
                }
            )
        )
    elif verdict.passed:
        print(f"guard: {args.file}: passed")
    else:
        where = f" (line {verdict.line})" if verdict.line is not None else ""
        print(f"guard: {args.file}{where}: {verdict.reason}", file=sys.stderr)
    return EXIT_OK if verdict.passed else EXIT_REJECTED


# ---- grade -------------------------------------------------------------------------------------


_STAGE_TEXT = {
    "guard": "text guard",
    "toolchain": "locating the Lean toolchain",
    "build": "lake build LeanCheckedNetwork.Submission",
    "leanchecker": "lake env leanchecker LeanCheckedNetwork.Submission (kernel replay)",
    "statement": "lake env lean --json Check.lean (statement check)",
    "axioms": "#print axioms (allow-list)",
}


def cmd_grade(args: argparse.Namespace) -> int:
    from rich.console import Console

    from lean_mod_add_proof.dataset.tasks import TaskSetError, find_task, weights_path
    from lean_mod_add_proof.grading.pipeline import grade
    from lean_mod_add_proof.grading.result import GraderConfig

    err = Console(stderr=True)
    try:
        task = find_task(args.task_id, args.tasks_dir)
        weights = _read_utf8(weights_path(args.tasks_dir, task.id))
        submission = _read_utf8(args.file)
    except (TaskSetError, ValueError) as exc:
        err.print(f"[red]grade:[/] {exc}", highlight=False)
        if isinstance(exc, TaskSetError) and "unknown task id" in str(exc):
            err.print("List the task ids with `lean-mod-add-proof tasks`.")
        return EXIT_USAGE
    overrides: dict[str, Any] = {
        "axioms_mode": args.axioms_mode,
        "keep_packages": args.keep_package,
        "sandbox": args.sandbox,
    }
    for name in ("timeout_s", "work_root", "memory_mb"):
        if getattr(args, name) is not None:
            overrides[name] = getattr(args, name)
    try:
        config = GraderConfig(**overrides)
    except ValueError as exc:
        err.print(f"[red]grade:[/] bad option: {exc}", highlight=False)
        return EXIT_USAGE

    console = Console(stderr=args.json)  # with --json, stdout carries only the JSON

    def on_stage(stage: str) -> None:
        console.print(f"[cyan]→ {stage}[/]: {_STAGE_TEXT.get(stage, stage)}", highlight=False)

    result = asyncio.run(grade(submission, task, weights, config, on_stage=on_stage))
    if args.json:
        print(json.dumps(result.model_dump(mode="json"), indent=2))
    else:
        for rec in result.commands:
            code = "killed" if rec.exit_code is None else f"exit {rec.exit_code}"
            console.print(f"  [dim]{' '.join(rec.argv)}: {code}, {rec.seconds:.2f} s[/]", highlight=False)
        if not result.accepted and result.commands and result.commands[-1].output_tail.strip():
            console.print("[dim]--- output tail of the last command ---[/]")
            console.print(result.commands[-1].output_tail[-2000:], markup=False, highlight=False)
        colour = "green" if result.accepted else "red"
        verdict = (
            "ACCEPTED (reward 1.0)" if result.accepted else f"REJECTED at {result.failed_stage} (reward 0.0)"
        )
        console.print(f"[bold {colour}]{verdict}[/]: {result.reason}", highlight=False)
        console.print(
            f"[dim]grader time {result.grader_seconds:.2f} s, sandboxed={result.sandboxed}, "
            f"cache={result.cache}[/]",
            highlight=False,
        )
        if result.package_dir:
            console.print(f"package kept at {result.package_dir}", highlight=False)
    return EXIT_OK if result.accepted else EXIT_REJECTED


# ---- doctor ------------------------------------------------------------------------------------


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True


def _version_of(binary: Path, flag: str = "--version") -> str:
    try:
        done = subprocess.run(
            [str(binary), flag],
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
            env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"},
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"({type(exc).__name__})"
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0] if lines else f"(exit {done.returncode})"


def doctor_checks(cache_dir: Path | None = None) -> list[Check]:
    from lean_mod_add_proof.grading import package, process, sandbox, toolchain
    from lean_mod_add_proof.grading.toolchain import ELAN_FIX, INSTALL_FIX

    checks: list[Check] = []
    elan = toolchain.elan_home() / "bin" / "elan"
    elan_path = str(elan) if elan.is_file() else shutil.which("elan")
    checks.append(
        Check(
            "elan",
            elan_path is not None,
            f"{elan_path}: {_version_of(Path(elan_path))}" if elan_path else "not found",
            f"`{INSTALL_FIX}`",
            required=False,  # the grader calls the toolchain's binaries directly
        )
    )
    found = toolchain.locate_toolchain()
    if isinstance(found, toolchain.Toolchain):
        checks.append(Check("lean", True, f"{found.lean}: {found.version}"))
        checks.append(Check("lake", True, f"{found.lake}: {_version_of(found.lake)}"))
        checks.append(Check("leanchecker", found.leanchecker.is_file(), str(found.leanchecker)))
        checks.append(Check("toolchain dir", True, f"{found.dir} (found via {found.source})"))
    else:
        checks.append(Check("Lean toolchain", False, found.reason, f"`{INSTALL_FIX}` or `{ELAN_FIX}`"))
    probe = sandbox.probe_sandbox(refresh=True)
    checks.append(
        Check(
            "sandbox (bwrap)",
            probe.available,
            probe.reason,
            "install bubblewrap (`apt-get install bubblewrap`) and allow unprivileged user namespaces; "
            "or grade with --sandbox off (not recommended for untrusted submissions)",
        )
    )
    prlimit = process.find_prlimit()
    checks.append(
        Check(
            "prlimit",
            prlimit is not None,
            prlimit or "not found",
            "install util-linux (`apt-get install util-linux`)",
        )
    )
    root = (cache_dir or package.DEFAULT_CACHE_DIR).expanduser()
    try:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        writable = os.access(root, os.W_OK)
        detail = str(root) if writable else f"{root} is not writable"
    except OSError as exc:
        writable, detail = False, f"{root}: {exc.strerror or exc}"
    checks.append(
        Check(
            "cache dir",
            writable,
            detail,
            "set GraderConfig.cache_dir to a writable directory",
            required=False,
        )
    )  # without it each grade prebuilds Network/Weights itself
    return checks


def cmd_doctor(args: argparse.Namespace) -> int:
    checks = doctor_checks()
    ready = all(c.ok for c in checks if c.required)
    if args.json:
        print(json.dumps({"ready": ready, "checks": [c.__dict__ for c in checks]}, indent=2))
        return EXIT_OK if ready else EXIT_REJECTED
    from rich.console import Console
    from rich.table import Table

    table = Table(title="lean-mod-add-proof grader: can this machine grade for real?")
    for column in ("check", "ok", "detail", "fix"):
        table.add_column(column, overflow="fold")
    for c in checks:
        mark = "[green]yes[/]" if c.ok else ("[red]NO[/]" if c.required else "[yellow]no[/]")
        table.add_row(c.name, mark, c.detail, "" if c.ok else c.fix)
    console = Console()
    console.print(table)
    if ready:
        # Say which toolchain is ready: a test double passes these checks too, and it is not Lean.
        lean = next((c.detail for c in checks if c.name == "lean"), "the located toolchain")
        console.print(f"[bold green]Ready:[/] the grader can run here with {lean}.")
    else:
        console.print("[bold red]Not ready:[/] every grade scores 0.0 until the items marked NO are fixed.")
    return EXIT_OK if ready else EXIT_REJECTED


def register(commands: argparse._SubParsersAction) -> None:
    """Add this module's sub-commands."""
    p = commands.add_parser(
        "guard",
        help="run the text guard on a Submission.lean file",
        description="Exit 0: passed; 1: rejected; 2: the file cannot be read.",
    )
    p.add_argument("file", type=Path)
    p.add_argument("--json", action="store_true", help="print the verdict as JSON on stdout")
    p.set_defaults(handler=cmd_guard)

    p = commands.add_parser(
        "grade",
        help="grade a Submission.lean for one task with the real pipeline",
        description="Exit 0: accepted; 1: rejected; 2: usage error (unknown task, unreadable file).",
    )
    p.add_argument("task_id")
    p.add_argument("file", type=Path)
    p.add_argument("--timeout-s", type=float, default=None, help="limit for build, replay and check together")
    p.add_argument("--axioms-mode", choices=("subset", "exact"), default="subset")
    p.add_argument("--work-root", type=Path, default=None, help="where the throwaway package is made")
    p.add_argument("--keep-package", action="store_true", help="keep the package directory for inspection")
    p.add_argument("--memory-mb", type=int, default=None, help="address-space cap per Lean process")
    p.add_argument("--sandbox", choices=("auto", "on", "off"), default="auto")
    p.add_argument("--tasks-dir", type=Path, default=DEFAULT_TASKS_DIR)
    p.add_argument("--json", action="store_true", help="print the full GradeResult as JSON on stdout")
    p.set_defaults(handler=cmd_grade)

    p = commands.add_parser(
        "doctor",
        help="check the toolchain, sandbox, limits and cache the grader needs",
        description="Exit 0 only if the grader can run Lean for real on this machine.",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_doctor)
