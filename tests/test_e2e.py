"""`vf-eval lean-mod-add-proof` for real: a --dry-run config check, and a full run against the
local baseline server (null harness, subprocess runtime: the taskset's own Env defaults).

The full run needs `uv` (in .venv/bin, which is put first on PATH) and, the first time, PyPI
access for the null harness's PEP 723 chat script. HOME and uv's cache are the test run's own
(conftest.py: the checkout's `.test-cache/uv`, filled once), never the user's ~/.cache (issue 41).
The runs that grade with the toolchain double ask for its grades to be scored
(`SCORE_DOUBLE_ENV`); without that the taskset scores none of them (could not judge).
Without a Lean toolchain every grade fails at the toolchain stage (reward 0.0); with one, the
reference proof must be accepted (reward 1.0). Either way each rollout must carry the reward,
the lean_stages metrics and the grader's info.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import DOUBLE_DIR, STAGE_KEYS

from lean_mod_add_proof.cli.baseline import running_server
from lean_mod_add_proof.dataset.tasks import DEFAULT_TASKS_DIR, load_tasks
from lean_mod_add_proof.demo import child_env, read_traces, vf_eval_argv
from lean_mod_add_proof.taskset import SCORE_DOUBLE_ENV

TASKSET_ID = "lean-mod-add-proof"
VENV_BIN = Path(sys.executable).parent

needs_tasks = pytest.mark.skipif(
    not (DEFAULT_TASKS_DIR / "tasks.jsonl").is_file(), reason="packaged task set not generated yet"
)


def vf_eval() -> str:
    path = VENV_BIN / "vf-eval"
    return str(path) if path.is_file() else (shutil.which("vf-eval") or "vf-eval")


def test_dry_run_writes_resolved_config(tmp_path: Path) -> None:
    out_dir = tmp_path / "runs"
    argv = [
        vf_eval(),
        TASKSET_ID,
        "--dry-run",
        "-n",
        "2",
        "--no-push",
        "-o",
        str(out_dir),
        "--run.name",
        "dry",
        "--env.taskset.split",
        "eval",
        "--env.taskset.max-p",
        "11",
        "--env.taskset.task.timeout-s",
        "600",
        "--env.taskset.task.axioms-mode",
        "exact",
        "--env.taskset.task.memory-mb",
        "2048",
        "--env.taskset.task.sandbox",
        "off",
        "--env.taskset.task.keep-packages",
    ]
    done = subprocess.run(argv, env=child_env(), capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    files = list(out_dir.glob("**/configs/resolved/eval.json"))
    assert len(files) == 1, (done.stderr[-2000:], list(out_dir.rglob("*")))
    assert str(files[0].relative_to(out_dir)) in done.stderr  # vf-eval logs where it wrote it
    env = json.loads(files[0].read_text())["env"]
    taskset = env["taskset"]
    assert taskset["id"] == TASKSET_ID
    assert (taskset["split"], taskset["max_p"], taskset["tasks_dir"]) == ("eval", 11, None)
    task = taskset["task"]
    assert (
        task["timeout_s"],
        task["axioms_mode"],
        task["memory_mb"],
        task["sandbox"],
        task["keep_packages"],
    ) == (600.0, "exact", 2048, "off", True)
    assert {"work_root", "max_concurrent", "cache_dir", "toolchain_dir"} <= set(task)
    assert env["agent"]["harness"]["id"] == "null"
    assert env["agent"]["runtime"]["type"] == "subprocess"


def test_dry_run_rejects_bad_split(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            vf_eval(),
            TASKSET_ID,
            "--dry-run",
            "--no-push",
            "-o",
            str(tmp_path),
            "--env.taskset.split",
            "bogus",
        ],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode != 0
    assert "split" in done.stderr + done.stdout


@pytest.mark.e2e
@needs_tasks
def test_vf_eval_against_baseline_server(tmp_path: Path) -> None:
    if not (VENV_BIN / "uv").is_file() and shutil.which("uv") is None:
        pytest.skip("uv not installed (the null harness needs it): run `make setup`")
    out_dir = tmp_path / "runs"
    expected = [r.id for r in load_tasks() if r.split == "train" and r.p <= 7][:3]
    assert len(expected) == 3
    started = time.monotonic()
    with running_server("reference") as server:
        argv = vf_eval_argv(server.base_url, out_dir, "e2e", n=3, max_p=7)
        done = subprocess.run(
            argv, env=child_env(), capture_output=True, text=True, timeout=900, cwd=tmp_path
        )
        requests = server.requests
    elapsed = time.monotonic() - started
    print(f"vf-eval e2e took {elapsed:.1f} s")
    assert done.returncode == 0, done.stderr[-4000:]
    assert requests >= 3
    traces_path = out_dir / "e2e" / "traces.jsonl"
    assert traces_path.is_file(), done.stderr[-4000:]
    traces = read_traces(traces_path)
    assert sorted(t["task"]["data"]["id"] for t in traces) == sorted(expected)
    for trace in traces:
        if not trace["ok"]:  # the demo's on_grader_error=raise without Lean: errored, no reward
            messages = [e["message"] for e in trace["errors"]]
            assert any(m.startswith("could not judge: Lean toolchain") for m in messages), messages
            assert trace["metrics"]["lean_stages/judged"] == 0.0
            continue
        assert trace["stop_condition"] == "agent_completed"
        reward = trace["rewards"]["kernel_accepts"]
        assert reward["weight"] == 1.0 and reward["score"] in (0.0, 1.0)
        assert STAGE_KEYS <= set(trace["metrics"])
        info = trace["info"]["lean_grader"]
        assert info["task_id"] == trace["task"]["data"]["id"]
        assert info["reason"]
        assert trace["metrics"]["lean_stages/guard_passed"] == 1.0  # the reference passes the guard
        if not info["judged"]:
            assert reward["score"] == 0.0 and info["reason"].startswith("could not judge: Lean toolchain")
            assert trace["metrics"]["lean_stages/judged"] == 0.0
        else:  # a machine with Lean: the reference proof must be accepted
            assert reward["score"] == 1.0 and info["accepted"], info["reason"]
        # The model's reply really went through the harness: it is the server's answer.
        replies = [n["message"]["content"] for n in trace["nodes"] if n["message"]["role"] == "assistant"]
        assert replies and "decide +kernel" in replies[-1]


def _double_flags(tmp_path: Path) -> list[str]:
    """Grade with the toolchain double, unsandboxed, with a cache of the test's own."""
    return [
        "--env.taskset.task.toolchain-dir",
        str(DOUBLE_DIR),
        "--env.taskset.task.sandbox",
        "off",
        "--env.taskset.task.cache-dir",
        str(tmp_path / "cache"),
    ]


