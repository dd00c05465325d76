"""The package a grade builds in, the verdict directory, and the cache of prebuilt packages.

A cache entry is a package directory where the grader compiled Network.lean and Weights.lean
with the toolchain's own `lean` (no Lake), plus a manifest (sha256 of every file). A grade copies
an entry (never hard-links it: a hostile build could write through a hard link into the cache)
and only compiles the submission. After the build the grader makes a fresh verdict directory
holding only byte-verified copies of the trusted outputs, the submission's `.olean`/`.ilean`
copied out of the build, and the trusted judge program; the verdict stage never sees anything
else the build wrote.

The package keeps Lake's layout and a `lakefile.toml`, so a kept package (`keep_packages`)
rebuilds with `lake build` for a user who wants to look; the grader itself never runs Lake.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from lean_mod_add_proof.grading.hashing import hash_files, open_beneath
from lean_mod_add_proof.grading.lean_names import (
    LEAN_TOOLCHAIN,
    PACKAGE_NAME,
    SUBMISSION_PATH,
)
from lean_mod_add_proof.grading.oserrors import host_errno

#: Bump when the package layout or the manifest format changes: old cache entries stop matching.
LAYOUT_VERSION = "2"

NETWORK_PATH = f"{PACKAGE_NAME}/Network.lean"
WEIGHTS_PATH = f"{PACKAGE_NAME}/Weights.lean"
#: Each grade's own temporary directory (TMPDIR, and /tmp inside the sandbox), inside its grade
#: directory so the disk cap counts it and removing the grade removes it.
GRADE_TMP = "tmp"
#: Each untrusted step's own /tmp (and TMPDIR), made just before that step starts (issue 26):
#: bwrap creates the mount points of a step's binds inside its /tmp (the package lives under the
#: host's /tmp by default), and a step may swap one of them for a symlink, so no step's sandbox
#: set-up may stand on a directory an earlier step could write. The trusted prebuild uses
#: GRADE_TMP; the build sees only the package and BUILD_TMP, the export only EXPORT_TMP, and the
#: judge's JUDGE_TMP is made after both.
BUILD_TMP = "build-tmp"
EXPORT_TMP = "export-tmp"
JUDGE_TMP = "judge-tmp"
#: Every step's /tmp, for checks of what a step left there (the self-test's initializer marker).
STEP_TMPS: tuple[str, ...] = (GRADE_TMP, BUILD_TMP, EXPORT_TMP, JUDGE_TMP)
#: Where compiled modules go, relative to the package root (Lake's layout).
LIB_DIR = ".lake/build/lib/lean"
#: In the verdict directory: the judge's only search-path entry besides the toolchain (the trusted
#: Network/Weights outputs), and where the submission's outputs go (on no search path at all, so
#: nothing can import them; the judge reads them by file name).
VERDICT_LIB = "lib"
VERDICT_SUBMISSION = "submission"
JUDGE_FILE = "Judge.lean"
#: The submission's NDJSON export (`leanexport`'s stdout), in the grade directory outside the
#: package (the grader creates it and hands the exporter only the open file), and its extension
#: in the verdict directory.
EXPORT_FILE = "export.ndjson"
EXPORT_EXT = "ndjson"
#: Largest Submission output copied into the verdict directory.
MAX_SUBMISSION_OUTPUT_BYTES = 256 << 20

# For users only (the grader never runs Lake): `lake build LeanCheckedNetwork.Submission` resolves
# the module because the library's default root `LeanCheckedNetwork` is a prefix of it
# (LeanLibConfig defaults `roots := #[name]`, `globs := roots.map Glob.one`; `isBuildableModule`,
# lean4 src/lake/Lake/Config/LeanLibConfig.lean).
LAKEFILE_TOML = f"""name = "{PACKAGE_NAME}"
version = "0.1.0"

