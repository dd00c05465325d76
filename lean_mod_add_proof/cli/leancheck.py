"""Sub-command `lean-check` (`make lean-check` calls it): everything a machine with the pinned Lean
toolchain should run first, in one report, printed and written to one file (`--report PATH`,
default under the work root; `leancheck_report.py`). In order: `doctor`, the toolchain and its
manifest, the guard's token table against the toolchain's (`TokenTable.lean`; a difference is a
FAILED part here, but grading goes on), the self-test's canaries on every route and the
comparator's probe, the Lean integration tests (`pytest -m lean`, from a repository checkout
only: they are not in the wheel), one hard task (its Weights.lean built, its brute-force
reference graded under a raised limit to measure the kernel's rate, and the packed route's
UNVERIFIED draft tried, which counts for nothing), and `calibrate` on the smallest, a middle and
the largest grid task with the kernel rate it measured and that hard measurement added to its
fit; last, what to do about each part that failed.

Exit status: 0 when every part that ran passed (the summary names any part that did not run,
such as the integration tests outside a checkout); 3 when there is no toolchain (nothing was
checked) or the toolchain is the test double (every part runs, and the report says at its top
and in its summary that nothing was checked by Lean); 1 otherwise. Nothing here is faked: without
Lean it says so and checks nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from lean_mod_add_proof.cli.doctor import check_word
from lean_mod_add_proof.cli.exits import EXIT_NOT_JUDGED, EXIT_OK, EXIT_PROBLEM, EXIT_USAGE, print_error
from lean_mod_add_proof.cli.leancheck_report import (
    advice_lines,
    default_report_path,
    kernel_rate_line,
    toolchain_section,
)
from lean_mod_add_proof.cli.settings import add_grader_flags
from lean_mod_add_proof.grading.result import GraderSettings, flag_name
from lean_mod_add_proof.grading.token_canary import TokenTableReport
from lean_mod_add_proof.grading.toolchain import DOUBLE_BANNER, TOOLCHAIN_ENV

#: `--quiet`: the report quotes the commands' output, which the long steps' log lines would clutter
#: (`doctor --json` is parsed from it).
CLI = [sys.executable, "-m", "lean_mod_add_proof.cli", "--quiet"]
PASSED, FAILED, NOT_RUN = "passed", "FAILED", "not run"
#: Said at the top of a report made with the toolchain double, which must never pass for one of Lean.
DOUBLE_REPORT = (
    f"**{DOUBLE_BANNER}.** The toolchain found is the test double (tests/toolchain_double: scripts "
    "that act out what each test scripts and check no proof). Every part below ran on it: they show "
    "that the grader's machinery works here, nothing about Lean. Not a report to send to whoever "
    "maintains this grader; install Lean (`lean-mod-add-proof install-lean`) and run this again."
)
#: Where the Lean integration tests live in a checkout, relative to its root.
INTEGRATION_TESTS = Path("tests") / "test_lean_integration.py"


def run(argv: list[str], timeout: float, cwd: Path | None = None, env: dict | None = None) -> tuple[int, str]:
    try:
        done = subprocess.run(
            argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, env=env
        )
    except subprocess.TimeoutExpired:
        return 124, f"(timed out after {timeout:.0f} s)"
    return done.returncode, done.stdout + done.stderr


def three_tasks() -> list[str]:
    """The tasks of the seed's grid (`split all`) with the least, a middle and the most kernel
    work. Not the hard split: its reference proof is not expected to fit the time limit."""
    from lean_mod_add_proof.dataset.tasks import in_split, load_tasks

    grid = [r for r in load_tasks() if in_split(r.split, "all")]
    records = sorted(grid, key=lambda r: (r.kernel_mul_adds, r.id))
    return [records[0].id, records[len(records) // 2].id, records[-1].id]


def setting_flags(args: argparse.Namespace) -> list[str]:
    """The grader flags given to lean-check, passed on to each command it runs (pure)."""
    flags: list[str] = []
    for name, field in GraderSettings.model_fields.items():
        value = getattr(args, name, None)
        if value is None:
            continue
        flags += [flag_name(name)] if field.annotation is bool else [flag_name(name), str(value)]
    return flags


def find_checkout(start: Path) -> Path | None:
    """The repository checkout holding the integration tests: `start` or a parent (pure apart
    from looking at files)."""
    for root in (start, *start.parents):
        if (root / INTEGRATION_TESTS).is_file():
            return root
    return None


def canary_table(label: str, canaries: list[dict[str, object]]) -> list[str]:
    """One route's canaries: expected and actual verdict and the belief each tests (pure)."""
    lines = [f"### {label}", "", "| canary | expected | got | belief it tests |", "|---|---|---|---|"]
    for c in canaries:
        cells = [
            f"{'ok' if c['passed'] else 'FAILED'} {c['name']}",
            c["expected"],
            c["got"],
            c.get("belief", ""),
        ]
        lines.append("| " + " | ".join(str(x).replace("|", "\\|").replace("\n", " ") for x in cells) + " |")
    return [*lines, ""]


