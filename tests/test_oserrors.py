"""`oserrors.host_errno`, the one function that decides whose an OSError is (issue 26): the
host's (could not judge) or the input's (a verdict, or a cache entry to rebuild). Pure."""

from __future__ import annotations

import errno
import os

import pytest

from lean_mod_add_proof.grading.oserrors import host_errno
from lean_mod_add_proof.grading.process import host_fault_reason

HOST = [errno.EMFILE, errno.ENFILE, errno.EIO, errno.ENOMEM, errno.ENOSPC, errno.EDQUOT, errno.EROFS]
#: What an untrusted step can do to a file it reaches: remove it, swap it for a symlink or a
#: directory, or take its mode away.
INPUT = [errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EISDIR, errno.EINVAL, errno.EACCES, errno.EPERM]


def err(code: int, filename: str | None = "/w/g/package/x.olean") -> OSError:
    return OSError(code, os.strerror(code), filename)


@pytest.mark.parametrize("code", HOST)
def test_the_hosts_errors_are_the_hosts_wherever_they_occur(code: int) -> None:
    for own in (False, True):
        why = host_errno(err(code), grader_files=own)
        assert why is not None and os.strerror(code) in why and "/w/g/package/x.olean" in why


@pytest.mark.parametrize("code", INPUT)
def test_what_an_untrusted_step_can_cause_is_the_inputs(code: int) -> None:
    assert host_errno(err(code)) is None


@pytest.mark.parametrize("code", [errno.EACCES, errno.EPERM])
def test_a_permission_error_on_the_graders_own_file_is_the_hosts(code: int) -> None:
    """No untrusted step could have changed a mode there (the cache under the sandbox, a file the
    grader created outside the build's sandbox)."""
    why = host_errno(err(code, None), grader_files=True)
    assert why is not None and why.endswith(f"({os.strerror(code)})")


def test_an_error_without_an_errno_is_nobodys_host_fault() -> None:
    assert host_errno(OSError("no errno")) is None


def test_every_escaping_error_is_classified_by_the_same_function() -> None:
    """`process.host_fault_reason` (an error escaping a grade) gives the same answer."""
    for code in HOST + INPUT:
        exc = err(code)
        assert host_fault_reason(exc) == host_errno(exc), code
