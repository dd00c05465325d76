"""The image recipe and `make image`, checked without building anything (no container engine
runs here): the pins agree with the package, and `make image` names the taskset's default image
or says plainly that neither docker nor podman is installed."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from lean_mod_add_proof.cli.setup import ELAN_RELEASE
from lean_mod_add_proof.constants import LEAN_TOOLCHAIN

ROOT = Path(__file__).resolve().parent.parent
CONTAINERFILE = (ROOT / "container" / "Containerfile").read_text(encoding="utf-8")
needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")


def arg(name: str) -> str:
    match = re.search(rf"^ARG {name}=(\S+)$", CONTAINERFILE, re.MULTILINE)
    assert match, name
    return match.group(1)


def test_pins_agree_with_the_package() -> None:
    assert arg("ELAN_RELEASE") == ELAN_RELEASE
    assert arg("LEAN_TOOLCHAIN") == LEAN_TOOLCHAIN
    assert "elan/${ELAN_RELEASE}/elan-init.sh" in CONTAINERFILE and "master" not in CONTAINERFILE
    assert re.search(r"^FROM \S*bookworm\S*$", CONTAINERFILE, re.MULTILINE)


def test_recipe_installs_the_sandbox_the_package_and_a_warm_cache() -> None:
    assert "bubblewrap" in CONTAINERFILE and "ca-certificates" in CONTAINERFILE
    assert re.search(r"^RUN pip install /src", CONTAINERFILE, re.MULTILINE)
    assert re.search(r"^RUN lean-mod-add-proof warm-cache --split all", CONTAINERFILE, re.MULTILINE)
    for line in re.findall(r"^COPY (.+) /src/?\S*$", CONTAINERFILE, re.MULTILINE):
        for source in line.split():
            assert (ROOT / source).exists(), source


@needs_make
def test_make_image_builds_the_tasksets_default_image() -> None:
    from lean_mod_add_proof.taskset import DEFAULT_IMAGE

    done = subprocess.run(
        ["make", "-n", "image", "CONTAINER_TOOL=podman"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert f"podman build -f container/Containerfile -t {DEFAULT_IMAGE} ." in done.stdout


@needs_make
def test_make_image_without_docker_or_podman_says_so() -> None:
    done = subprocess.run(["make", "image", "CONTAINER_TOOL="], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode != 0
    assert "neither docker nor podman is installed" in done.stderr