def selftest_every_route(args: argparse.Namespace, route_advice: dict[str, str]) -> tuple[str, list[str]]:
    """The canaries on every route, not only up to the first that passes as `doctor --selftest`
    does: a real machine's first report then says which belief is wrong on which route. Each
    route that did not pass puts what to do into `route_advice`."""
    import asyncio

    from lean_mod_add_proof.cli.settings import config_from_args
    from lean_mod_add_proof.dataset.tasks import NETWORK_LEAN_PATH
    from lean_mod_add_proof.grading import pipeline, toolchain
    from lean_mod_add_proof.grading.routes.comparator import probe_comparator, probe_report
    from lean_mod_add_proof.grading.selftest import route_outcome, run_selftest

    config = config_from_args(args)
    found = toolchain.locate_toolchain(config.toolchain_dir)
    if not isinstance(found, toolchain.Toolchain):
        return FAILED, [f"no toolchain: {found.reason}"]
    network = NETWORK_LEAN_PATH.read_text(encoding="utf-8")
    lines: list[str] = []
    passed: list[str] = []
    for route in pipeline.ROUTES["auto"]:  # every route there is
        try:
            report = asyncio.run(run_selftest(found, config, network, route))
        except Exception as exc:  # a report must come out, naming what broke
            lines += [f"### {route.label}", "", f"the self-test raised {type(exc).__name__}: {exc}", ""]
            route_advice[route.label] = "the grader itself failed (a defect of ours): send the report"
            continue
        lines += canary_table(route.label, report.model_dump(mode="json")["canaries"])
        if report.failed_checkers:  # kernels = all: by name, each checker whose row was wrong
            lines += [f"checkers that failed their self-test: {', '.join(report.failed_checkers)}", ""]
        outcome = route_outcome(report)
        said = f": {outcome['reason']}" if outcome["reason"] else ""
        lines += [f"outcome: {outcome['status']}{said}", ""]
        if report.passed:
            passed.append(route.label)
        else:
            route_advice[route.label] = f"{outcome['status']}: {outcome['advice']}"
    probe = probe_report(probe_comparator(found.dir))
    lines += ["### comparator probe (what `lake comparator` needs on this host)", ""]
    lines += [f"- {key}: {value}" for key, value in probe.items() if key != "advice"]
    lines.append("")
    if not probe["available"]:
        route_advice["comparator (probe)"] = str(probe["advice"])
    chosen = next((r.label for r in pipeline.ROUTES[config.judge] if r.label in passed), None)
    lines.append(
        f"routes that passed: {', '.join(passed) or 'none'}; `judge = {config.judge}` grades by: "
        f"{chosen or 'none (every grade could-not-judge)'}"
    )
    return (PASSED if chosen else FAILED), lines


def guard_token_table(args: argparse.Namespace) -> TokenTableReport:
    """The toolchain's token table held against the guard's (`grading/token_canary.py`)."""
    import asyncio

    from lean_mod_add_proof.cli.settings import config_from_args
    from lean_mod_add_proof.grading import toolchain
    from lean_mod_add_proof.grading.token_canary import not_checked, run_token_table

    config = config_from_args(args)
    found = toolchain.locate_toolchain(config.toolchain_dir)
    if not isinstance(found, toolchain.Toolchain):
        return not_checked(f"no toolchain: {found.reason}")
    return asyncio.run(run_token_table(found.dir, found.lean, work_root=config.work_root))