[[lean_lib]]
name = "{PACKAGE_NAME}"
"""

TRUSTED_SOURCES: tuple[str, ...] = ("lakefile.toml", "lean-toolchain", NETWORK_PATH, WEIGHTS_PATH)
#: Read-only even inside the writable package when sandboxed. The whole source directory, not just
#: the two files: a bind of a single file can be sidestepped by renaming its parent directory and
#: recreating it, but a mount point itself cannot be renamed (EBUSY).
SANDBOX_READONLY: tuple[str, ...] = ("lakefile.toml", "lean-toolchain", PACKAGE_NAME)
# Compiled outputs of the two trusted modules. Only files Lean loads matter; the grader writes no
# bookkeeping files (no Lake), but the pattern stays strict about what counts as an output.
_OUTPUT_RE = re.compile(rf"^{re.escape(LIB_DIR)}/{PACKAGE_NAME}/(?:Network|Weights)\.[^/]+$")
_BOOKKEEPING_RE = re.compile(r"\.(?:trace|hash|log\.json|json)$")


def module_source(module: str) -> str:
    """`LeanCheckedNetwork.X` -> `LeanCheckedNetwork/X.lean` (pure)."""
    return module.replace(".", "/") + ".lean"


def module_output(module: str, ext: str) -> str:
    """Where `lean -o`/`-i` writes a module's .olean/.ilean, relative to the package (pure)."""
    return f"{LIB_DIR}/{module.replace('.', '/')}.{ext}"


def verdict_output(module: str, ext: str) -> str:
    """Where the verdict directory holds the submission module's output, relative to it (pure)."""
    return f"{VERDICT_SUBMISSION}/{module.rsplit('.', 1)[-1]}.{ext}"


def compile_argv(lean: str, module: str, options: tuple[str, ...] = (), *, threads: int = 1) -> list[str]:
    """Compile one module with the toolchain's `lean`, Lake's output layout, JSON messages (pure).

    Flags from lean4 src/Lean/Shell.lean (`displayHelp`, `ShellOptions.process`) and
    src/util/shell.cpp (getopt `j:`, `{"threads", required_argument, 0, 'j'}`): `-j N` the task
    manager's threads (else the hardware concurrency: LEAN_NUM_THREADS is read only by compiled
    executables), `--json` one message per line, `-D name=value` an option, `-o`/`-i` the
    .olean/.ilean to write. The module name comes from the file's path under the working
    directory (`-R` defaults to it)."""
    return [
        lean,
        "-j",
        str(threads),
        "--json",
        *options,
        "-o",
        module_output(module, "olean"),
        "-i",
        module_output(module, "ilean"),
        module_source(module),
    ]


def lean_path(toolchain_dir: Path, *entries: Path) -> str:
    """LEAN_PATH with the toolchain's own library first, so nothing can shadow `Init` (pure)."""
    return ":".join(str(p) for p in (toolchain_dir / "lib" / "lean", *entries))


def package_sources(
    network_lean: bytes, weights_lean: str, lean_toolchain: str = LEAN_TOOLCHAIN
) -> dict[str, bytes]:
    """The trusted files of a package, by path relative to its root (pure). `lean-toolchain`
    names the toolchain that grades (the `lean_toolchain` setting), as elan reads it: its first
    line, trimmed (leanprover/elan b6cec7e1, the commit the image builds, src/elan/toolchain.rs
    `read_unresolved_toolchain_desc_from_file`), so a kept package rebuilt with `lake build`
    under elan uses the same one. Nothing in grading reads it; it is in the cache key."""
    return {
        "lean-toolchain": f"{lean_toolchain}\n".encode(),
        "lakefile.toml": LAKEFILE_TOML.encode(),
        NETWORK_PATH: network_lean,
        WEIGHTS_PATH: weights_lean.encode("utf-8"),
    }


def cache_key(toolchain_version: str, toolchain_dir: Path, sources: Mapping[str, bytes]) -> str:
    """sha256 over everything the prebuilt outputs depend on (pure)."""
    h = hashlib.sha256()
    for part in (LAYOUT_VERSION, toolchain_version, str(toolchain_dir)):
        h.update(part.encode() + b"\0")
    for name in sorted(sources):
        h.update(name.encode() + b"\0" + hashlib.sha256(sources[name]).digest())
    return h.hexdigest()


