"""The bwrap prefix: its shape (pure), and with a real bwrap where /tmp and the package land."""

from __future__ import annotations

import inspect
import subprocess
from pathlib import Path

import pytest

from lean_mod_add_proof.grading import sandbox

PROBE = sandbox.probe_sandbox()
needs_bwrap = pytest.mark.skipif(not PROBE.available, reason=f"needs a working bwrap: {PROBE.reason}")
LAYOUT = (sandbox.HostEntry("/usr", None), sandbox.HostEntry("/bin", "usr/bin"))


def argv_for(pkg: Path, tmp_dir: Path | None, readonly: tuple[Path, ...] = ()) -> list[str]:
    return sandbox.bwrap_argv(
        "bwrap",
        layout=LAYOUT,
        toolchain_dir=Path("/opt/tc"),
        package_dir=pkg,
        readonly_files=readonly,
        env={"PATH": "/usr/bin", "HOME": str(pkg)},
        tmp_dir=tmp_dir,
    )


def index_of(argv: list[str], *words: str) -> int:
    for i in range(len(argv) - len(words) + 1):
        if argv[i : i + len(words)] == list(words):
            return i
    raise AssertionError(f"{words} not in {argv}")


def test_tmp_dir_is_bound_as_tmp_before_the_toolchain_package_and_trusted_files(tmp_path: Path) -> None:
    pkg, tmp = tmp_path / "grade" / "package", tmp_path / "grade" / "tmp"
    argv = argv_for(pkg, tmp, (pkg / "lakefile.toml",))
    at_tmp = index_of(argv, "--bind", str(tmp), "/tmp")
    at_tc = index_of(argv, "--ro-bind", "/opt/tc", "/opt/tc")
    at_pkg = index_of(argv, "--bind", str(pkg), str(pkg))
    at_ro = index_of(argv, "--ro-bind", str(pkg / "lakefile.toml"), str(pkg / "lakefile.toml"))
    # later mounts cover earlier ones: /tmp first, so a package under the host's /tmp stays visible
    assert index_of(argv, "--proc", "/proc") < at_tmp < at_tc < at_pkg < at_ro
    assert "--tmpfs" not in argv
    # a session of its own: bwrap is in no group a sandbox process can signal (the review of issue
    # 39, finding 1; as Lake's own sandbox, lean4 src/lake/Lake/CLI/Check.lean `buildSandboxArgs`)
    assert argv[:6] == ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    assert argv[-3:] == ["--chdir", str(pkg), "--"]


def test_root_dev_and_proc_are_remounted_read_only_after_every_mount_under_them(tmp_path: Path) -> None:
    """bwrap's root and /dev are RAM no cap counts, a writable /proc gives `/proc/N/mem` and
    `oom_score_adj` (the review of issue 39, findings 2 and 3): each is remounted read-only after
    the last mount under it (`--remount-ro` changes only the mount named, so /tmp, /dev/shm, the
    package and the trusted files stay as bound), in the probe's argv too."""
    pkg = tmp_path / "grade" / "package"
    for argv in (argv_for(pkg, tmp_path / "tmp", (pkg / "lakefile.toml",)), argv_for(pkg, None)):
        last_mount = max(i for i, a in enumerate(argv) if a in ("--bind", "--ro-bind", "--tmpfs", "--dev"))
        remounts = [i for i, a in enumerate(argv) if a == "--remount-ro"]
        assert [argv[i + 1] for i in remounts] == ["/", "/dev", "/proc"], argv
        assert last_mount < min(remounts) and max(remounts) < argv.index("--chdir"), argv


def test_without_tmp_dir_tmp_is_a_tmpfs(tmp_path: Path) -> None:
    argv = argv_for(tmp_path / "pkg", None)
    assert index_of(argv, "--tmpfs", "/tmp") < index_of(
        argv, "--bind", str(tmp_path / "pkg"), str(tmp_path / "pkg")
    )


def test_no_size_option_bubblewrap_0_8_lacks_it() -> None:
    assert "tmp_size_mb" not in inspect.signature(sandbox.bwrap_argv).parameters
    assert "--size" not in argv_for(Path("/p"), Path("/t")) + argv_for(Path("/p"), None)


def grade(tmp_path: Path) -> tuple[Path, Path]:
    """A grade directory under pytest's tmp_path, i.e. under the host's /tmp: the awkward case
    where the package's own path lies inside the /tmp the sandbox replaces."""
    pkg, tmp = tmp_path / "grade" / "package", tmp_path / "grade" / "tmp"
    pkg.mkdir(parents=True)
    tmp.mkdir()
    (pkg / "trusted.txt").write_text("T\n")
    return pkg, tmp


def in_sandbox(pkg: Path, tmp: Path, script: str) -> subprocess.CompletedProcess[str]:
    assert PROBE.bwrap is not None
    argv = sandbox.bwrap_argv(
        PROBE.bwrap,
        layout=sandbox.host_layout(),
        toolchain_dir=None,
        package_dir=pkg,
        readonly_files=(pkg / "trusted.txt",),
        env={"PATH": "/usr/bin:/bin", "TMPDIR": "/tmp"},
        tmp_dir=tmp,
    )
    return subprocess.run([*argv, "sh", "-c", script], capture_output=True, text=True, timeout=20)