def lean_check(args: argparse.Namespace) -> tuple[int, list[str]]:
    """(exit code, report lines)."""
    started = time.time()
    flags = setting_flags(args)
    lines = ["# lean-mod-add-proof: `lean-mod-add-proof lean-check` report", ""]
    lines.append(f"- machine: {platform.platform()}, Python {platform.python_version()}")
    code, out = run([*CLI, "doctor", "--json", *flags], 120)
    try:
        doctor = json.loads(out[out.index("{") :])
    except ValueError:
        lines += ["", "**`doctor --json` printed no report:**", "```", out[-3000:], "```"]
        return EXIT_PROBLEM, lines
    if "error" in doctor:
        lines += ["", f"**doctor refused the settings:** {doctor['error']}"]
        return EXIT_USAGE, lines
    for check in doctor.get("checks", []):
        word = check_word(check["ok"], check.get("required", True))
        lines.append(f"- {check['name']}: {word} — {check['detail']}")
    if not any(c["name"] == "lean" for c in doctor.get("checks", [])):
        lines += [
            "",
            "**No Lean toolchain here: nothing was checked.** Install it with "
            "`lean-mod-add-proof install-lean` (`make lean` in a checkout), then run this again.",
        ]
        return EXIT_NOT_JUDGED, lines
    double = bool(doctor.get("toolchain_double"))
    if double:
        lines += ["", DOUBLE_REPORT]
    results: dict[str, str] = {}  # part -> passed / FAILED / not run

    lines += ["", "## Toolchain and its manifest (the files the grader trusts)", ""]
    lines += toolchain_lines(args)

    lines += ["", "## Guard token table (TokenTable.lean against the guard's lean_tokens.py)", ""]
    tokens = guard_token_table(args)
    lines.append(tokens.line)
    results["guard token table"] = PASSED if tokens.matches else FAILED

    lines += ["", "## Self-test (canaries through the real pipeline, on every route)", ""]
    route_advice: dict[str, str] = {}
    status, selftest_lines = selftest_every_route(args, route_advice)
    lines += selftest_lines
    results["self-test"] = status

    lines += ["", "## Lean integration tests", ""]
    checkout = args.checkout or find_checkout(Path.cwd())
    if checkout is None or not (checkout / INTEGRATION_TESTS).is_file():
        lines.append(
            f"not run: {INTEGRATION_TESTS} is not here (it ships with the repository, not the wheel); "
            "run `make lean-check` in a clone to include them"
        )
        results["integration tests"] = NOT_RUN
    else:
        env = dict(os.environ)
        if args.toolchain_dir is not None:  # the tests locate the toolchain themselves
            env[TOOLCHAIN_ENV] = str(Path(args.toolchain_dir).expanduser().absolute())
        argv = [sys.executable, "-m", "pytest", "-m", "lean", "-q", "-rs", "--no-header"]
        argv += ["-p", "no:cacheprovider", str(INTEGRATION_TESTS)]
        code, out = run(argv, 7200, cwd=checkout, env=env)
        lines += ["```", *out.strip().splitlines()[-40:], "```"]
        # pytest's 5: no test ran (all skipped at collection, e.g. the toolchain is the test double)
        results["integration tests"] = PASSED if code == 0 else (NOT_RUN if code == 5 else FAILED)

    with tempfile.TemporaryDirectory() as tmp:
        hard_results, hard_lines, hard_json = hard_task_check(args, flags, Path(tmp))
        lines += ["", "## One hard task (Weights.lean, the brute-force rate, the packed draft)", ""]
        lines += hard_lines
        results.update(hard_results)
        out_json = Path(tmp) / "timings.json"
        argv = [*CLI, "calibrate", "--out", str(out_json), *flags]
        if hard_json is not None:
            argv += ["--add-measurements", str(hard_json)]
        for task in three_tasks():
            argv += ["--task", task]
        code, out = run(argv, 7200)
        lines += ["", "## Calibration (reference proofs)", ""]
        if out_json.is_file():
            data = json.loads(out_json.read_text())
            lines.append(f"toolchain: {data['toolchain']}")
            lines.append("")
            lines.append("| task | kernel mul-adds | verdict | build s | replay s | total s | peak MiB |")
            lines.append("|---|---:|---|---:|---:|---:|---:|")
            for row in data["tasks"]:
                verdict = "accepted" if row["accepted"] else ("rejected" if row["judged"] else "not judged")
                lines.append(
                    f"| {row['task']} | {row['kernel_mul_adds']:,} | {verdict} | "
                    f"{row['stage_seconds'].get('build', 0):.1f} | {row['kernel_replay_seconds'] or 0:.1f} | "
                    f"{row['grader_seconds']:.1f} | {row['peak_memory_mb']} |"
                )
            lines += ["", kernel_rate_line(data["tasks"])]
        else:
            lines.append("```\n" + out[-3000:] + "\n```")
        results["calibration"] = PASSED if code == 0 else FAILED

    lines += ["", "## Summary", ""]
    if double:
        lines.append(f"- **{DOUBLE_BANNER}**: every part ran on the test double")
    lines += [f"- {name}: {status}" for name, status in results.items()]
    lines.append(f"- took {time.time() - started:.0f} s")
    counted = {part: status for part, status in results.items() if not part.endswith(INFORMATIONAL)}
    advice = advice_lines(counted, route_advice, FAILED)
    lines += ["", "## What to do", ""]
    lines += advice or ["- nothing: every part that ran passed"]
    if FAILED in counted.values():
        return EXIT_PROBLEM, lines
    return (EXIT_NOT_JUDGED if double else EXIT_OK), lines


