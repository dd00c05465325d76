"""`make lean-check`: everything a machine with the pinned Lean toolchain should run first, in one
report to paste into an issue. In order: `doctor`, the self-test's canaries, the Lean integration
tests (`pytest -m lean`), and `calibrate` on the smallest, a middle and the largest task.

Exit status: 0 when every part passed; 3 when there is no toolchain (nothing was checked); 1
otherwise. Nothing here is faked: without Lean every part says it could not run.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "lean_mod_add_proof.cli"]


def run(argv: list[str], timeout: float) -> tuple[int, str]:
    try:
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, f"(timed out after {timeout:.0f} s)"
    return done.returncode, done.stdout + done.stderr


def three_tasks() -> list[str]:
    """The tasks with the least, a middle and the most kernel work."""
    from lean_mod_add_proof.dataset.tasks import load_tasks

    records = sorted(load_tasks(), key=lambda r: (r.kernel_mul_adds, r.id))
    return [records[0].id, records[len(records) // 2].id, records[-1].id]


def main() -> int:
    started = time.time()
    lines = ["# lean-mod-add-proof: `make lean-check` report", ""]
    lines.append(f"- machine: {platform.platform()}, Python {platform.python_version()}")
    code, out = run([*CLI, "doctor", "--json"], 120)
    doctor = json.loads(out[out.index("{") :]) if "{" in out else {"ready": False, "checks": []}
    for check in doctor["checks"]:
        lines.append(f"- {check['name']}: {'ok' if check['ok'] else 'NO'} — {check['detail']}")
    if not any(c["name"] == "lean" for c in doctor["checks"]):
        lines += ["", "**No Lean toolchain here: nothing was checked.** Run `make lean` first."]
        print("\n".join(lines))
        return 3
    results: dict[str, bool] = {}

    code, out = run([*CLI, "doctor", "--selftest", "--json"], 3600)
    lines += ["", "## Self-test (canaries through the real pipeline)", ""]
    try:
        report = json.loads(out[out.index("{") :])
        for c in report["canaries"]:
            lines.append(
                f"- {'ok' if c['passed'] else 'FAILED'} {c['name']}: expected {c['expected']}; got {c['got']}"
            )
        results["self-test"] = bool(report["passed"])
    except ValueError:
        lines.append("```\n" + out[-3000:] + "\n```")
        results["self-test"] = False

    code, out = run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-m",
            "lean",
            "-q",
            "-rs",
            "--no-header",
            "-p",
            "no:cacheprovider",
            "tests/test_lean_integration.py",
        ],
        7200,
    )
    lines += ["", "## Lean integration tests", "", "```", *out.strip().splitlines()[-40:], "```"]
    results["integration tests"] = code == 0

    with tempfile.TemporaryDirectory() as tmp:
        out_json = Path(tmp) / "timings.json"
        argv = [*CLI, "calibrate", "--out", str(out_json)]
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
        else:
            lines.append("```\n" + out[-3000:] + "\n```")
        results["calibration"] = code == 0

    lines += ["", "## Summary", ""]
    lines += [f"- {name}: {'passed' if ok else 'FAILED'}" for name, ok in results.items()]
    lines.append(f"- took {time.time() - started:.0f} s")
    print("\n".join(lines))
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
