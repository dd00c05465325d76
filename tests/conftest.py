"""pytest configuration. Shared helpers live in `helpers.py` (importable because this file puts
the tests directory on sys.path)."""

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def comparator_host() -> None:
    """Skips the test where the comparator cannot run (`helpers.needs_comparator`)."""
    from helpers import require_comparator

    require_comparator()


@pytest.fixture
def isolated_cli_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A CLI test's own HOME (the default cache dir lives under it) and no toolchain found by
    elan or the environment; nothing remembered of an earlier self-test. Use it as
    `pytestmark = pytest.mark.usefixtures("isolated_cli_home")`."""
    from lean_mod_add_proof.grading import selftest

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "no-elan"))
    monkeypatch.delenv("LEAN_MOD_ADD_PROOF_TOOLCHAIN", raising=False)
    selftest.forget()


@pytest.fixture
def fresh_memos() -> Iterator[None]:
    """Nothing this process remembers of an earlier self-test or toolchain probe (the `lean
    --version` and `lake comparator` probes), before the test and after it. Use it as
    `pytestmark = pytest.mark.usefixtures("fresh_memos")`."""
    from lean_mod_add_proof.grading import selftest, toolchain
    from lean_mod_add_proof.grading.routes import comparator

    def forget() -> None:
        selftest.forget()
        toolchain.clear_probe_cache()
        comparator.clear_probe_cache()

    forget()
    yield
    forget()