#: lean-check's parts that report without counting towards its exit status.
INFORMATIONAL = "(informational)"


def grade_json(task: str, file: Path, timeout_s: float, flags: list[str]) -> tuple[dict | None, str]:
    """`grade TASK FILE --json` with a limit of `timeout_s`: (the GradeResult as JSON, or None,
    and the output when there is none)."""
    flags = [f for i, f in enumerate(flags) if f != "--timeout-s" and flags[i - 1 : i] != ["--timeout-s"]]
    argv = [*CLI, "grade", task, str(file), "--json", "--timeout-s", f"{timeout_s:g}", *flags]
    _code, out = run(argv, timeout_s + 600)
    try:  # stdout (the JSON) comes first, stderr's stage lines after it
        data, _end = json.JSONDecoder().raw_decode(out[out.index("{") :])
    except ValueError:
        return None, out[-3000:]
    return (data, "") if isinstance(data, dict) and "stage_seconds" in data else (None, out[-3000:])


def hard_task_check(
    args: argparse.Namespace, flags: list[str], tmp: Path
) -> tuple[dict[str, str], list[str], Path | None]:
    """Build the smallest hard task's Weights.lean (the long-list literal path the grid never
    takes), grade its brute-force reference under a raised limit and write that measurement where
    `calibrate --add-measurements` reads it, then try the packed route's draft on its own task under
    the task's shipped limit (informational: the draft is UNVERIFIED). (results, report lines, the
    measurement file or None)."""
    from lean_mod_add_proof.cli.calibrate import TIMED_STAGES
    from lean_mod_add_proof.constants import reference_submission
    from lean_mod_add_proof.dataset.cost import brute_force_estimate_s
    from lean_mod_add_proof.dataset.tasks import is_hard, load_tasks
    from lean_mod_add_proof.hard_route import DRAFT_PATH, DRAFT_TASK

    records = {r.id: r for r in load_tasks()}
    task = min((r for r in records.values() if is_hard(r.split)), key=lambda r: (r.kernel_mul_adds, r.id))
    results: dict[str, str] = {}
    code, out = run([*CLI, "warm-cache", "--task", task.id, *flags], 3600)
    results[f"hard Weights.lean ({task.id})"] = PASSED if code == 0 else FAILED
    lines = [f"`warm-cache --task {task.id}` (builds its Weights.lean): exit {code}", "```"]
    lines += [*out.strip().splitlines()[-12:], "```", ""]
    measurement: Path | None = None
    if getattr(args, "skip_hard_reference", False):
        lines.append("brute-force reference: not run (--skip-hard-reference)")
        results["hard reference"] = NOT_RUN
    elif code == 0:
        # Raised far above the task's own limit: brute force is expected to need hours.
        limit = getattr(args, "hard_timeout_s", None) or 2 * brute_force_estimate_s(task.kernel_mul_adds)[1]
        reference = tmp / "Reference.lean"
        reference.write_text(reference_submission(task.p), encoding="utf-8")
        data, raw = grade_json(task.id, reference, limit, flags)
        if data is None:
            lines += ["brute-force reference: `grade --json` printed no result:", "```", raw, "```"]
            results["hard reference"] = FAILED
        else:
            checked = sum(data["stage_seconds"].get(s, 0.0) for s in TIMED_STAGES)
            verdict = "accepted" if data["accepted"] else ("rejected" if data["judged"] else "not judged")
            lines.append(
                f"brute-force reference under a {limit:.0f} s limit: {verdict} after {checked:.0f} s "
                f"({task.kernel_mul_adds:,} Int multiply-adds: {checked / task.kernel_mul_adds * 1e6:.3g} µs "
                f"each; the task's own limit is {task.timeout_s:g} s), peak {data['peak_memory_mb']} MiB"
                + ("" if data["accepted"] else f"; {data['reason']}")
            )
            results["hard reference"] = PASSED if data["accepted"] else FAILED
            if data["accepted"]:
                measurement = tmp / "hard-reference.json"
                row = {"task": task.id, "kernel_mul_adds": task.kernel_mul_adds, "accepted": True}
                row |= {"checked_seconds": checked, "stage_seconds": data["stage_seconds"]}
                measurement.write_text(json.dumps({"tasks": [row]}) + "\n", encoding="utf-8")
    draft_task = records[DRAFT_TASK]
    data, raw = grade_json(DRAFT_TASK, DRAFT_PATH, draft_task.timeout_s or 300.0, flags)
    if data is None:
        lines += ["", "packed draft: `grade --json` printed no result:", "```", raw, "```"]
        results[f"packed draft {INFORMATIONAL}"] = FAILED
    else:
        word = "ACCEPTED" if data["accepted"] else ("rejected" if data["judged"] else "not judged")
        stages = ", ".join(f"{k} {v:.1f} s" for k, v in data["stage_seconds"].items())
        lines += [
            "",
            f"packed draft (UNVERIFIED, {DRAFT_PATH.name}) on {DRAFT_TASK} under its "
            f"{draft_task.timeout_s:g} s limit: {word}"
            + ("" if data["accepted"] else f" at {data['failed_stage']}: {data['reason']}"),
            f"stages: {stages}; peak {data['peak_memory_mb']} MiB",
        ]
        if data.get("lean_errors"):
            lines += ["```", *[str(e) for e in data["lean_errors"][:10]], "```"]
        results[f"packed draft {INFORMATIONAL}"] = PASSED if data["accepted"] else FAILED
    return results, lines, measurement


