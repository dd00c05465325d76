"""What the host did to one run of `lake comparator`, read from facts the submission cannot write:
whether Lake's bubblewrap started each of its steps, how low the work disk ran, whether the OOM
killer acted (named in a rejection's reason only: verdict.py `host_fault`). Lake's own words
(`bwrap: ...`, `resource exhausted ...`, `Child exited with 137`) go into the reason only: they
share the output with the submission's build, and a full disk can be silent (lean4
src/library/module.cpp writes an `.olean` with `out.write` unchecked).

Sources (leanprover/lean4 unless named; first-contact.md Q2/Q3 quotes them):
- src/lake/Lake/CLI/Check.lean (stored 0243d9f4) runs every step as `env -i <bwrap> <args> --
  <cmd>` (`sandboxSpawnArgs`), `<bwrap>` being `COMPARATOR_BWRAP` or `bwrap`, resolved by
  `which` (`whichExe`); any non-zero status is `Child exited with N`, and the run exits 1.
- bubblewrap v0.8.0 (containers/bubblewrap): `--json-status-fd FD` writes `{ "child-pid": ... }`
  and, only once its command ran and exited, `{ "exit-code": N }` (128 + N for a signal N); a
  set-up failure (`Can't mkdir ...`, `Creating new namespace failed ...`) writes no `exit-code`
  and exits 1; the fd is closed in the sandboxed child (`bubblewrap.c`; measured with bwrap
  0.8.0, process.py `sandbox_exit_code`, also through `env -i` as Lake runs it).
- Lake's own tests replace bwrap through `COMPARATOR_BWRAP` ("the documented escape hatch",
  tests/lake/tests/fake-bwrap.sh), as `bwrap_wrapper` does.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from lean_mod_add_proof.grading.process import oom_kill_count
from lean_mod_add_proof.grading.workdirs import disk_full

#: Inside the grade's directory: the wrapper Lake runs as its bwrap, and where it records.
WRAPPER_FILE = "comparator-bwrap"
STATUS_DIR = "comparator-bwrap-status"
#: How often the work disk is looked at while the comparator runs (Lake's temporary files are
#: deleted on the way out, `withTempFile`, so a look at the end alone can miss the moment).
DISK_POLL_S = 0.1

#: Mount points Lake's sandbox mounts over `--ro-bind / /` (Check.lean `buildSandboxArgs`:
#: `--tmpfs` /home, /root, /run/user, /tmp, `--dev /dev`, `--proc /proc`; `forbiddenPaths`
#: `#["/run", "/var"]` for the build, export and kernel steps). bwrap creates a mount point it
#: lacks (`ensure_dir`, bubblewrap.c `setup_newroot`), which the read-only root refuses:
#: "Can't mkdir /run/user: Read-only file system", exit 1 (measured with bwrap 0.8.0). So each
#: must exist on the host. `/run/user` comes before the later `--tmpfs /run`.
LAKE_MOUNT_POINTS: tuple[str, ...] = ("/home", "/root", "/run/user", "/tmp", "/run", "/var", "/dev", "/proc")


def lake_sandbox_argv(bwrap: str, project: Path, toolchain_dir: Path, *, env_step: bool = False) -> list[str]:
    """The bwrap command line Lake gives a build step (or, `env_step`, its `lake env` step) of
    `project`, up to the `--` before the command (pure). Check.lean (stored 0243d9f4):
    `buildSandboxArgs`, then `--tmpfs` over `forbiddenPaths` (`/run`, `/var`; not for `lake env`),
    `--ro-bind` of the project and the toolchain (`leanPrefix`; Lake's home too, not modelled),
    `--bind` of the project's `.lake`, `--setenv HOME /tmp/home`, `--unshare-all
    --die-with-parent --new-session`, `--share-net` for `lake env` only, `--chdir` the project."""
    argv = [bwrap, "--ro-bind", "/", "/"]
    for path in ("/home", "/root", "/run/user", "/tmp"):
        argv += ["--tmpfs", path]
    argv += ["--dir", "/tmp/home", "--dev", "/dev", "--proc", "/proc", "--clearenv"]
    if not env_step:
        argv += ["--tmpfs", "/run", "--tmpfs", "/var"]
    for path in (project, toolchain_dir):
        argv += ["--ro-bind", str(path), str(path)]
    lake_dir = str(project / ".lake")
    argv += ["--bind", lake_dir, lake_dir, "--setenv", "HOME", "/tmp/home"]
    argv += ["--unshare-all", "--die-with-parent", "--new-session"]
    if env_step:
        argv.append("--share-net")
    return [*argv, "--chdir", str(project)]


def bwrap_wrapper(work_dir: Path, bwrap: str) -> Path:
    """Write the grade's `COMPARATOR_BWRAP`: a script (absolute paths only, since Lake runs it
    under `env -i`) that appends each sandbox's status documents to a file of its own in
    `work_dir/STATUS_DIR` and then becomes `bwrap --json-status-fd 3`. Returns its path."""
    status = work_dir / STATUS_DIR
    status.mkdir(mode=0o700)
    wrapper = work_dir / WRAPPER_FILE
    target = shlex.quote(str(status)) + '/"$$".json'
    wrapper.write_text(
        "#!/bin/sh\n"
        "# lean-mod-add-proof: Lake's bwrap for one comparator run; records whether each sandbox\n"
        "# started and how its command ended (bwrap --json-status-fd).\n"
        f"exec 3>>{target} || exit 125\n"
        f'exec {shlex.quote(bwrap)} --json-status-fd 3 "$@"\n',
        encoding="utf-8",
    )
    wrapper.chmod(0o700)
    return wrapper


@dataclass(frozen=True)
class SandboxStatus:
    """What the wrapper's status files say about the run's sandboxes."""

    steps: int = 0
    """Sandboxes the wrapper started (one status file each)."""
    unstarted: int = 0
    """Sandboxes whose bwrap recorded no `exit-code`: it failed before or while setting up."""
    killed: int = 0
    """Steps whose command died of SIGKILL (`exit-code` 137, bwrap's 128 + 9)."""


def read_status(work_dir: Path) -> SandboxStatus:
    """Read `work_dir/STATUS_DIR` (blocking). A file with fewer `exit-code` documents than
    sandboxes it records (`child-pid` documents, at least one: a clone that failed writes none)
    is a sandbox that never ran its command. Missing directory: no sandbox started."""
    try:
        names = sorted(os.listdir(work_dir / STATUS_DIR))
    except OSError:
        return SandboxStatus()
    steps = unstarted = killed = 0
    for name in names:
        try:
            text = (work_dir / STATUS_DIR / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        started = exits = 0
        for doc in _documents(text):
            started += "child-pid" in doc
            if isinstance(doc.get("exit-code"), int):
                exits += 1
                killed += doc["exit-code"] == 137
        tries = max(1, started)
        steps += tries
        unstarted += max(0, tries - exits)
    return SandboxStatus(steps=steps, unstarted=unstarted, killed=killed)


def _documents(text: str) -> list[dict[str, object]]:
    """The JSON objects of a status file, in order; a torn last one is dropped (pure)."""
    decoder = json.JSONDecoder()
    docs: list[dict[str, object]] = []
    at = 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return docs
        try:
            doc, at = decoder.raw_decode(text, at)
        except ValueError:
            return docs
        if isinstance(doc, dict):
            docs.append(doc)


class DiskWatch:
    """The work disk's low-water mark during a run: the first time `disk_full` said the disk
    holding `path` was full (workdirs.FULL_DISK_BYTES, or no free inode), looked at every
    DISK_POLL_S from `start()` to `stop()` and once more then."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.full: str | None = None
        self._task: asyncio.Task[None] | None = None

    def _look(self) -> None:
        if self.full is None:
            self.full = disk_full(self.path)

    async def _poll(self) -> None:
        while True:
            self._look()
            await asyncio.sleep(DISK_POLL_S)

    def start(self) -> None:
        self._task = asyncio.create_task(self._poll())

    async def stop(self) -> str | None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        self._look()
        return self.full


def cgroup_oom_kills(proc_cgroup: str = "/proc/self/cgroup", root: str = "/sys/fs/cgroup") -> int | None:
    """How many of the grader's processes (its cgroup and below) the OOM killer has killed, or
    None where no cgroup says. cgroup v2: `oom_kill` of `memory.events`, "the number of processes
    belonging to this cgroup killed by any kind of OOM killer" (Linux
    Documentation/admin-guide/cgroup-v2.rst); cgroup v1: `oom_kill` of `memory.oom_control`
    (Linux 4.13+, cgroup-v1/memory.rst). Where the cgroup's own directory is not mounted under
    its path (a container mounting its cgroup as the root), the mounted root's file. Unlike
    /proc/vmstat's machine-wide count (the host's, in a container), it moves only for the
    grader's own processes."""
    try:
        with open(proc_cgroup, encoding="utf-8") as f:
            entries = [ln.rstrip("\n").split(":", 2) for ln in f]
    except OSError:
        return None
    places: list[tuple[Path, str]] = []
    for entry in entries:
        if len(entry) != 3:
            continue
        _, controllers, path = entry
        rel = path.lstrip("/")
        if controllers == "":
            for base in (Path(root), Path(root) / "unified"):
                places += [(base / rel / "memory.events", "oom_kill"), (base / "memory.events", "oom_kill")]
        elif "memory" in controllers.split(","):
            base = Path(root) / "memory"
            places += [
                (base / rel / "memory.oom_control", "oom_kill"),
                (base / "memory.oom_control", "oom_kill"),
            ]
    for file, key in places:
        try:
            text = file.read_text(encoding="utf-8")
        except OSError:
            continue
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                try:
                    return int(value)
                except ValueError:
                    return None
    return None


def oom_kills() -> tuple[int | None, int | None]:
    """(the grader's cgroup count, the machine's count): read before and after a run."""
    return cgroup_oom_kills(), oom_kill_count()


def oom_kills_moved(
    before: tuple[int | None, int | None], after: tuple[int | None, int | None]
) -> bool | None:
    """Whether the OOM killer killed something during the run: the cgroup's count where it can be
    read both times (the precise one), else the machine's; None when neither can be told."""
    for was, now in zip(before, after, strict=True):
        if was is not None and now is not None:
            return now > was
    return None


def oom_killer_acted(before: tuple[int | None, int | None], after: tuple[int | None, int | None]) -> bool:
    """`oom_kills_moved`, True when it cannot be told (as routes/core.py `oom_killer_acted`);
    on this route it only words a rejection's reason (verdict.py `host_fault`)."""
    return oom_kills_moved(before, after) is not False
