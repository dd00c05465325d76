"""Running one untrusted command: its own process group, a shared deadline, OS limits, an output
cap, live per-grade caps on its whole process tree, and a kill of that whole tree whatever
happens (normal exit, deadline, a cap, cancellation).

How the tree is followed. A watcher thread per command (threads are reused: `_WatcherThreads`)
looks at /proc every `RSS_POLL_S` (the first look after `FIRST_POLL_S`; the later ones of every
watcher fall due together, on one grid). New pids are found by one look shared by every watcher
of the grader process (`_Discovery`): it reads the stat of just the pids allocated since the last
look (from /proc/sys/kernel/ns_last_pid; a whole listing of /proc when that cannot be read or is
too many), so a look costs the same on a host with thousands of processes, and it files each new
process with the tree of its parent, once, however many commands run. Each watcher then reads
its own members. A tree keeps every process it has ever seen descend from the command, by pid
*and* start time, so a reused pid is never counted or killed, and a process stays tracked after
its parent dies:
`setsid`, `setpgid`, bash job control and a double fork do not hide a process once seen. A process
that leaves the tree before any look (its parent exits within milliseconds, the classic double
fork) is still found: the command runs with a random marker variable (`TREE_ENV_VAR`, visible to
the command) in its environment, and a process started after the command, reparented to init or to
one of the grader's ancestors, and carrying this run's marker, counts as the command's. Processes
inside the bubblewrap sandbox are visible in the host's /proc under their host pids and their
parent chain goes through bwrap, so the same walk covers sandboxed commands. Threads are not
processes: their memory is in their process's RSS.

Caps (`Limits`), checked by polling:
- memory: the summed resident set (RSS) of every live process of the tree, every `RSS_POLL_S`;
- processes: how many processes of the tree exist at once (zombies included, threads not), every
  `RSS_POLL_S` (RLIMIT_NPROC is ignored for root, even inside bwrap, so it cannot do this);
- disk: the allocated size of everything under `Limits.disk_paths` (symlinks not followed, hard
  links counted once) plus the files on their disk that the tree holds open with no name left
  (`held_deleted`: unlinked while open, or O_TMPFILE; the walk cannot see them, their blocks stay
  taken), every `DISK_POLL_S` and once more when the command ends;
- directory entries: how many files, directories and links there are under `Limits.disk_paths`,
  in the same walk, plus one per held nameless file (an inode flood of empty files fills no
  blocks but exhausts a disk's inodes);
- not a cap: the free space and free inodes of the disk holding the first of `Limits.disk_paths`,
  every `RSS_POLL_S` (one statvfs), kept as a low-water mark (`CommandOutcome.low_free_bytes`,
  `low_free_inodes`) by which a failure is judged (routes/steps.py `LowWater`). A reading under a
  mark of full (`workdirs.ENOSPC_MARK_BYTES`, or no free inode) is kept only once confirmed
  (disk.py): at once (at most 1/(1 + `CONFIRM_REST`) of a core), a statvfs, the held files, the
  walk, the held files, a statvfs; the grade's usage over a cap stops it by that cap, and within
  its caps the reading is kept, with that usage (`CommandOutcome.low_own`), if the disk was still
  under the mark at both ends;
- file size: RLIMIT_FSIZE via `prlimit` (the kernel stops the write with SIGXFSZ);
- CPU seconds and address space: RLIMIT_CPU / RLIMIT_AS via `prlimit`, far backstops only. RLIMIT_CPU
  counts each process's CPU time over all its threads, so it is sized from the deadline times
  the threads a process may use (`cpu_limits`). Only its soft limit is set (the hard one is
  unlimited): the kernel sends SIGXCPU at it and once a CPU second after, and never SIGKILL, so
  a process that catches SIGXCPU runs on to the deadline and gets the timeout (a hard limit's
  SIGKILL could be told from one from outside only by catching the process near the soft limit
  between two looks, which a many-threaded build on a many-core host outruns). No RLIMIT_AS at
  all with `Limits.address_space_cap` off (`lake comparator`, see routes/comparator/run.py).
  `Limits.cpu_seconds` sets that soft limit to a budget of the caller's instead (a bundled
  checker's, routes/checkers.py; `command_cpu_limits`), and `CommandOutcome.peak_cpu_s` says
  what the tree's busiest process used.
When a cap is exceeded the whole tree is SIGKILLed and `CommandOutcome.limit_exceeded` says why,
in exactly one of these forms: `memory cap exceeded (N MiB > M MiB)`,
`process cap exceeded (more than N processes)`, `disk cap exceeded (N MiB > M MiB)`,
`file cap exceeded (more than N directory entries)`. A command killed by SIGXCPU, the CPU
backstop's signal, gets `CPU time cap exceeded (N CPU seconds in one process)`: the kernel's
kill for the cap, not a signal from outside.

Residual limits (say these plainly wherever the caps are described):
- Without the sandbox, a process that leaves the command's tree before any look has seen it
  in the tree *and* hides the marker is not found and outlives the grade. Leaving the tree
  unseen takes a double fork (plus `setsid`, to leave the group) whose middle process exits
  before the next look (a poll is every 50 ms), or none at all: `clone(CLONE_PARENT)` from the
  command's first process gives a child whose parent is the grader. Hiding the marker takes no
  exec: an `execve` with a fresh environment (`env -i`), the environment's strings overwritten
  in place (hidden from every reader), `prctl(PR_SET_DUMPABLE, 0)` (its environment is then
  unreadable to a grader that is not root: reproduced, 3 escapes in 6 runs, review B P-2), or,
  as root, `prctl(PR_SET_MM_ENV_START/END)`.
- Without the sandbox, a command running as root can also give a child a pid outside the ones
  a look reads (a look reads only the pids allocated since the last one, from ns_last_pid):
  by writing /proc/sys/kernel/ns_last_pid around a fork (a write needs CAP_SYS_ADMIN in the
  namespace: `pid_ns_ctl_handler`, torvalds/linux kernel/pid_namespace.c at 225778d68d98), or
  with `clone3` and `set_tid` (taken with `idr_alloc`, the allocator's cursor untouched, after
  `checkpoint_restore_ns_capable`: `alloc_pid`, kernel/pid.c at 006568ab4c5c). That child is
  never looked at, marker or not, and outlives the grade. So does a child whose pid a fork
  flood gives after taking the allocator full circle (pid_max pids) between two looks less than
  `_RANGE_GAP_S` apart, and a fork whose new pid stays invisible in /proc for longer than
  `_UNSEEN_S` (0.25 s): `alloc_pid` makes the pid visible, and the new task is found under it
  only once `copy_process` has called `attach_pid` (same file); a look that finds nothing there
  for that long gives the pid up.
- Without the sandbox, an orphan's environment is read to find its marker, and that read takes
  the orphan's memory-map lock: an orphan (or a writer queued on that lock: a hung filesystem,
  an unsandboxed root with `userfaultfd`) can make it block. The read holds no lock of the
  grader's, so the other watchers and spawns go on, and their sweeps wait for that orphan for
  at most `SWEEP_S`; but the watcher whose look is reading stops until the read returns: no
  caps for its tree, and its grade waits for the grade watchdog.
- A host fault while reading /proc (the grader out of descriptors or memory) stops the watcher:
  the command is a `HostFault` (could not judge) and its tree is killed, but a process that
  left the group and whose stat cannot be read then cannot be killed by pid and start time,
  and is not killed.
- Unsandboxed is no security boundary anyway: the command runs as the grader's user and can
  signal, ptrace or read the grader. With the sandbox on (bwrap: PID namespace,
  `--die-with-parent`) nothing survives: killing bwrap tears the whole namespace down. But
  bwrap's child takes `--die-with-parent` (PR_SET_PDEATHSIG) only once the sandbox is set up,
  just before it starts the command: killing bwrap *alone* in those first milliseconds leaves
  the child to run the command unwatched. The grader never does that (its kill is the process
  group, which the child is in, and the watcher follows the child); a grader killed outright
  in that window leaves it to the next grader's sweep (the child carries the marker).
  Likewise without the sandbox, an orphan found in the middle of an exec (its environment
  reads empty until the exec is over) is waited for by the final sweep for at most `SWEEP_S`;
  one still in its exec after that (a host far past overloaded) outlives the grade.
- Caps are polled, not enforced by the kernel: memory can overshoot by what the tree touches in
  one poll (~50 ms; the address-space backstop stops any single process at
  `ADDRESS_SPACE_BACKSTOP_MB`), a fork burst can briefly exceed the process cap, and disk can
  overshoot by ~0.5 s of writing (each file stays under RLIMIT_FSIZE, but `fallocate` with
  FALLOC_FL_KEEP_SIZE is not held to it: ext4 and tmpfs check the size limit only when the
  size grows, `inode_newsize_ok` in `ext4_fallocate` and `shmem_fallocate`).
- The disk cap sees a nameless file only through a descriptor in /proc/PID/fd of a tree
  process. Not seen: a file held only by a memory mapping (its size is in /proc/PID/map_files,
  readable only with CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN; the low-water confirmation keeps
  no reading while the tree maps a removed file on the work disk or a process of it is exiting,
  `holds_unseen_space`, so a failure then is a verdict, also if the host filled the disk and
  the removed file the build maps is the host's: a toolchain on the work disk replaced while it
  runs), by io_uring's registered files, by a descriptor in flight in a unix socket (SCM_RIGHTS), or in a
  thread's own descriptor table (`unshare(CLONE_FILES)`; only /proc/PID/task/TID/fd shows it,
  and reading every thread's table at each look would cost a multiple of the scan). Build-time
  code holding one of these can make the disk look full while the grade's measured usage stays
  small, and a failure then is could not judge. So can code that moves a big file (a rename,
  instant) from a directory the confirmation's walk has not reached to one it has passed, or
  frees and takes the space again between the two statvfs of a confirmation (a window of one
  walk of the grade's files: milliseconds). The sound fix is kernel accounting: the grade's
  writable places on a filesystem or quota of their own, so running out inside it is the
  grade's own doing (the review of the signal filter, finding 4).
- Summed RSS counts a page shared by several processes (shared libraries, copy-on-write pages
  after fork, mmapped .olean files) once per process, so it overstates a tree whose processes
  share memory: it errs towards stopping early.
- The disk walk's time grows with the number of files under `disk_paths` (about 5 µs a file;
  the walk at the end of a command is on its critical path). The scan for held nameless files
  reads /proc/PID/fd of every live process of the tree at each walk, a readlink a descriptor
  (benchmarks/disk_poll.py: about 2 µs each; a tree holding more than `HELD_SCAN_MAX_FDS` in
  all is not read but over the disk cap, and so is a process whose descriptors cannot be read
  while it runs as the grader's user: it is hiding them).
- With the sandbox, bwrap reports a command killed by signal N as exit 128+N; a command that
  itself exits with 129..192 is therefore reported as killed by a signal too.

Exit status (`CommandRecord`), the same with and without the sandbox: `signal` is the signal
that ended the command and then `exit_code` is None; `exit_code` is also None when the grader
killed the command (deadline, a cap, cancellation; `signal` is then normally 9, SIGKILL).
Otherwise `exit_code` is the command's exit code and `signal` None. A disk cap found only by the
walk at the end leaves the exit code as it was (the command was not killed).

Host faults (`HostFault`): what says nothing about the command, raised instead of an outcome, so
no caller can read it as the command's own failure:
- the sandbox did not run the command. bwrap gets `--json-status-fd`; it writes
  `{"exit-code": N}` there only once the command it started has exited, so no such document
  (and no kill by the grader) means bwrap failed before or while setting up the sandbox, or was
  itself killed from outside (see `sandbox_status`). The command cannot reach that descriptor:
  bwrap does not pass it on. User-
  namespace exhaustion was measured (bubblewrap 0.8.0, kernel limits lowered inside a private
  user namespace: `max_user_namespaces`, `max_pid_namespaces`, `max_mnt_namespaces` or
  `max_net_namespaces` = 0): bwrap exits 1 with "Creating new namespace failed: nesting depth
  or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)" and writes no document at all;
- the command could not be started (a missing program, out of memory, no more processes, file
  descriptors or disk: the errno of the spawn), or its program was gone when it failed (a
  toolchain or bwrap removed while grading);
- the watcher could not watch (out of memory, no thread).

Layout: a package of one idea per module, listed bottom to top. Each imports only modules above
it in this list (and `oserrors`, `result`, `workdirs` of grading/); none imports this
`__init__`, which only re-exports the public names, so there is no import cycle and data flows
one way: from /proc up to `run_command`.
- proc.py: reading /proc (a pid's stat, status and environment, ns_last_pid, the grader's
  ancestors) and the two kills (one process by pid and start time; a process group).
- limits.py: `Limits`; the `prlimit` wrapper and its CPU backstop (`prlimit_argv`,
  `cpu_limits`, `cpu_cap_reason`, `find_prlimit`); the disk walk (`disk_and_entries`) and the
  files a tree holds with no name left (`held_deleted`); `oom_kill_count`. Uses proc.
- disk.py: one command's disk (`_GradeDisk`): the disk and file caps over the walk and the held
  files, and the work disk's low-water mark with its confirmation (`OwnUse`). Uses limits.
- faults.py: `HostFault` and `host_fault_reason`; the spawn's errnos; bwrap's status document
  (`sandbox_exit_code`).
- markers.py: a run's marker (`TREE_ENV_VAR`, its token, `scope_tag`) and the sweep of what a
  dead grader left (`kill_dead_graders_processes`). Uses proc.
- discovery.py: the shared look (`_Discovery` and its one instance, `_discovery`). Uses proc and
  markers; it sees a tree only as the `_Tree` protocol, so it never imports the watcher.
- output.py: a started command's output and exit, followed from the event loop (`_Capture`,
  `_Run`), and `exit_status`.
- watcher.py: the thread that follows one tree, enforces the caps and kills the tree
  (`_Watcher`), and the threads that run watchers (`_WatcherThreads`). Uses discovery (its
  polls ask for the shared look), limits and proc.
- commands.py: `run_command` and its parts: the argv, the marker, the spawn, `_watch` (the
  wait for the end or the deadline) and `_finish` (the clean-up), and its result
  (`CommandOutcome`, or a `HostFault` raised); also `child_env` and `CommandGroup`. `_watch`
  and `_finish` are the event-loop side of one command and build its `CommandOutcome`, so they
  live here with it: in watcher.py they would need commands.py's names, a cycle. The watcher
  thread reports back only through its own attributes and its `done` future, which `_watch`
  reads. tests/test_grading_layout.py checks this order and the size limits."""