def toolchain_lines(args: argparse.Namespace) -> list[str]:
    """The located toolchain and its manifest, every watched file hashed (a few seconds)."""
    from lean_mod_add_proof.cli.settings import config_from_args
    from lean_mod_add_proof.grading import toolchain, toolchain_manifest

    found = toolchain.locate_toolchain(config_from_args(args).toolchain_dir)
    if not isinstance(found, toolchain.Toolchain):
        return [f"no toolchain: {found.reason}"]
    try:
        manifest = toolchain_manifest.record(found.dir, found.version)
    except OSError as exc:
        return [f"- toolchain: {found.version}", f"- manifest: could not be read: {exc}"]
    return toolchain_section(found.version, manifest)


def cmd_lean_check(args: argparse.Namespace) -> int:
    code, lines = lean_check(args)
    text = "\n".join(lines)
    print(text)
    work_root = Path(args.work_root).expanduser() if getattr(args, "work_root", None) else None
    path = args.report or default_report_path(work_root, datetime.now(UTC))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        print_error(f"lean-check: --report {path}: could not write the report: {exc.strerror or exc}")
        return EXIT_PROBLEM
    if DOUBLE_REPORT in lines:  # made on the double: it says nothing about Lean, so it is not sent
        print(f"\nThe report is in {path}. It was made on the test double, so it is not one to send:")
        print("install Lean (`lean-mod-add-proof install-lean`) and run `lean-check` again.")
        return code
    print(f"\nThe report is in {path}. Send it to whoever maintains this copy of the grader (there is no")
    print("public issue tracker); the section 'What to do' above says what each failure asks of you.")
    return code


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "lean-check",
        help="on a machine with Lean: doctor, the self-test, the Lean integration tests and calibration, "
        "as one report",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--checkout",
        type=Path,
        default=None,
        help="the repository checkout whose tests/test_lean_integration.py to run "
        "(default: the current directory or a parent)",
    )
    p.add_argument(
        "--report",
        type=Path,
        default=None,
        help="write the report to this file (default: lean-check-<UTC time>.md under the work root)",
    )
    p.add_argument(
        "--skip-hard-reference",
        action="store_true",
        help="build the hard task's Weights.lean but do not grade its brute-force reference (hours)",
    )
    p.add_argument(
        "--hard-timeout-s",
        type=float,
        default=None,
        help="the raised limit for the hard brute-force reference (default: twice its slowest estimate)",
    )
    add_grader_flags(p)
    p.set_defaults(handler=cmd_lean_check)
