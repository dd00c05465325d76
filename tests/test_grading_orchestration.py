"""The grader's orchestration against the toolchain double (tests/toolchain_double: shell scripts,
not Lean). These tests prove how processes, deadlines, limits, the sandbox, the cache and the
stage order behave; they say nothing about which proofs Lean accepts."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import time
import uuid
from pathlib import Path

import pytest
from conftest import DOUBLE_DIR, double_config, make_task, processes_with, submission, weights_text

from lean_mod_add_proof.constants import CHECK_THEOREM, theorem_name
from lean_mod_add_proof.grading import package as pkgmod
from lean_mod_add_proof.grading import pipeline, sandbox, toolchain
from lean_mod_add_proof.grading.pipeline import grade, grade_reply
from lean_mod_add_proof.grading.process import prlimit_argv, run_command
from lean_mod_add_proof.grading.result import GradeResult

BWRAP = sandbox.probe_sandbox()
needs_bwrap = pytest.mark.skipif(not BWRAP.available, reason=f"no working sandbox: {BWRAP.reason}")


def marker() -> str:
    return f"lmap{uuid.uuid4().hex[:12]}"


async def run(text: str, tmp_path: Path, stages: list[str] | None = None, **cfg: object) -> GradeResult:
    task = make_task()
    on_stage = stages.append if stages is not None else None
    skip = bool(cfg.pop("skip_guard", False))
    return await grade(
        text, task, weights_text(), double_config(tmp_path, **cfg), on_stage=on_stage, skip_guard=skip
    )


def work_dirs(tmp_path: Path) -> list[Path]:
    root = tmp_path / "work"
    return list(root.iterdir()) if root.exists() else []


async def wait_gone(mark: str, seconds: float = 3.0) -> list[int]:
    """Killed processes may take a moment to vanish from /proc."""
    end = time.monotonic() + seconds
    while (left := processes_with(mark)) and time.monotonic() < end:
        await asyncio.sleep(0.05)
    return left


# ---- pure pieces -------------------------------------------------------------------------------


def test_bwrap_argv_shape(tmp_path: Path) -> None:
    layout = (sandbox.HostEntry("/usr", None), sandbox.HostEntry("/bin", "usr/bin"))
    pkg = tmp_path / "pkg"
    argv = sandbox.bwrap_argv(
        "bwrap",
        layout=layout,
        toolchain_dir=Path("/opt/tc"),
        package_dir=pkg,
        readonly_files=[pkg / "lakefile.toml"],
        env={"PATH": "/usr/bin", "HOME": str(pkg)},
    )
    assert argv[:5] == ["bwrap", "--unshare-all", "--die-with-parent", "--cap-drop", "ALL"]
    assert "--new-session" not in argv  # setsid would escape the process-group kill
    assert "--clearenv" in argv and argv.index("--clearenv") < argv.index("--setenv")
    assert ["--symlink", "usr/bin", "/bin"] == argv[argv.index("--symlink") : argv.index("--symlink") + 3]
    joined = " ".join(argv)
    assert "--ro-bind /opt/tc /opt/tc" in joined
    # the tmpfs comes before the writable package bind, which comes before the read-only files
    bind = argv.index("--bind")
    assert argv.index("--tmpfs") < bind < argv.index("--ro-bind", bind)
    assert argv[-1] == "--" and argv[-3:-1] == ["--chdir", str(pkg)]
    assert "/etc" not in argv  # only /etc/ld.so.cache via the layout, never all of /etc


def test_prlimit_argv() -> None:
    assert prlimit_argv("/usr/bin/prlimit", 512, 35, 8) == [
        "/usr/bin/prlimit",
        f"--as={512 * 1024 * 1024}",
        "--cpu=35",
        f"--fsize={8 * 1024 * 1024}",
        "--",
    ]


def test_cache_key_covers_its_inputs() -> None:
    sources = pkgmod.package_sources(b"network", "weights")
    key = pkgmod.cache_key("v1", Path("/tc"), sources)
    assert key == pkgmod.cache_key("v1", Path("/tc"), dict(sources))
    assert key != pkgmod.cache_key("v2", Path("/tc"), sources)
    assert key != pkgmod.cache_key("v1", Path("/tc2"), sources)
    assert key != pkgmod.cache_key("v1", Path("/tc"), pkgmod.package_sources(b"network", "weights2"))
    assert key != pkgmod.cache_key("v1", Path("/tc"), pkgmod.package_sources(b"network2", "weights"))


def test_trusted_selection() -> None:
    assert pkgmod.is_trusted("LeanCheckedNetwork/Weights.lean")
    assert pkgmod.is_trusted("lakefile.toml")
    assert pkgmod.is_trusted(".lake/build/lib/lean/LeanCheckedNetwork/Weights.olean")
    assert pkgmod.is_trusted(".lake/build/lib/lean/LeanCheckedNetwork/Network.ilean")
    assert not pkgmod.is_trusted(".lake/build/lib/lean/LeanCheckedNetwork/Weights.trace")
    assert not pkgmod.is_trusted(".lake/build/lib/lean/LeanCheckedNetwork/Submission.olean")
    assert not pkgmod.is_trusted("LeanCheckedNetwork/Submission.lean")
    assert pkgmod.missing_outputs({"LeanCheckedNetwork/Weights.lean": "x"}) == [
        "LeanCheckedNetwork.Network",
        "LeanCheckedNetwork.Weights",
    ]


def test_check_lean_text_is_exact() -> None:
    assert pkgmod.check_lean_text(5) == (
        "import LeanCheckedNetwork.Weights\n"
        "import LeanCheckedNetwork.Submission\n\n"
        f"theorem {CHECK_THEOREM} : _root_.LeanCheckedNetwork.Net.Spec :=\n"
        "  _root_.LeanCheckedNetwork.Net.adds_mod_5\n\n"
        "#print axioms _root_.LeanCheckedNetwork.Net.adds_mod_5\n"
        f"#print axioms {CHECK_THEOREM}\n"
    )


def test_version_match_is_exact() -> None:
    assert toolchain.version_matches("Lean (version 4.35.0-rc2, x86_64-unknown-linux-gnu, commit abc)")
    assert not toolchain.version_matches("Lean (version 4.35.0-rc20, x86_64)")
    assert not toolchain.version_matches("Lean (version 4.35.0, x86_64)")
    assert toolchain.ELAN_DIR_NAME == "leanprover--lean4---v4.35.0-rc2"


# ---- the whole pipeline ------------------------------------------------------------------------


async def test_default_double_run_passes_every_stage(tmp_path: Path) -> None:
    stages: list[str] = []
    res = await run(submission(), tmp_path, stages)
    assert res.accepted and res.reward == 1.0, res.reason
    assert stages == ["guard", "toolchain", "build", "leanchecker", "statement", "axioms"]
    assert [c.stage for c in res.commands] == ["build", "build", "leanchecker", "statement"]
    assert res.commands[1].argv == ["lake", "build", "LeanCheckedNetwork.Submission"]
    assert res.commands[2].argv == ["lake", "env", "leanchecker", "LeanCheckedNetwork.Submission"]
    assert res.commands[3].argv == ["lake", "env", "lean", "--json", "Check.lean"]
    assert res.axioms == ["propext"] and res.check_axioms == ["propext"]
    assert res.cache == "built" and res.failed_stage is None
    assert all(res.stage_flags()[k] == 1.0 for k in ("guard_passed", "build_passed", "axioms_passed"))
    assert set(res.stage_seconds) >= {"guard", "toolchain", "build", "leanchecker", "statement", "axioms"}
    assert res.grader_seconds > 0
    json.dumps(res.model_dump(mode="json"))  # goes onto the trace as is


async def test_guard_rejection_runs_nothing(tmp_path: Path) -> None:
    stages: list[str] = []
    res = await run(submission() + "theorem x : False := sorry\n", tmp_path, stages)
    assert res.failed_stage == "guard" and stages == ["guard"] and not res.commands
    assert work_dirs(tmp_path) == []


async def test_failing_build_stops_before_leanchecker(tmp_path: Path) -> None:
    res = await run(submission("build fail boom at line 3"), tmp_path, keep_packages=True)
    assert res.failed_stage == "build" and not res.build_passed
    assert "boom at line 3" in res.reason and "exit 1" in res.reason
    assert [c.stage for c in res.commands] == ["build", "build"]
    assert res.package_dir is not None
    assert not (Path(res.package_dir) / "Check.lean").exists()


async def test_failing_leanchecker_stops_before_check_is_written(tmp_path: Path) -> None:
    res = await run(submission("leanchecker fail bad proof"), tmp_path, keep_packages=True)
    assert res.failed_stage == "leanchecker" and res.build_passed and not res.leanchecker_passed
    assert "bad proof" in res.reason
    assert "statement" not in [c.stage for c in res.commands]
    assert res.package_dir is not None
    assert not (Path(res.package_dir) / "Check.lean").exists()


async def test_check_lean_is_written_fresh_after_leanchecker(tmp_path: Path) -> None:
    # The build plants its own Check.lean; the grader must replace it, not reuse it.
    res = await run(submission("build tamper check"), tmp_path, keep_packages=True)
    assert res.accepted, res.reason
    assert "planted Check.lean" in res.commands[1].output_tail
    assert res.package_dir is not None
    assert (Path(res.package_dir) / "Check.lean").read_text() == pkgmod.check_lean_text(5)


async def test_statement_failure_reports_first_lean_error(tmp_path: Path) -> None:
    res = await run(submission("check fail type mismatch in the check theorem"), tmp_path)
    assert res.failed_stage == "statement" and res.leanchecker_passed and not res.statement_passed
    assert "type mismatch in the check theorem" in res.reason
    assert res.axioms is None


@pytest.mark.parametrize(
    ("directive", "mode", "accepted", "axioms"),
    [
        ("axioms propext Quot.sound", "subset", True, ["propext", "Quot.sound"]),
        ("axioms none", "subset", True, []),
        ("axioms propext", "exact", False, ["propext"]),
        (
            "axioms propext Classical.choice Quot.sound",
            "exact",
            True,
            ["propext", "Classical.choice", "Quot.sound"],
        ),
        ("axioms propext cheat", "subset", False, ["propext", "cheat"]),
    ],
)
async def test_axiom_outcomes(
    tmp_path: Path, directive: str, mode: str, accepted: bool, axioms: list[str]
) -> None:
    res = await run(submission(directive), tmp_path, axioms_mode=mode)
    assert res.accepted is accepted, res.reason
    assert sorted(res.axioms or []) == sorted(axioms) and sorted(res.check_axioms or []) == sorted(axioms)
    if not accepted:
        assert res.failed_stage == "axioms" and res.statement_passed


async def test_native_decide_aux_axiom_fails(tmp_path: Path) -> None:
    aux = f"{theorem_name(5)}._native.native_decide.ax_1_1"
    # The guard would stop the word first; switched off to reach the axiom stage (test-only flag).
    res = await run(submission(f"axioms propext {aux}"), tmp_path, skip_guard=True)
    assert res.failed_stage == "axioms" and not res.accepted
    assert aux in (res.axioms or [])


async def test_unparseable_axiom_report_fails_with_output_kept(tmp_path: Path) -> None:
    res = await run(submission("axioms-raw the kernel says hello"), tmp_path)
    # Either stage may refuse it: statement if the message reader rejects the text, else axioms.
    assert res.failed_stage in ("statement", "axioms") and not res.accepted
    assert res.axioms_passed is False
    assert "the kernel says hello" in res.commands[-1].output_tail


@pytest.mark.parametrize("how", ["source", "olean", "swapdir"])
async def test_tampering_with_trusted_files_fails(tmp_path: Path, how: str) -> None:
    res = await run(submission(f"build tamper {how}"), tmp_path)
    assert res.failed_stage == "build" and not res.accepted
    assert "trusted file changed during the build" in res.reason


async def test_cache_is_reused(tmp_path: Path) -> None:
    first = await run(submission(), tmp_path)
    second = await run(submission(), tmp_path)
    assert (first.cache, second.cache) == ("built", "hit")
    assert [c.argv[-1] for c in second.commands if c.stage == "build"] == ["LeanCheckedNetwork.Submission"]
    assert "Built LeanCheckedNetwork.Weights" not in second.commands[0].output_tail
    assert second.accepted


async def test_concurrent_first_grades_build_once(tmp_path: Path) -> None:
    task = make_task()
    config = double_config(tmp_path, max_concurrent=4)
    slow_weights = weights_text(5, "sleep 1")  # widens the race window
    results = await asyncio.gather(*(grade(submission(), task, slow_weights, config) for _ in range(4)))
    assert sorted(r.cache for r in results) == ["built", "hit", "hit", "hit"]
    assert all(r.accepted for r in results)
    entries = [p for p in (tmp_path / "cache").iterdir() if not p.name.startswith(".")]
    assert len(entries) == 1


async def test_corrupt_cache_entry_is_rebuilt(tmp_path: Path) -> None:
    assert (await run(submission(), tmp_path)).cache == "built"
    (entry,) = [p for p in (tmp_path / "cache").iterdir() if not p.name.startswith(".")]
    olean = entry / "package/.lake/build/lib/lean/LeanCheckedNetwork/Weights.olean"
    olean.write_text("corrupted")
    res = await run(submission(), tmp_path)
    assert res.cache == "built" and res.accepted
    assert olean.read_text() != "corrupted"


async def test_failing_prebuild_is_a_build_failure(tmp_path: Path) -> None:
    res = await grade(submission(), make_task(), weights_text(5, "fail bad weights"), double_config(tmp_path))
    assert res.failed_stage == "build" and "could not prebuild Network/Weights" in res.reason
    assert not [p for p in (tmp_path / "cache").iterdir() if not p.name.startswith(".")]


async def test_unwritable_cache_falls_back_to_building_in_place(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    res = await run(submission(), tmp_path, cache_dir=blocker / "cache")
    assert res.accepted and res.cache == "off"


async def test_memory_cap(tmp_path: Path) -> None:
    big = await run(submission("build alloc 2048"), tmp_path, memory_mb=512)
    assert big.failed_stage == "build" and "allocating 2048 MB failed" in big.reason
    small = await run(submission("build alloc 16"), tmp_path, memory_mb=512)
    assert small.accepted, small.reason


async def test_file_size_cap(tmp_path: Path) -> None:
    big = await run(submission("build bigfile 16"), tmp_path, max_file_mb=8)
    assert big.failed_stage == "build" and "writing a 16 MB file failed" in big.reason, big.reason
    small = await run(submission("build bigfile 4"), tmp_path, max_file_mb=8)
    assert small.accepted, small.reason


async def test_output_cap(tmp_path: Path) -> None:
    res = await run(submission("build flood 3000000"), tmp_path, output_cap_bytes=65536, tail_chars=500)
    build = res.commands[1]
    assert build.truncated and build.output_bytes > 3_000_000
    assert len(build.output_tail) <= 500 and "Built LeanCheckedNetwork.Submission" in build.output_tail
    assert res.accepted


async def test_timeout_kills_grandchildren(tmp_path: Path) -> None:
    mark = marker()
    started = time.monotonic()
    res = await run(submission(f"build spawn {mark}", "build sleep 60"), tmp_path, timeout_s=2)
    assert time.monotonic() - started < 15
    assert res.failed_stage == "build" and "timed out" in res.reason
    assert res.commands[-1].exit_code is None
    assert await wait_gone(mark) == []
    assert work_dirs(tmp_path) == []


async def test_lingering_grandchild_is_killed_when_the_command_exits(tmp_path: Path) -> None:
    mark = marker()
    started = time.monotonic()
    res = await run(submission(f"build spawn {mark}"), tmp_path)
    assert res.accepted, res.reason
    assert time.monotonic() - started < 15  # did not wait for the 1000 s sleep holding the pipe
    assert await wait_gone(mark) == []


async def test_escaped_grandchild_cannot_hang_the_grade(tmp_path: Path) -> None:
    # Without the sandbox a setsid() child leaves our process group and keeps the pipe open: the
    # grade must still end (the drain is bounded). The stray process is this test's to clean up;
    # with the sandbox the PID namespace kills it (next test).
    mark = marker()
    started = time.monotonic()
    try:
        res = await run(submission(f"build escape {mark}"), tmp_path)
        assert time.monotonic() - started < 15
        assert res.accepted, res.reason
    finally:
        for pid in processes_with(mark):
            os.kill(pid, 9)


@needs_bwrap
async def test_sandbox_kills_escaped_grandchildren(tmp_path: Path) -> None:
    mark = marker()
    res = await run(submission(f"build escape {mark}"), tmp_path, sandbox="on")
    assert res.accepted, res.reason
    assert await wait_gone(mark) == []


async def test_one_deadline_covers_all_stages(tmp_path: Path) -> None:
    res = await run(
        submission("build sleep 1.2", "leanchecker sleep 1.2", "check sleep 1.2"), tmp_path, timeout_s=3
    )
    assert res.failed_stage == "statement" and "timed out" in res.reason


async def test_work_directory_removed_or_kept(tmp_path: Path) -> None:
    await run(submission(), tmp_path)
    await run(submission("build fail x"), tmp_path)
    assert work_dirs(tmp_path) == []
    kept = await run(submission(), tmp_path, keep_packages=True)
    assert kept.package_dir is not None and Path(kept.package_dir).is_dir()
    assert Path(kept.package_dir).name.startswith(pkgmod.GRADE_DIR_PREFIX)
    assert work_dirs(tmp_path) == [Path(kept.package_dir)]


async def test_cancellation_kills_everything_and_cleans_up(tmp_path: Path) -> None:
    mark = marker()
    job = asyncio.create_task(run(submission(f"build spawn {mark}", "build sleep 60"), tmp_path))
    end = time.monotonic() + 10
    while not processes_with(mark) and time.monotonic() < end:
        await asyncio.sleep(0.05)
    assert processes_with(mark), "the double never started"
    job.cancel()
    with pytest.raises(asyncio.CancelledError):
        await job
    assert await wait_gone(mark) == []
    assert work_dirs(tmp_path) == []


async def test_run_command_cancellation_reaps(tmp_path: Path) -> None:
    mark = marker()
    argv = ["bash", "-c", f"(exec -a {mark} sleep 100) & sleep 100"]
    job = asyncio.create_task(
        run_command(
            argv,
            stage="build",
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin"},
            deadline=time.monotonic() + 60,
            output_cap_bytes=1024,
            tail_chars=100,
            memory_mb=None,
            prlimit=None,
        )
    )
    await asyncio.sleep(0.5)
    job.cancel()
    with pytest.raises(asyncio.CancelledError):
        await job
    assert await wait_gone(mark) == []


async def test_missing_toolchain_is_a_result_not_an_exception(tmp_path: Path) -> None:
    res = await run(submission(), tmp_path, toolchain_dir=tmp_path / "no-such-toolchain")
    assert res.reward == 0.0 and res.failed_stage == "toolchain"
    assert res.reason.startswith("Lean toolchain not found")
    assert "lean-mod-add-proof install-lean" in res.reason
    assert "elan toolchain install leanprover/lean4:v4.35.0-rc2" in res.reason


async def test_wrong_toolchain_version_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "tc"
    (fake / "bin").mkdir(parents=True)
    for name in ("lake", "leanchecker"):
        (fake / "bin" / name).symlink_to(DOUBLE_DIR / "bin" / name)
    lean = fake / "bin" / "lean"
    lean.write_text('#!/bin/sh\necho "Lean (version 4.34.0, toolchain double)"\n')
    lean.chmod(0o755)
    res = await run(submission(), tmp_path, toolchain_dir=fake)
    assert res.failed_stage == "toolchain" and "4.34.0" in res.reason


async def test_sandbox_on_without_bwrap_fails_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        pipeline, "probe_sandbox", lambda: sandbox.SandboxProbe(False, "bwrap is not installed", None)
    )
    res = await run(submission(), tmp_path, sandbox="on")
    assert res.failed_stage == "toolchain" and "sandbox required" in res.reason
    auto = await run(submission(), tmp_path, sandbox="auto")
    assert auto.accepted and not auto.sandboxed


async def test_internal_error_scores_zero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_a: object, **_k: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(pkgmod, "copy_package", boom)
    res = await run(submission(), tmp_path)
    assert res.reward == 0.0 and res.reason.startswith("internal grader error: RuntimeError: disk on fire")
    assert work_dirs(tmp_path) == []


async def test_grade_reply_without_code_block(tmp_path: Path) -> None:
    res = await grade_reply("I think it is true.", make_task(), weights_text(), double_config(tmp_path))
    assert res.failed_stage == "extract" and res.reward == 0.0


async def test_grade_reply_with_code_block(tmp_path: Path) -> None:
    reply = "Here it is:\n```lean\n" + submission() + "```\n"
    res = await grade_reply(reply, make_task(), weights_text(), double_config(tmp_path))
    assert res.accepted, res.reason
    assert "extract" in res.stage_seconds


async def test_concurrency_limit(tmp_path: Path) -> None:
    config = double_config(tmp_path, max_concurrent=1)
    await grade(submission(), make_task(), weights_text(), config)  # warm the cache
    started = time.monotonic()
    await asyncio.gather(
        *(grade(submission("build sleep 0.6"), make_task(), weights_text(), config) for _ in range(3))
    )
    assert time.monotonic() - started >= 1.8


# ---- the sandbox -------------------------------------------------------------------------------


@needs_bwrap
async def test_sandbox_blocks_writes_outside_the_package(tmp_path: Path) -> None:
    target = tmp_path / "outside" / "pwned.txt"
    target.parent.mkdir()
    res = await run(submission(f"build write {target}"), tmp_path, sandbox="on")
    assert res.sandboxed and res.failed_stage == "build" and "could not write" in res.reason
    assert not target.exists()
    # control: without the sandbox the same write succeeds (so the test above means something)
    res_off = await run(submission(f"build write {target}"), tmp_path, sandbox="off")
    assert res_off.accepted and target.exists()


@needs_bwrap
async def test_sandbox_keeps_the_toolchain_read_only(tmp_path: Path) -> None:
    import shutil

    tc = tmp_path / "tc"
    shutil.copytree(DOUBLE_DIR, tc)
    target = tc / "bin" / "planted"
    res = await run(submission(f"build write {target}"), tmp_path, sandbox="on", toolchain_dir=tc)
    assert res.sandboxed and res.failed_stage == "build" and "could not write" in res.reason
    assert "Read-only file system" in res.commands[-1].output_tail
    assert not target.exists()


@needs_bwrap
async def test_sandbox_tampered_olean_is_caught(tmp_path: Path) -> None:
    res = await run(submission("build tamper olean"), tmp_path, sandbox="on")
    assert res.sandboxed and res.failed_stage == "build"
    assert "Weights.olean" in res.reason


@needs_bwrap
async def test_sandbox_has_no_network(tmp_path: Path) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    accepted: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append(conn.recv(100))
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        res = await run(submission(f"build connect {port}"), tmp_path, sandbox="on")
        assert res.failed_stage == "build" and "could not connect" in res.reason
        assert accepted == []
        control = await run(submission(f"build connect {port}"), tmp_path, sandbox="off")
        assert control.accepted, control.reason
        time.sleep(0.3)
        assert accepted and accepted[0].startswith(b"double-connect")
    finally:
        stop.set()
        thread.join(2)
        server.close()


@needs_bwrap
async def test_sandbox_makes_trusted_sources_read_only(tmp_path: Path) -> None:
    res = await run(submission("build tamper source"), tmp_path, sandbox="on", keep_packages=True)
    assert res.sandboxed
    assert "could not tamper with Weights.lean" in res.commands[1].output_tail
    assert res.accepted, res.reason
    assert res.package_dir is not None
    assert (Path(res.package_dir) / "LeanCheckedNetwork/Weights.lean").read_text() == weights_text()


@needs_bwrap
async def test_sandbox_blocks_swapping_the_source_directory(tmp_path: Path) -> None:
    # The source directory is a read-only mount point: it cannot be moved aside and recreated.
    # (Without the sandbox the same trick is caught by the re-hash: test_tampering_... above.)
    res = await run(submission("build tamper swapdir"), tmp_path, sandbox="on")
    assert "could not move the source directory" in res.commands[1].output_tail
    assert res.accepted, res.reason


@needs_bwrap
async def test_sandbox_timeout_kills_everything_inside(tmp_path: Path) -> None:
    mark = marker()
    res = await run(submission(f"build spawn {mark}", "build sleep 60"), tmp_path, sandbox="on", timeout_s=2)
    assert res.sandboxed and "timed out" in res.reason
    assert await wait_gone(mark) == []


@needs_bwrap
async def test_sandbox_memory_cap_applies_inside(tmp_path: Path) -> None:
    res = await run(submission("build alloc 2048"), tmp_path, sandbox="on", memory_mb=512)
    assert res.sandboxed and res.failed_stage == "build"


@pytest.mark.parametrize("mode", ["off", pytest.param("on", marks=needs_bwrap)])
async def test_environment_is_fully_specified(tmp_path: Path, mode: str) -> None:
    os.environ["LMAP_SECRET_TEST_KEY"] = "sk-should-not-leak"
    try:
        res = await run(submission("build env"), tmp_path, sandbox=mode)
    finally:
        del os.environ["LMAP_SECRET_TEST_KEY"]
    assert res.accepted, res.reason
    out = res.commands[1].output_tail
    assert "LEAN_NUM_THREADS=1" in out and "sk-should-not-leak" not in out
    assert f"HOME={tmp_path / 'work'}" in out and "PATH=" + str(DOUBLE_DIR / "bin") in out


# ---- the command line --------------------------------------------------------------------------


def _cli(argv: list[str]) -> int:
    from lean_mod_add_proof.cli import main

    return main(argv)


def _task_dir(tmp_path: Path) -> Path:
    tasks = tmp_path / "tasks"
    record = make_task()
    (tasks / record.id).mkdir(parents=True)
    (tasks / record.id / "Weights.lean").write_text(weights_text(), encoding="utf-8")
    (tasks / "tasks.jsonl").write_text(json.dumps(record.to_json()) + "\n", encoding="utf-8")
    return tasks


def test_cli_guard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good, bad, binary = tmp_path / "good.lean", tmp_path / "bad.lean", tmp_path / "bin.lean"
    good.write_text(submission())
    bad.write_text(submission() + "theorem t : False := sorry\n")
    binary.write_bytes(b"\xff\xfe import")
    assert _cli(["guard", str(good)]) == 0
    assert _cli(["guard", str(bad)]) == 1
    assert "sorry" in capsys.readouterr().err
    assert _cli(["guard", str(bad), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["passed"] is False
    assert _cli(["guard", str(binary)]) == 2
    assert _cli(["guard", str(tmp_path / "missing.lean")]) == 2


def test_cli_grade(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LEAN_MOD_ADD_PROOF_TOOLCHAIN", str(DOUBLE_DIR))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the default cache dir lives under it
    tasks = _task_dir(tmp_path)
    good, bad = tmp_path / "good.lean", tmp_path / "bad.lean"
    good.write_text(submission())
    bad.write_text(submission("leanchecker fail nope"))
    common = ["--tasks-dir", str(tasks), "--work-root", str(tmp_path / "work"), "--sandbox", "off"]
    assert _cli(["grade", "p05_h08_s0", str(good), *common]) == 0
    out = capsys.readouterr().out
    assert "ACCEPTED" in out and "leanchecker" in out
    assert _cli(["grade", "p05_h08_s0", str(bad), *common, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["failed_stage"] == "leanchecker"
    assert _cli(["grade", "p99_h08_s0", str(good), *common]) == 2
    assert "unknown task id" in capsys.readouterr().err
    assert _cli(["grade", "p05_h08_s0", str(tmp_path / "missing.lean"), *common]) == 2


def test_cli_doctor_without_toolchain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LEAN_MOD_ADD_PROOF_TOOLCHAIN", str(tmp_path / "none"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _cli(["doctor", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ready"] is False
    (lean,) = [c for c in report["checks"] if c["name"] == "Lean toolchain"]
    assert "lean-mod-add-proof install-lean" in lean["fix"]
    assert _cli(["doctor"]) == 1
    assert "Not ready" in capsys.readouterr().out


def test_cli_doctor_shows_the_double_for_what_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LEAN_MOD_ADD_PROOF_TOOLCHAIN", str(DOUBLE_DIR))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    code = _cli(["doctor", "--json"])
    report = json.loads(capsys.readouterr().out)
    (lean,) = [c for c in report["checks"] if c["name"] == "lean"]
    assert "toolchain double — not Lean" in lean["detail"]
    assert code == (0 if report["ready"] else 1)
