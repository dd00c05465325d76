"""Whose doing an `OSError` is: the host's (could not judge) or the input's (a verdict, or a
corrupt cache entry). One function, `host_errno`, decides for every place the grader touches
files after an untrusted step (the re-hash of trusted files after the build, the copy of the
build's outputs and of the export into the judge's directory, the check of a cache entry), and
for every error that escapes a grade (`process.host_fault_reason`).

The rule (issue 26): a file that differs, or is missing, a symlink, a FIFO, a directory where a
file should be, or unreadable because the untrusted step changed its mode, is the input's doing.
Running out of descriptors, memory, disk or processes, an I/O error, and (on files the untrusted
step could not reach) a permission error are the host's: they say nothing about the submission,
and a transient one (EMFILE while another grade holds many files open) must not become a verdict.
ENOSPC and EDQUOT are always the host's: the grade's own disk and file caps stop the submission
before it fills the disk (`doctor` checks that the work disk holds `max_concurrent` grades at
their caps), so a full disk is other grades' or the machine's.
"""

from __future__ import annotations

import errno

#: errno -> what it means for a grade, for the errors that are the host's wherever they occur.
HOST_ERRNOS: dict[int, str] = {
    errno.ENOSPC: "the work disk is full",
    errno.EDQUOT: "the disk quota is exhausted",
    errno.ENOMEM: "out of memory",
    errno.EAGAIN: "the host refused a new process or thread (EAGAIN: a process limit)",
    errno.EMFILE: "out of file descriptors (per process)",
    errno.ENFILE: "out of file descriptors (system-wide)",
    errno.EROFS: "the work disk is read-only",
    errno.EIO: "an I/O error on the work disk",
    errno.ENOBUFS: "out of kernel buffer space",
}
#: The host's only on files no untrusted step could reach (the grader's own files): on a file the
#: build could reach, `chmod 000` is the build's doing.
OWN_FILE_ERRNOS: dict[int, str] = {
    errno.EACCES: "the grader was denied access to its own file",
    errno.EPERM: "the grader was denied an operation on its own file",
}


def host_errno(exc: OSError, *, grader_files: bool = False) -> str | None:
    """What `exc` says about the host, as "<what> (<strerror>[: <file>])", or None when it may be
    the input's doing (a verdict, or a cache entry to rebuild). `grader_files`: the file is one
    no untrusted step could reach (the cache under the sandbox, a file the grader created outside
    the build's sandbox), so a permission error there is the host's too. Pure."""
    code = exc.errno
    what = HOST_ERRNOS.get(code) if code is not None else None
    if what is None and grader_files and code is not None:
        what = OWN_FILE_ERRNOS.get(code)
    if what is None:
        return None
    where = f": {exc.filename}" if exc.filename else ""
    return f"{what} ({exc.strerror or exc}{where})"
