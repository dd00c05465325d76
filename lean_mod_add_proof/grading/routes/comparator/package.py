"""The package `lake comparator` runs on, and its command line (pure): the challenge, the config,
the lakefile and manifest, the trusted files and their cache key."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from lean_mod_add_proof.grading.lean_names import (
    ALLOWED_AXIOMS,
    LEAN_TOOLCHAIN,
    PACKAGE_NAME,
    SUBMISSION_MODULE,
    SUBMISSION_PATH,
    WEIGHTS_MODULE,
    theorem_name,
    theorem_signature,
)
from lean_mod_add_proof.grading.package import NETWORK_PATH, WEIGHTS_PATH, cache_key
from lean_mod_add_proof.grading.result import AxiomsMode

Subcommand = Literal["comparator", "challenge"]
#: Preferred first: the name after #15146.
SUBCOMMANDS: tuple[Subcommand, ...] = ("comparator", "challenge")

#: The challenge module (`Challenge.lean` at the package root, its own library).
CHALLENGE_MODULE = "Challenge"
CHALLENGE_PATH = "Challenge.lean"
#: The solution module is the submission, where the rest of the grader puts it.
SOLUTION_MODULE = SUBMISSION_MODULE
#: Inside the grade's directory: the package, the config (outside the package: the outer,
#: unsandboxed `lake` reads it before any build), HOME and TMPDIR of the outer `lake`.
PACKAGE_DIR = "comparator-package"
CONFIG_FILE = "comparator-config.json"
HOME_DIR = "comparator-home"
TMP_DIR = "comparator-tmp"

LAKEFILE_TOML = f"""name = "{PACKAGE_NAME}"
version = "0.1.0"

[[lean_lib]]
name = "{CHALLENGE_MODULE}"

[[lean_lib]]
name = "{PACKAGE_NAME}"
roots = ["{PACKAGE_NAME}.Network", "{WEIGHTS_MODULE}", "{SOLUTION_MODULE}"]
"""

#: `Manifest.save` of a package without dependencies (Json.pretty, then a newline).
MANIFEST_JSON = (
    '{"version": "1.1.0",\n'
    ' "packagesDir": ".lake/packages",\n'
    ' "packages": [],\n'
    f' "name": "{PACKAGE_NAME}",\n'
    ' "lakeDir": ".lake"}\n'
)


def challenge_lean(p: int) -> str:
    """The challenge: the task's theorem with the exact prompt signature, proved by `sorry`.
    Constructs (all core Lean 4): `import` (module header, src/Lean/Parser/Module.lean),
    a `theorem` declaration (src/Lean/Parser/Command.lean) whose body is the `sorry` term
    (src/Lean/Parser/Term.lean; elaborates to `sorryAx`, a warning, which `lake build` does not
    fail on)."""
    return f"import {WEIGHTS_MODULE}\n\n{theorem_signature(p)} := sorry\n"


def permitted_axioms(axioms_mode: AxiomsMode) -> list[str]:
    """`permitted_axioms` for the config. Both modes permit exactly `ALLOWED_AXIOMS`: the
    comparator checks a subset, so `exact` (all three used) is what it cannot check; see
    `comparator_verdict`."""
    if axioms_mode not in ("subset", "exact"):
        raise ValueError(f"unknown axioms mode {axioms_mode!r}")
    return list(ALLOWED_AXIOMS)


def comparator_config(p: int, axioms_mode: AxiomsMode = "subset") -> dict[str, object]:
    """The comparator's JSON config (Check.lean `Config`). `definition_names: []` and
    `enable_nanoda: false` spell out the defaults, so the config parses whether or not a given
    Lake treats them as optional; `external_kernels` is left out (refused with `enable_nanoda`)."""
    return {
        "challenge_module": CHALLENGE_MODULE,
        "solution_module": SOLUTION_MODULE,
        "theorem_names": [theorem_name(p)],
        "definition_names": [],
        "permitted_axioms": permitted_axioms(axioms_mode),
        "enable_nanoda": False,
    }


def config_json(p: int, axioms_mode: AxiomsMode = "subset") -> str:
    return json.dumps(comparator_config(p, axioms_mode), indent=2) + "\n"


def comparator_files(
    p: int,
    network_lean: str | bytes,
    weights_lean: str,
    submission: str,
    lean_toolchain: str = LEAN_TOOLCHAIN,
) -> dict[str, bytes]:
    """Every file of the package the comparator runs on, by path relative to its root (pure).
    `lean-toolchain` names the toolchain that grades (the `lean_toolchain` setting)."""
    network = network_lean.encode("utf-8") if isinstance(network_lean, str) else network_lean
    return {
        "lakefile.toml": LAKEFILE_TOML.encode(),
        "lean-toolchain": f"{lean_toolchain}\n".encode(),
        "lake-manifest.json": MANIFEST_JSON.encode(),
        CHALLENGE_PATH: challenge_lean(p).encode("utf-8"),
        NETWORK_PATH: network,
        WEIGHTS_PATH: weights_lean.encode("utf-8"),
        SUBMISSION_PATH: submission.encode("utf-8"),
    }


def comparator_argv(
    lake: str, subcommand: Subcommand, config_path: Path, *, paranoid: bool = False
) -> list[str]:
    """`lake comparator --config FILE` (or `lake challenge ...`); `--paranoid` (#15145) only
    on request: whether rc2 has it is not confirmed."""
    return [lake, subcommand, "--config", str(config_path), *(["--paranoid"] if paranoid else [])]


def write_package(root: Path, files: Mapping[str, bytes]) -> None:
    """Write the package into `root`, which must not exist yet (a fresh directory)."""
    root.mkdir(mode=0o700)
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def trusted_files(
    p: int, network_lean: str | bytes, weights_lean: str, lean_toolchain: str = LEAN_TOOLCHAIN
) -> dict[str, bytes]:
    """The package without the submission: what the prebuild builds (pure)."""
    files = comparator_files(p, network_lean, weights_lean, "", lean_toolchain)
    del files[SUBMISSION_PATH]
    return files


def prebuild_key(toolchain_version: str, toolchain_dir: Path, files: Mapping[str, bytes]) -> str:
    """The cache key of a prebuilt challenge: toolchain and trusted files (pure)."""
    return "comparator-" + cache_key(toolchain_version, toolchain_dir, {**files, "#builder": b"lake-1"})