def is_trusted(rel: str) -> bool:
    """Files that must be byte-identical after the untrusted build (pure)."""
    if rel in TRUSTED_SOURCES:
        return True
    return bool(_OUTPUT_RE.match(rel)) and not _BOOKKEEPING_RE.search(rel)


def missing_outputs(manifest: Mapping[str, str]) -> list[str]:
    """Modules with no .olean among the manifest's trusted files (pure); a layout we do not know
    would otherwise make the tamper check silently vacuous."""
    missing = []
    for module in ("Network", "Weights"):
        if not any(is_trusted(r) and re.search(rf"/{module}\.olean$", r) for r in manifest):
            missing.append(f"{PACKAGE_NAME}.{module}")
    return missing


def trusted_changes(expected: Mapping[str, str], actual: Mapping[str, str | None]) -> list[str]:
    """Trusted paths whose hash differs or that vanished (pure)."""
    return sorted(rel for rel, digest in expected.items() if is_trusted(rel) and actual.get(rel) != digest)


# ---- I/O -------------------------------------------------------------------------------------


def verify_trusted(root: Path, manifest: Mapping[str, str]) -> list[str]:
    """Trusted files under root that no longer match the manifest."""
    rels = [r for r in manifest if is_trusted(r)]
    return trusted_changes(manifest, hash_files(root, rels))


def write_sources(root: Path, sources: Mapping[str, bytes]) -> None:
    for rel, data in sources.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def write_fresh(root: Path, rel: str, text: str) -> Path:
    """Write a file the untrusted build may have planted something at (a symlink, a directory):
    remove whatever is there, then create it exclusively without following links."""
    path = root / rel
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def write_submission(root: Path, text: str) -> Path:
    return write_fresh(root, SUBMISSION_PATH, text)


class VerdictDirError(Exception):
    """The verdict directory could not be assembled; the message is the one-line reason.
    `trusted`: it was a trusted output (from the cache entry or the package) that is missing or
    differs, not one of the submission's own outputs."""

    def __init__(self, reason: str, *, trusted: bool = False) -> None:
        super().__init__(reason)
        self.trusted = trusted


def _copy_out(
    root: Path | int,
    rel: str,
    dest: Path,
    max_bytes: int,
    sha256: str | None = None,
    *,
    grader_file: bool = False,
) -> None:
    """Copy one file out of `root` (a path, or a directory descriptor: a pinned cache entry)
    into `dest` (created exclusively); with `sha256`, the bytes must match it. Hashing while
    copying means the verdict reads exactly the bytes checked. An error that is the host's
    (`oserrors.host_errno`; a permission error too on a `grader_file`, one no untrusted step
    could reach) is raised as the OSError it is, never turned into a verdict."""
    trusted = sha256 is not None
    try:  # no symlink at any component, regular files only: a build cannot redirect the copy
        src = open_beneath(".", rel, root_fd=root) if isinstance(root, int) else open_beneath(root, rel)
    except FileNotFoundError:
        raise VerdictDirError(f"{rel} is missing", trusted=trusted) from None
    except NotADirectoryError:
        raise VerdictDirError(f"{rel}: a parent directory is not a directory", trusted=trusted) from None
    except OSError as exc:  # a symlink somewhere on the path, a FIFO, a device
        if host_errno(exc, grader_files=grader_file) is not None:
            raise
        raise VerdictDirError(f"{rel} cannot be opened safely ({exc.strerror})", trusted=trusted) from None
    digest = hashlib.sha256()
    dest.parent.mkdir(parents=True, exist_ok=True)
    out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o444)
    with os.fdopen(src, "rb") as fin, os.fdopen(out, "wb") as fout:
        copied = 0
        while chunk := fin.read(1 << 20):
            copied += len(chunk)
            if copied > max_bytes:
                raise VerdictDirError(f"{rel} is larger than {max_bytes >> 20} MiB")
            digest.update(chunk)
            fout.write(chunk)
    if sha256 is not None and digest.hexdigest() != sha256:
        raise VerdictDirError(f"{rel} does not match the prebuilt copy", trusted=True)