def _vf_eval(
    tmp_path: Path, policy: str, run: str, env: dict | None = None, **kwargs
) -> tuple[list[dict], subprocess.CompletedProcess[str]]:
    """vf-eval against a baseline server answering `policy`, asked for by its model name."""
    if not (VENV_BIN / "uv").is_file() and shutil.which("uv") is None:
        pytest.skip("uv not installed (the null harness needs it): run `make setup`")
    out_dir = tmp_path / "runs"
    with running_server("reference") as server:  # the model name picks the policy
        argv = vf_eval_argv(server.base_url, out_dir, run, n=2, max_p=5, model=f"baseline-{policy}", **kwargs)
        done = subprocess.run(
            argv,
            env={**child_env(), SCORE_DOUBLE_ENV: "1", **(env or {})},
            capture_output=True,
            text=True,
            timeout=900,
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr[-4000:]
    traces = read_traces(out_dir / run / "traces.jsonl")
    assert len(traces) == 2, (out_dir / run / "traces.jsonl").read_text()[-3000:]
    return traces, done


def _run_vf_eval(tmp_path: Path, policy: str, run: str, env: dict | None = None, **kwargs) -> list[dict]:
    return _vf_eval(tmp_path, policy, run, env, **kwargs)[0]


@pytest.mark.e2e
@needs_tasks
def test_vf_eval_without_lean_errors_rollouts_by_default(tmp_path: Path) -> None:
    """The default on_grader_error=raise: a grade with no verdict errors the rollout (ok=False,
    the reason in errors) rather than handing the trainer a 0.0 that looks like a wrong proof."""
    empty = tmp_path / "no-toolchain"
    empty.mkdir()
    extra = ["--env.taskset.task.toolchain-dir", str(empty)]
    traces = _run_vf_eval(tmp_path, "reference", "raise", on_grader_error="raise", extra=extra)
    assert len(traces) == 2
    for trace in traces:
        assert not trace["ok"]
        assert any("could not judge" in e["message"] for e in trace["errors"]), trace["errors"]
        assert trace["metrics"]["lean_stages/judged"] == 0.0


@pytest.mark.e2e
@needs_tasks
def test_vf_eval_with_the_toolchain_double_and_the_selftest(tmp_path: Path) -> None:
    """Through real vf-eval with the self-test on, as in production: the double (not Lean; it
    proves nothing) first gets the canaries' verdicts, then the reference reply is accepted and a
    guard violation is rejected, both judged."""
    extra = _double_flags(tmp_path)
    accepted = _run_vf_eval(tmp_path, "reference", "ref", on_grader_error="raise", extra=extra)
    assert [t["rewards"]["kernel_accepts"]["score"] for t in accepted] == [1.0, 1.0]
    assert all(t["ok"] and t["info"]["lean_grader"]["judged"] for t in accepted)
    rejected = _run_vf_eval(tmp_path, "guard-violation", "cheat", on_grader_error="raise", extra=extra)
    assert [t["rewards"]["kernel_accepts"]["score"] for t in rejected] == [0.0, 0.0]
    assert all(t["ok"] and t["info"]["lean_grader"]["failed_stage"] == "guard" for t in rejected)


def _verdicts(traces: list[dict]) -> list[tuple]:
    rows = []
    for t in traces:
        info = t["info"]["lean_grader"]
        rows.append((t["task"]["data"]["id"], t["rewards"]["kernel_accepts"]["score"], info["failed_stage"]))
    return sorted(rows)


@pytest.mark.e2e
@needs_tasks
@pytest.mark.parametrize("policy", ["reference", "guard-violation", "no-code"])
def test_grading_in_the_runtime_matches_the_host(tmp_path: Path, policy: str) -> None:
    """grade_in=runtime on the subprocess runtime: the grader runs in the rollout's box as
    `lean-mod-add-proof grade --json` (finding the toolchain double through the environment the
    box inherits) and its verdicts are the host's."""
    # A HOME of its own, so that a grade that ignored --cache-dir would fill `home`'s cache (checked
    # below) and never the real ~/.cache/lean-mod-add-proof (issue 29); uv keeps the run's cache.
    home = tmp_path / "home"
    home.mkdir()
    box_env = {"LEAN_MOD_ADD_PROOF_TOOLCHAIN": str(DOUBLE_DIR), "HOME": str(home)}
    common = ["--env.taskset.task.sandbox", "off", "--env.taskset.task.cache-dir", str(tmp_path / "cache")]
    runtime = ["--env.taskset.task.grade-in", "runtime"]  # the default image needs no unsetting here
    host = _run_vf_eval(
        tmp_path,
        policy,
        "host",
        env=box_env,
        on_grader_error="raise",
        extra=[*common, "--env.taskset.task.toolchain-dir", str(DOUBLE_DIR)],
    )
    box = _run_vf_eval(
        tmp_path,
        policy,
        "box",
        env=box_env,
        on_grader_error="raise",
        extra=[*common, *runtime],
    )
    assert all(t["ok"] for t in host + box), [t["errors"] for t in host + box]
    assert _verdicts(box) == _verdicts(host)
    assert {t["info"]["lean_grader"]["graded_in"] for t in box} == {"runtime"}
    assert {t["info"]["lean_grader"]["graded_in"] for t in host} == {"host"}
    if policy == "reference":
        assert all(t["info"]["lean_grader"]["judged"] and t["info"]["lean_grader"]["accepted"] for t in box)
        assert (tmp_path / "cache").is_dir()  # the graders used the configured cache...
    assert not (home / ".cache" / "lean-mod-add-proof").exists()  # ...and only that one


@pytest.mark.e2e
@needs_tasks
def test_grading_in_a_runtime_without_lean_is_could_not_judge(tmp_path: Path) -> None:
    empty = tmp_path / "none"
    empty.mkdir()
    box = _run_vf_eval(
        tmp_path,
        "reference",
        "box",
        env={"LEAN_MOD_ADD_PROOF_TOOLCHAIN": str(empty)},
        on_grader_error="zero",
        extra=["--env.taskset.task.grade-in", "runtime"],
    )
    for trace in box:
        info = trace["info"]["lean_grader"]
        assert trace["rewards"]["kernel_accepts"]["score"] == 0.0 and info["judged"] is False
        assert "could not judge" in info["reason"]


@pytest.mark.e2e
@needs_tasks
def test_compiler_feedback_two_attempts(tmp_path: Path) -> None:
    """max_attempts 2 through real vf-eval, driven by the toolchain double (not Lean; the first
    reply is rejected by the guard, which needs no Lean, and the double accepts the second): the
    model's second message is the grader's feedback, and the second attempt earns the reward."""
    extra = [
        *_double_flags(tmp_path),
        "--env.taskset.task.max-attempts",
        "2",
        "--env.taskset.task.attempt-discount",
        "0.5",
    ]
    traces = _run_vf_eval(tmp_path, "guard-then-reference", "feedback", on_grader_error="raise", extra=extra)
    for trace in traces:
        assert trace["ok"], trace["errors"]
        users = [n["message"]["content"] for n in trace["nodes"] if n["message"]["role"] == "user"]
        assert len(users) == 2, users
        feedback = users[1] if isinstance(users[1], str) else json.dumps(users[1])
        assert feedback.startswith("Your proof was not accepted.")
        assert (
            "Failed at: the text rules" in feedback and "sorry" in feedback and "1 attempt left" in feedback
        )
        assert "/tmp" not in feedback and str(DOUBLE_DIR) not in feedback
        info = trace["info"]["lean_grader"]
        assert [a["failed_stage"] for a in info["attempts"]] == ["guard", None]
        assert info["accepted"] and trace["rewards"]["kernel_accepts"]["score"] == 0.5
        assert trace["metrics"]["lean_stages/attempts"] == 2.0
        assert trace["metrics"]["lean_stages/first_attempt_accepted"] == 0.0


@pytest.mark.e2e
@needs_tasks
def test_default_rich_output_names_the_could_not_judge_reason(tmp_path: Path) -> None:
    """vf-eval in its default (rich) mode, no Lean: one line before the dashboard says grading is
    not possible and why, the dashboard's rows name GraderUnavailable, and one line after it
    repeats the reason and where each rollout's copy is."""
    empty = tmp_path / "no-toolchain"
    empty.mkdir()
    extra = ["--env.taskset.task.toolchain-dir", str(empty)]
    traces, done = _vf_eval(tmp_path, "reference", "rich", rich=True, on_grader_error="raise", extra=extra)
    assert all(not t["ok"] for t in traces)
    assert {e["type"] for t in traces for e in t["errors"]} == {"GraderUnavailable"}
    messages = [t["errors"][0]["message"] for t in traces]
    assert all(m.startswith("could not judge: Lean toolchain not found") for m in messages), messages
    err = done.stderr
    assert "No handlers could be found" not in err
    lines = [line for line in err.splitlines() if line.startswith("lean-mod-add-proof: ")]
    assert len(lines) == 2, err[-3000:]
    before, after = lines
    assert "GRADING IS NOT POSSIBLE here: Lean toolchain not found" in before and str(empty) in before
    assert after.startswith("lean-mod-add-proof: 2 grade(s) could not judge")
    assert "traces[i].errors[j].message" in after and str(empty) in after
    assert "GraderUnavailable" in done.stdout  # the dashboard's error column


@pytest.mark.e2e
@needs_tasks
def test_vf_validate_names_the_could_not_judge_reason(tmp_path: Path) -> None:
    empty = tmp_path / "no-toolchain"
    empty.mkdir()
    out_dir = tmp_path / "validate"
    argv = [
        str(VENV_BIN / "vf-validate"),
        TASKSET_ID,
        "--runtime.type",
        "subprocess",
        "-n",
        "2",
        "-o",
        str(out_dir),
        "--taskset.max-p",
        "5",
        "--taskset.task.toolchain-dir",
        str(empty),
    ]
    done = subprocess.run(argv, env=child_env(), capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith("lean-mod-add-proof: ")]
    assert len(lines) == 2, done.stderr[-3000:]
    assert "GRADING IS NOT POSSIBLE here: Lean toolchain not found" in lines[0]
    assert "2 grade(s) could not judge" in lines[1] and "results.jsonl" in lines[1]
    (results,) = out_dir.glob("*/results.jsonl")
    rows = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    assert len(rows) == 2 and all("Lean toolchain not found" in r["gold"]["error"] for r in rows)


@pytest.mark.e2e
@needs_tasks
def test_vf_eval_by_full_path_without_the_venv_on_path(tmp_path: Path) -> None:
    """vf-eval run by its full path, the virtual environment not on PATH (and pip unable to fetch
    uv): the null harness finds this package's own uv and the rollouts complete."""
    env = {
        "PATH": "/usr/bin:/bin",
        "PIP_NO_INDEX": "1",
        "PIP_CONFIG_FILE": os.devnull,
        "LEAN_MOD_ADD_PROOF_TOOLCHAIN": str(DOUBLE_DIR),
    }
    extra = ["--env.taskset.task.sandbox", "off", "--env.taskset.task.cache-dir", str(tmp_path / "cache")]
    traces = _run_vf_eval(tmp_path, "reference", "bare-path", env=env, on_grader_error="raise", extra=extra)
    assert all(t["ok"] for t in traces), [t["errors"] for t in traces]
    assert [t["rewards"]["kernel_accepts"]["score"] for t in traces] == [1.0, 1.0]