@needs_bwrap
def test_sandbox_tmp_is_the_grade_tmp_dir_and_the_package_stays_writable(tmp_path: Path) -> None:
    pkg, tmp = grade(tmp_path)
    assert str(pkg).startswith("/tmp/")
    done = in_sandbox(pkg, tmp, "echo x > /tmp/f && echo y > out && mktemp && pwd && (echo z > trusted.txt)")
    assert done.returncode != 0 and "Read-only file system" in done.stderr  # the trusted file
    made, cwd = done.stdout.split()
    assert cwd == str(pkg)
    assert (tmp / "f").read_text() == "x\n"
    assert (tmp / Path(made).relative_to("/tmp")).exists()
    assert (pkg / "out").read_text() == "y\n"
    assert (pkg / "trusted.txt").read_text() == "T\n"


@needs_bwrap
@pytest.mark.parametrize("target", ["elsewhere", "/usr"])
def test_a_symlink_planted_in_tmp_cannot_move_the_package(tmp_path: Path, target: str) -> None:
    """bwrap creates the package's mount point inside the bound /tmp (it may lie under the
    host's /tmp). A command that swaps a directory on that path for a symlink makes the next
    command's bwrap fail (absolute target) or mount the same package, with the same read-only
    files, somewhere else (relative target): it never sees another package."""
    pkg, tmp = grade(tmp_path)
    top = "/" + pkg.parts[1] + "/" + pkg.parts[2]  # e.g. /tmp/pytest-of-root
    first = in_sandbox(
        pkg, tmp, f"mv {top} /tmp/old && mkdir -p /tmp/{target.strip('/')} && ln -s {target} {top}"
    )
    assert first.returncode == 0, first.stderr
    second = in_sandbox(pkg, tmp, "cat trusted.txt; (echo z > trusted.txt) 2>/dev/null || echo read-only")
    assert second.returncode != 0 or second.stdout == "T\nread-only\n"
    assert (pkg / "trusted.txt").read_text() == "T\n"


@needs_bwrap
def test_the_probe_still_passes_with_its_tmpfs() -> None:
    assert sandbox.probe_sandbox(refresh=True).available


# ---- the probe: probed again after a failure ---------------------------------------------------


def test_a_sandbox_failure_forgets_the_probe_and_a_failed_probe_expires(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runs: list[str] = []

    def fake_run(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        runs.append(argv[0])
        return subprocess.CompletedProcess(argv, 1, "", "bwrap: setting up uid map: Permission denied\n")

    monkeypatch.setattr(sandbox, "find_bwrap", lambda: "/usr/bin/bwrap")
    monkeypatch.setattr(sandbox.subprocess, "run", fake_run)
    monkeypatch.setattr(sandbox, "_probe", sandbox.SandboxProbe(True, "bwrap works", "/usr/bin/bwrap"))
    monkeypatch.setattr(sandbox, "_ever_worked", True)
    assert sandbox.probe_sandbox().available and runs == []  # cached
    sandbox.forget_probe()  # what a grade does when its sandbox did not start
    failed = sandbox.probe_sandbox()
    assert not failed.available and "setting up uid map: Permission denied" in failed.reason
    assert failed.worked_before and len(runs) == 1
    assert sandbox.probe_sandbox() is failed and len(runs) == 1  # believed for a while...
    now = sandbox.time.monotonic()
    monkeypatch.setattr(sandbox.time, "monotonic", lambda: now + sandbox.FAILED_PROBE_TTL_S + 1)
    assert sandbox.probe_sandbox() is not failed and len(runs) == 2  # ...then tried again


def test_auto_does_not_fall_back_once_the_sandbox_worked() -> None:
    never = sandbox.SandboxProbe(False, "bwrap (bubblewrap) is not installed", None)
    broke = sandbox.SandboxProbe(False, "bwrap does not work here: x", "/usr/bin/bwrap", worked_before=True)
    assert sandbox.decide_sandbox("auto", never) == (False, None)  # a host without bwrap
    use, error = sandbox.decide_sandbox("auto", broke)
    assert not use and error is not None and "worked earlier in this process" in error
    assert (
        sandbox.decide_sandbox("on", broke)[1]
        == "sandbox required (sandbox=on) but bwrap does not work here: x"
    )
    assert sandbox.decide_sandbox("off", None) == (False, None)


def test_a_seccomp_descriptor_is_handed_to_bwrap_before_the_command(tmp_path: Path) -> None:
    """The signal filter (grading/signal_filter.py) reaches bwrap as `--add-seccomp-fd FD`, an
    option, so before `--`; without one there is no such option."""
    pkg = tmp_path / "package"
    plain = argv_for(pkg, tmp_path / "tmp")
    assert "--add-seccomp-fd" not in plain
    filtered = sandbox.bwrap_argv(
        "bwrap",
        layout=LAYOUT,
        toolchain_dir=None,
        package_dir=pkg,
        readonly_files=(),
        env={},
        tmp_dir=tmp_path / "tmp",
        seccomp_fd=7,
    )
    assert index_of(filtered, "--add-seccomp-fd", "7") < filtered.index("--")
    assert filtered[-1] == "--"