#: Submission outputs copied into the verdict directory: the olean (required) and its ilean.
SUBMISSION_OUTPUTS: tuple[tuple[str, bool], ...] = (("olean", True), ("ilean", False))
#: The module system's extra olean parts (lean4 src/Lean/Environment.lean, `OLeanLevel`). A file
#: without a `module` header (the guard bans it) never has them: their presence means the build
#: forged its output, and the grade is refused rather than given a second olean to read.
FORGED_OUTPUTS: tuple[str, ...] = ("olean.server", "olean.private")


def grade_dir_bytes(max_disk_mb: int) -> int:
    """What one grade's directory may hold (pure): its disk cap and the grader's copies of the
    submission's outputs into its verdict directory, each up to MAX_SUBMISSION_OUTPUT_BYTES.
    `doctor` budgets the work disk with it, and the reaper counts a finished directory at it."""
    return (max_disk_mb << 20) + len(SUBMISSION_OUTPUTS) * MAX_SUBMISSION_OUTPUT_BYTES


def make_verdict_dir(
    verdict: Path,
    trusted_root: Path | int,
    manifest: Mapping[str, str],
    build_root: Path,
    submission_module: str,
    judge_source: bytes,
    export_file: Path | None = None,
    max_bytes: int = MAX_SUBMISSION_OUTPUT_BYTES,
    *,
    export_is_grader_file: bool = False,
) -> list[str]:
    """Assemble the only files the verdict stage sees: the trusted outputs from `trusted_root`
    (each checked against the manifest), the submission's export (`export_file`) or else its
    outputs from `build_root`, the judge program `judge_source`, and the judge's fresh /tmp
    beside it. With an export, no file of the build's package is copied at all: only the text
    crosses. Returns the relative paths written;
    VerdictDirError says what went wrong. Either directory existing already means the build
    wrote outside its package (only possible unsandboxed): the submission's doing, a verdict.
    `trusted_root` may be a directory descriptor (a pinned cache entry, read through it only);
    `export_is_grader_file`: no untrusted step could reach the export file (sandboxed), so a
    permission error on it is the host's. Host errors are raised as OSError (see `_copy_out`)."""
    for fresh, mode in ((verdict.parent / JUDGE_TMP, 0o700), (verdict, 0o755)):
        try:
            fresh.mkdir(mode=mode)
        except FileExistsError:
            raise VerdictDirError(
                f"{fresh.name} exists already: the build wrote outside its package"
            ) from None
    written: list[str] = []
    for rel, digest in sorted(manifest.items()):
        if is_trusted(rel) and rel.startswith(LIB_DIR + "/"):
            dest_rel = VERDICT_LIB + rel[len(LIB_DIR) :]
            _copy_out(trusted_root, rel, verdict / dest_rel, max_bytes, digest)
            written.append(dest_rel)
    if export_file is not None:
        dest_rel = verdict_output(submission_module, EXPORT_EXT)
        _copy_out(
            export_file.parent,
            export_file.name,
            verdict / dest_rel,
            max_bytes,
            grader_file=export_is_grader_file,
        )
        written.append(dest_rel)
        (verdict / JUDGE_FILE).write_bytes(judge_source)
        return [*written, JUDGE_FILE]
    for ext in FORGED_OUTPUTS:
        if os.path.lexists(build_root / module_output(submission_module, ext)):
            raise VerdictDirError(
                f"the build wrote {module_output(submission_module, ext)}, which no plain file has"
            )
    for ext, required in SUBMISSION_OUTPUTS:
        rel = module_output(submission_module, ext)
        dest_rel = verdict_output(submission_module, ext)
        try:
            _copy_out(build_root, rel, verdict / dest_rel, max_bytes)
        except VerdictDirError:
            if required or (build_root / rel).exists() or (build_root / rel).is_symlink():
                raise
            continue
        written.append(dest_rel)
    (verdict / JUDGE_FILE).write_bytes(judge_source)
    written.append(JUDGE_FILE)
    return written
