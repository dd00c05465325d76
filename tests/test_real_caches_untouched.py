"""The test suite writes to none of the user's own caches (issue 41: `make test` filled the real
~/.cache/uv and ~/.cache/verifiers through its end-to-end runs). conftest.py gives pytest and
everything it starts a HOME of the run's own and uv a cache of the checkout's own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import conftest

from lean_mod_add_proof.taskset import own_uv


def test_home_and_the_caches_under_it_are_the_runs_own() -> None:
    from verifiers.v1.utils import paths

    real = conftest.REAL_HOME
    assert Path.home() == conftest.TEST_HOME != real
    assert paths.CACHE_DIR == conftest.TEST_HOME / ".cache" / "verifiers"
    assert Path(os.environ["UV_CACHE_DIR"]) == conftest.TEST_UV_CACHE != real / ".cache" / "uv"
    for name, path in conftest.TEST_XDG.items():
        assert Path(os.environ[name]) == path and path.is_relative_to(conftest.TEST_HOME)


def test_a_child_process_sees_the_same() -> None:
    """vf-eval, the null harness's `uv run`, and the CLI run as children: they inherit both."""
    code = (
        "import os; from verifiers.v1.utils.paths import CACHE_DIR; "
        "print(CACHE_DIR); print(os.environ['UV_CACHE_DIR'])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    cache_dir, uv_cache = done.stdout.splitlines()
    assert Path(cache_dir) == conftest.TEST_HOME / ".cache" / "verifiers"
    assert Path(uv_cache) == conftest.TEST_UV_CACHE
    uv = own_uv()
    if uv is not None:  # uv itself reports the cache it would use
        reported = subprocess.run([str(uv), "cache", "dir"], capture_output=True, text=True, timeout=120)
        assert Path(reported.stdout.strip()) == conftest.TEST_UV_CACHE, reported.stderr
