"""`make demo`: a real `vf-eval lean-mod-add-proof` run against the local baseline server.

It starts `serve-baseline` (reference policy) on a free 127.0.0.1 port, runs vf-eval on three
small training tasks with the taskset's default env (null harness, subprocess runtime), then
prints one row per rollout from traces.jsonl and stops the server. The run uses the taskset's
default `on_grader_error=raise`, as training does: without a Lean toolchain vf-eval records each
rollout as errored (`GraderUnavailable`, reason in `traces[i].errors[j].message`, no reward), which
is what the README promises (a host fault is never a 0.0). The table then shows reward "—", as
the traces have it (`"kernel_accepts": null`), and the demo says how to install Lean. vf-eval's own
log line still prints `reward=0.000 ... stop=GraderUnavailable` for such a rollout: verifiers sums
the rewards that were scored (none), and `stop=` names the error (docs/operations.md). (`zero`
would record 0.0 in the traces too, a number that reads as a rejection.)

Exit status: 0 when vf-eval ran and wrote traces (whatever the rewards), non-zero otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from lean_mod_add_proof.cli import output
from lean_mod_add_proof.cli.baseline import running_server
from lean_mod_add_proof.cli.exits import EXIT_INTERRUPTED, INTERRUPTED_LINE
from lean_mod_add_proof.constants import TASKSET_ID
from lean_mod_add_proof.grading.toolchain import DOUBLE_BANNER

API_KEY_VAR = "LEAN_MOD_ADD_PROOF_BASELINE_KEY"
STAGES = ("guard_passed", "build_passed", "leanchecker_passed", "statement_passed", "axioms_passed")
NOT_JUDGED = "could not judge"

#: Rich on a terminal; off one, lines that nothing wraps (cli/output.py).
console = output.console()


def vf_eval_binary() -> str:
    """vf-eval next to this interpreter (the venv's), else the first on PATH."""
    local = Path(sys.executable).with_name("vf-eval")
    if local.is_file():
        return str(local)
    found = shutil.which("vf-eval")
    if found is None:
        raise FileNotFoundError("vf-eval not found: run `make setup` (it installs verifiers into .venv)")
    return found


def child_env() -> dict[str, str]:
    """The environment for vf-eval: this venv's bin first on PATH (the null harness needs `uv`)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env[API_KEY_VAR] = "sk-local-baseline"
    return env


def vf_eval_argv(
    base_url: str,
    output_dir: Path,
    run_name: str,
    *,
    n: int = 3,
    max_p: int = 7,
    model: str = "baseline-reference",
    rich: bool = False,
    on_grader_error: str = "raise",
    extra: Sequence[str] = (),
) -> list[str]:
    argv = [
        vf_eval_binary(),
        TASKSET_ID,
        "-n",
        str(n),
        "--env.taskset.split",
        "train",
        "--env.taskset.max-p",
        str(max_p),
        "--no-push",
        "-o",
        str(output_dir),
        "--run.name",
        run_name,
        "--client.base-url",
        base_url,
        "--client.api-key-var",
        API_KEY_VAR,
        "-m",
        model,
        # A demo shows every row: a grade without a verdict scores 0.0 here instead of erroring
        # the rollout (the taskset's default, `raise`, is what training runs want).
        "--env.taskset.task.on-grader-error",
        on_grader_error,
    ]
    if not rich:
        argv.append("--no-rich")
    return [*argv, *extra]


def read_traces(path: Path) -> list[dict[str, Any]]:
    """Every trace of every episode in a traces.jsonl file."""
    traces: list[dict[str, Any]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            episode = json.loads(line)
            traces.extend(episode.get("traces") or [])
    return traces


def trace_row(trace: dict[str, Any]) -> dict[str, Any]:
    """What the demo shows for one rollout."""
    task = (trace.get("task") or {}).get("data") or {}
    reward = (trace.get("rewards") or {}).get("kernel_accepts") or {}
    metrics = trace.get("metrics") or {}
    grade = (trace.get("info") or {}).get("lean_grader") or {}
    errors = trace.get("errors") or []
    return {
        "task": task.get("id") or (trace.get("task") or {}).get("key", "?"),
        "reward": reward.get("score"),
        "stages": {s: metrics.get(f"lean_stages/{s}") for s in STAGES},
        "judged": metrics.get("lean_stages/judged"),
        "seconds": metrics.get("lean_stages/grader_seconds"),
        "reason": grade.get("reason") or (errors[-1].get("message") if errors else "no grade recorded"),
        "ok": bool(trace.get("ok")),
        "double": bool(grade.get("toolchain_double")),
    }


#: What the table shows where there is no value: no grade, or a grade that reached no verdict.
NO_VALUE = "—"


def _flag(value: float | None) -> str:
    return NO_VALUE if value is None else ("[green]✓[/]" if value >= 1.0 else "[red]✗[/]")


def table_cells(row: dict[str, Any]) -> list[str]:
    """reward, judged, the five stages and grader seconds as the table shows them. A rollout that
    was not judged shows "—" for its reward and stages, never a 0.0 and ✗ that read as a wrong
    proof (pure)."""
    judged = row["judged"]
    unjudged = judged is not None and judged < 1.0
    reward = NO_VALUE if row["reward"] is None or unjudged else f"{row['reward']:.1f}"
    stages = [NO_VALUE if unjudged else _flag(row["stages"][s]) for s in STAGES]
    seconds = NO_VALUE if row["seconds"] is None else f"{row['seconds']:.2f}"
    return [reward, _flag(judged), *stages, seconds]


def results_table(rows: list[dict[str, Any]]) -> Table:
    title = "lean-mod-add-proof demo: one row per rollout"
    if any(r.get("double") for r in rows):
        title += f" ({DOUBLE_BANNER})"
    table = Table(title=title)
    table.add_column("#", justify="right")
    # Never cut a task id (issue 29: at 80 columns it read `p05_…`); other columns give way.
    table.add_column("task", no_wrap=True, min_width=max((len(r["task"]) for r in rows), default=4))
    table.add_column("reward", justify="right")
    table.add_column("judged", justify="center")
    for stage in STAGES:
        table.add_column(stage.removesuffix("_passed"), justify="center")
    table.add_column("grader s", justify="right")
    for i, row in enumerate(rows, start=1):
        table.add_row(str(i), row["task"], *table_cells(row))
    return table


def broken_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rollouts that errored for another reason than "could not judge", which is the expected
    outcome without Lean under on_grader_error=raise (pure)."""
    return [r for r in rows if not r["ok"] and not (r["reason"] or "").startswith(NOT_JUDGED)]


def print_reasons(rows: list[dict[str, Any]]) -> None:
    """The grader's one-line reason per rollout (trace.info["lean_grader"]["reason"])."""
    console.print("[bold]Grader's reason per rollout[/] (trace.info['lean_grader']['reason']):")
    for i, row in enumerate(rows, start=1):
        prefix = "" if row["ok"] else "[red]trace error:[/] "
        console.print(f"  {i}. {row['task']}: {prefix}", end="")
        console.print(row["reason"], markup=False, highlight=False)


def explain(rows: list[dict[str, Any]]) -> None:
    doubled = [r for r in rows if r.get("double") or DOUBLE_BANNER in (r["reason"] or "")]
    if doubled:
        console.print(
            f"[bold yellow]{DOUBLE_BANNER}.[/] {len(doubled)} of {len(rows)} rollouts were graded by the "
            "toolchain double (tests/toolchain_double: scripts that check no proof), not by Lean.",
            highlight=False,
        )
    unjudged = [r for r in rows if (r["reason"] or "").startswith(NOT_JUDGED)]
    if rows and len(unjudged) == len(rows):
        console.print(
            "[bold yellow]Could not judge any rollout:[/] no verdict was reached, which is not a "
            "rejection: with on_grader_error=raise (the default, as in training) each rollout is "
            "recorded as errored, with no reward. The run itself worked: model call, taskset, "
            "grader and traces. Nothing was verified by Lean.\n"
            "To grade for real: `lean-mod-add-proof install-lean` (`make lean` in a checkout), then "
            "`lean-mod-add-proof lean-check` (`make lean-check`), then run the demo again."
        )
    elif unjudged:
        console.print(f"[yellow]{len(unjudged)} of {len(rows)} grades could not be judged.[/]")
    accepted = sum(1 for r in rows if r["reward"] == 1.0 and not r.get("double"))
    console.print(f"{accepted} of {len(rows)} rollouts accepted by the kernel.")
    by_double = sum(1 for r in rows if r["reward"] == 1.0 and r.get("double"))
    if by_double:
        console.print(f"{by_double} of {len(rows)} rollouts accepted by the TOOLCHAIN DOUBLE, not by Lean.")


def echo_command(argv: Sequence[str]) -> None:
    """The vf-eval command line, as one line a reader can paste (the binary by its name)."""
    console.print("$ vf-eval " + " ".join(argv[1:]), markup=False, highlight=False)


def run_demo(output_dir: Path, n: int, max_p: int, policy: str) -> int:
    run_name = time.strftime("demo-%Y%m%d-%H%M%S")
    run_dir = output_dir / run_name
    rich = sys.stdout.isatty()
    with running_server(policy=policy) as server:
        console.print(f"baseline server ({policy}) at {server.base_url}")
        argv = vf_eval_argv(
            server.base_url, output_dir, run_name, n=n, max_p=max_p, model=f"baseline-{policy}", rich=rich
        )
        echo_command(argv)
        started = time.monotonic()
        run_dir.mkdir(parents=True, exist_ok=True)
        stdout_log = run_dir / "vf-eval.stdout.log"
        with stdout_log.open("wb") as out:
            # With --no-rich vf-eval prints every trace as JSON on stdout: keep that in a file.
            done = subprocess.run(
                argv, env=child_env(), stdin=subprocess.DEVNULL, stdout=None if rich else out
            )
        elapsed = time.monotonic() - started
        requests = server.requests
    console.print(
        f"vf-eval exited with {done.returncode} after {elapsed:.1f} s; the server answered "
        f"{requests} request(s) and is stopped."
    )
    if done.returncode != 0:
        console.print(f"[red]vf-eval failed[/] (exit code {done.returncode}); see {run_dir}/logs")
        return done.returncode or 1
    traces_path = run_dir / "traces.jsonl"
    if not traces_path.is_file():
        console.print(f"[red]no traces at {traces_path}[/]")
        return 1
    rows = sorted((trace_row(t) for t in read_traces(traces_path)), key=lambda r: r["task"])
    if not rows:
        console.print(f"[red]{traces_path} holds no traces[/]")
        return 1
    console.print(results_table(rows))
    print_reasons(rows)
    explain(rows)
    console.print(
        f"traces: {traces_path}\nresolved config: {run_dir / 'configs' / 'resolved'}\n"
        f"logs: {run_dir / 'logs'}"
    )
    broken = broken_rows(rows)
    if broken:
        console.print(f"[red]{len(broken)} rollout(s) errored[/] (see errors in traces.jsonl)")
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lean_mod_add_proof.demo",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-o", "--output-dir", type=Path, default=Path("outputs/demo"))
    parser.add_argument("-n", type=int, default=3, help="number of tasks")
    parser.add_argument("--max-p", type=int, default=7)
    parser.add_argument("--policy", default="reference", help="baseline policy (see serve-baseline --help)")
    args = parser.parse_args(argv)
    try:
        return run_demo(args.output_dir, args.n, args.max_p, args.policy)
    except (FileNotFoundError, ValueError) as exc:
        console.print(f"[red]demo failed:[/] {exc}")
        return 1
    except KeyboardInterrupt:  # Ctrl-C: one line (the server is stopped by its context manager)
        print(INTERRUPTED_LINE.replace("lean-mod-add-proof:", "demo:", 1), file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
