"""`install-lean`: a pinned elan installer (a release tag, never `master`, run only if its sha256
is the pinned one) and the elan home it really uses, printed before anything else. Offline only:
no download is attempted here that could succeed (the script URL points at a closed local port,
or at a local file)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from helpers import DOUBLE_DIR

from lean_mod_add_proof.cli import main
from lean_mod_add_proof.cli.setup import (
    ELAN_COMMIT,
    ELAN_INIT_SHA256,
    ELAN_INIT_URL,
    ELAN_RELEASE,
    MANUAL_STEPS,
    elan_home_and_source,
    install,
    manual_steps,
)
from lean_mod_add_proof.grading.toolchain import ELAN_DIR_NAME, TOOLCHAIN_ENV, clear_probe_cache

CLOSED_PORT_URL = "http://127.0.0.1:9/elan-init.sh"


def test_installer_is_pinned_to_a_release_tag() -> None:
    assert re.fullmatch(r"v\d+\.\d+\.\d+", ELAN_RELEASE)
    assert ELAN_INIT_URL == f"https://raw.githubusercontent.com/leanprover/elan/{ELAN_RELEASE}/elan-init.sh"
    assert "master" not in ELAN_INIT_URL and "master" not in MANUAL_STEPS
    assert ELAN_INIT_URL in MANUAL_STEPS
    assert re.fullmatch(r"[0-9a-f]{40}", ELAN_COMMIT) and re.fullmatch(r"[0-9a-f]{64}", ELAN_INIT_SHA256)
    # the manual steps check the script before running it, never `curl | sh`
    assert f"echo '{ELAN_INIT_SHA256}  elan-init.sh' | sha256sum -c -" in MANUAL_STEPS
    assert not re.search(r"\|\s*sh\s", MANUAL_STEPS)


def _installer(tmp_path: Path) -> tuple[Path, Path]:
    """A stand-in elan-init.sh that leaves a mark when run and installs an `elan` that succeeds."""
    ran = tmp_path / "installer-ran"
    script = tmp_path / "elan-init.sh"
    script.write_text(
        f"touch {ran}\n"
        'mkdir -p "$ELAN_HOME/bin"\n'
        'printf "#!/bin/sh\\nexit 0\\n" > "$ELAN_HOME/bin/elan"\n'
        'chmod +x "$ELAN_HOME/bin/elan"\n'
    )
    return script, ran


@pytest.mark.usefixtures("offline")
def test_an_installer_with_another_sha256_is_never_run(capsys, tmp_path: Path) -> None:
    script, ran = _installer(tmp_path)
    home = tmp_path / "elan"
    code = main(["install-lean", "--elan-home", str(home), "--script-url", script.as_uri(), "--timeout", "3"])
    err = capsys.readouterr().err
    assert code == 1  # a problem found (cli/exits.py), not a usage error
    actual = hashlib.sha256(script.read_bytes()).hexdigest()
    assert f"has sha256 {actual}, not the pinned {ELAN_INIT_SHA256}: refusing to run it" in err
    assert "sha256sum -c -" in err  # and the manual steps say how to check it by hand
    assert not ran.exists() and not home.exists()


def test_an_installer_with_the_pinned_sha256_is_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same check lets through the script whose sha256 it is given."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    script, ran = _installer(tmp_path)
    home = tmp_path / "elan"
    pinned = hashlib.sha256(script.read_bytes()).hexdigest()
    elan = install(home, script.as_uri(), 3.0, script_sha256=pinned)
    assert ran.exists() and elan == home / "bin" / "elan"


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
    assert f"{home}/bin/elan toolchain install" in err and f"ELAN_HOME={home} sh elan-init.sh" in err
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


@pytest.mark.usefixtures("offline")
def test_the_recipe_by_hand_keeps_its_lines(capsys, tmp_path: Path) -> None:
    """Issue 41, broken item 3: the error prefix's one-line rule joined the recipe into one line
    (and the checksum line's two spaces into one), so it could not be pasted. The error is one
    line; the recipe follows it on stderr exactly as `manual_steps` writes it."""
    home = tmp_path / "elan"
    code = main(["install-lean", "--elan-home", str(home), "--script-url", CLOSED_PORT_URL, "--timeout", "3"])
    err = capsys.readouterr().err
    assert code == 1
    errors = [line for line in err.splitlines() if line.startswith("lean-mod-add-proof: error: ")]
    assert len(errors) == 1 and "needs internet access" in errors[0] and "curl" not in errors[0]
    assert manual_steps(home) in err
    commands = [line.strip() for line in err.splitlines() if line.startswith("  ")]
    assert commands == [line.strip() for line in manual_steps(home).splitlines() if line.startswith("  ")]
    assert len(commands) == 4 and f"'{ELAN_INIT_SHA256}  elan-init.sh'" in commands[1]