from __future__ import annotations

from lean_mod_add_proof.grading.process.commands import (
    DRAIN_AFTER_KILL_S,
    CommandGroup,
    CommandOutcome,
    child_env,
    command_cpu_limits,
    command_group,
    run_command,
)
from lean_mod_add_proof.grading.process.disk import CONFIRM_REST, OwnUse
from lean_mod_add_proof.grading.process.faults import HostFault, host_fault_reason, sandbox_exit_code
from lean_mod_add_proof.grading.process.limits import (
    ADDRESS_SPACE_BACKSTOP_MB,
    CPU_PER_THREAD,
    CPU_SLACK_S,
    ENTRY_MIN_BYTES,
    HELD_SCAN_MAX_FDS,
    UNREADABLE_BYTES,
    HeldFiles,
    Limits,
    cpu_cap_reason,
    cpu_limits,
    disk_and_entries,
    disk_usage,
    find_prlimit,
    held_deleted,
    holds_unseen_space,
    oom_kill_count,
    prlimit_argv,
)
from lean_mod_add_proof.grading.process.markers import TREE_ENV_VAR, kill_dead_graders_processes, scope_tag
from lean_mod_add_proof.grading.process.output import exit_status
from lean_mod_add_proof.grading.process.watcher import (
    DISK_POLL_S,
    FIRST_POLL_S,
    RSS_POLL_S,
    SWEEP_S,
    WATCHER_IDLE_S,
)

__all__ = [
    "ADDRESS_SPACE_BACKSTOP_MB",
    "CONFIRM_REST",
    "CPU_PER_THREAD",
    "CPU_SLACK_S",
    "DISK_POLL_S",
    "DRAIN_AFTER_KILL_S",
    "ENTRY_MIN_BYTES",
    "FIRST_POLL_S",
    "HELD_SCAN_MAX_FDS",
    "RSS_POLL_S",
    "SWEEP_S",
    "TREE_ENV_VAR",
    "UNREADABLE_BYTES",
    "WATCHER_IDLE_S",
    "CommandGroup",
    "CommandOutcome",
    "HeldFiles",
    "HostFault",
    "Limits",
    "OwnUse",
    "child_env",
    "command_cpu_limits",
    "command_group",
    "cpu_cap_reason",
    "cpu_limits",
    "disk_and_entries",
    "disk_usage",
    "exit_status",
    "find_prlimit",
    "held_deleted",
    "holds_unseen_space",
    "host_fault_reason",
    "kill_dead_graders_processes",
    "oom_kill_count",
    "prlimit_argv",
    "run_command",
    "sandbox_exit_code",
    "scope_tag",
]
