"""`install-lean`: a pinned elan installer (a release tag, never `master`) and the elan home it
really uses, printed before anything else. Offline only: no download is attempted here that
could succeed (the script URL points at a closed local port)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import DOUBLE_DIR

from lean_mod_add_proof.cli import main
from lean_mod_add_proof.cli.setup import (
    ELAN_INIT_URL,
    ELAN_RELEASE,
    MANUAL_STEPS,
    elan_home_and_source,
    manual_steps,
)
from lean_mod_add_proof.grading.toolchain import ELAN_DIR_NAME, TOOLCHAIN_ENV, clear_probe_cache

CLOSED_PORT_URL = "http://127.0.0.1:9/elan-init.sh"


def test_installer_is_pinned_to_a_release_tag() -> None:
    assert re.fullmatch(r"v\d+\.\d+\.\d+", ELAN_RELEASE)
    assert ELAN_INIT_URL == f"https://raw.githubusercontent.com/leanprover/elan/{ELAN_RELEASE}/elan-init.sh"
    assert "master" not in ELAN_INIT_URL and "master" not in MANUAL_STEPS
    assert ELAN_INIT_URL in MANUAL_STEPS


def test_elan_home_and_source(tmp_path: Path) -> None:
    assert elan_home_and_source(str(tmp_path / "a"), {"ELAN_HOME": "/x"}) == (tmp_path / "a", "--elan-home")
    assert elan_home_and_source(None, {"ELAN_HOME": str(tmp_path / "b")}) == (tmp_path / "b", "$ELAN_HOME")
    assert elan_home_and_source(None, {}) == (Path.home() / ".elan", "default")


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # no elan on PATH
    monkeypatch.delenv(TOOLCHAIN_ENV, raising=False)
    clear_probe_cache()


@pytest.mark.usefixtures("offline")
@pytest.mark.parametrize("via", ["flag", "env"])
def test_prints_the_elan_home_it_uses(capsys, tmp_path: Path, monkeypatch, via: str) -> None:
    home = tmp_path / "elan"
    argv = ["install-lean", "--script-url", CLOSED_PORT_URL, "--timeout", "3"]
    if via == "flag":
        monkeypatch.setenv("ELAN_HOME", str(tmp_path / "other"))
        argv += ["--elan-home", str(home)]
    else:
        monkeypatch.setenv("ELAN_HOME", str(home))
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 1 and "needs internet access" in err  # a problem found, not a usage error
    source = "--elan-home" if via == "flag" else "$ELAN_HOME"
    assert out.splitlines()[0] == f"elan home: {home} ({source})"
    # the manual steps are for the elan home in use, not ~/.elan
    assert f"{home}/bin/elan toolchain install" in err and f"ELAN_HOME={home} sh -s" in err
    assert "~/.elan" not in err


def test_manual_steps_name_the_elan_home(tmp_path: Path) -> None:
    assert manual_steps() == MANUAL_STEPS and "~/.elan/bin/elan toolchain install" in MANUAL_STEPS
    assert manual_steps(Path.home() / ".elan") == MANUAL_STEPS
    odd = tmp_path / "my elan"
    steps = manual_steps(odd)
    assert f"ELAN_HOME='{odd}' '{odd}'/bin/elan toolchain install" in steps  # quoted for the shell
    assert f"then run `ELAN_HOME='{odd}' lean-mod-add-proof doctor`" in steps


@pytest.mark.usefixtures("offline")
def test_already_installed_names_the_toolchain_and_home(capsys, tmp_path: Path, monkeypatch) -> None:
    """A toolchain already in the elan home (the double stands in for it): no download at all."""
    home = tmp_path / "elan"
    (home / "toolchains").mkdir(parents=True)
    (home / "toolchains" / ELAN_DIR_NAME).symlink_to(DOUBLE_DIR)
    monkeypatch.setenv("ELAN_HOME", str(home))
    code = main(["install-lean", "--script-url", CLOSED_PORT_URL, "--timeout", "3"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.splitlines()[0] == f"elan home: {home} ($ELAN_HOME)"
    assert "is already installed" in out and "toolchain double" in out


@pytest.mark.usefixtures("offline")
def test_an_install_logs_its_start_and_end_on_stderr(capsys, tmp_path: Path, monkeypatch) -> None:
    """install-lean is a long step (grading/steps_log.py): one line when it starts, one when it
    ends with its time and outcome, on stderr (stdout keeps the command's own lines)."""
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "elan"))
    code = main(["install-lean", "--script-url", CLOSED_PORT_URL, "--timeout", "3"])
    out, err = capsys.readouterr()
    assert code == 1
    assert re.search(
        r"^\d\d:\d\d:\d\d lean-mod-add-proof: install-lean started \(leanprover/lean4:", err, re.M
    ), err
    assert re.search(
        r"lean-mod-add-proof: install-lean failed \(InstallError\) in \d+\.\d s: cannot download", err
    )
    assert "install-lean started" not in out
