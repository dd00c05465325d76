"""The Lake package a grade builds in, and the cache of prebuilt Network/Weights packages.

A cache entry is a package directory where `lake build LeanCheckedNetwork.Weights` succeeded,
plus a manifest (sha256 of every file). A grade copies an entry (never hard-links it: a hostile
build could write through a hard link into the cache) and only compiles the submission; after
the build the trusted files are re-hashed against the manifest.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from lean_mod_add_proof.constants import (
    CHECK_THEOREM,
    LEAN_TOOLCHAIN,
    PACKAGE_NAME,
    SUBMISSION_PATH,
    theorem_name,
)
from lean_mod_add_proof.grading.result import CommandRecord

#: Bump when the package layout or the manifest format changes: old cache entries stop matching.
LAYOUT_VERSION = "1"
GRADE_DIR_PREFIX = "lean-mod-add-proof-grade-"
DEFAULT_CACHE_DIR = Path("~/.cache/lean-mod-add-proof")

NETWORK_PATH = f"{PACKAGE_NAME}/Network.lean"
WEIGHTS_PATH = f"{PACKAGE_NAME}/Weights.lean"
CHECK_PATH = "Check.lean"

# No globs and no default target: we only ever build named modules. `lake build
# LeanCheckedNetwork.Submission` resolves it as a module of this library because the library's
# default root `LeanCheckedNetwork` is a prefix of it (lean-facts §1.3, [L]; not confirmed on rc2).
# Source read (unpinned lean4 versions): LeanLibConfig defaults `roots := #[name]` and
# `globs := roots.map Glob.one`; `isBuildableModule mod` is true when some root is a prefix of
# `mod` and a glob matches that root (src/lake/Lake/Config/LeanLibConfig.lean). The CLI resolves a
# bare `A.B` through `resolveTargetInWorkspace` -> `findTargetModule?` (src/lake/Lake/CLI/Build.lean),
# after first checking whether `A.B` names an existing path in the working directory.
# Source files are traced with `inputTextFile`/`computeTrace`, which writes no `.hash` file next to
# them (src/lake/Lake/Build/Common.lean); `.hash`/`.trace` files are written for build outputs only.
LAKEFILE_TOML = f"""name = "{PACKAGE_NAME}"
version = "0.1.0"

[[lean_lib]]
name = "{PACKAGE_NAME}"
"""
LEAN_TOOLCHAIN_FILE = LEAN_TOOLCHAIN + "\n"

TRUSTED_SOURCES: tuple[str, ...] = ("lakefile.toml", "lean-toolchain", NETWORK_PATH, WEIGHTS_PATH)
#: Read-only even inside the writable package when sandboxed. The whole source directory, not just
#: the two files: a bind of a single file can be sidestepped by renaming its parent directory and
#: recreating it, but a mount point itself cannot be renamed (EBUSY). Lake and Lean write only
#: under .lake/ (and lake-manifest.json at the root), never next to the sources.
SANDBOX_READONLY: tuple[str, ...] = ("lakefile.toml", "lean-toolchain", PACKAGE_NAME)
# Build outputs of the two trusted modules, wherever Lake puts them under .lake/. Bookkeeping
# files (traces, hashes, logs) are left out: Lake may legitimately rewrite them, and Lean never
# loads them; what Lean loads (.olean*, .ilean, ...) must stay byte-identical.
_OUTPUT_RE = re.compile(rf"^\.lake/(?:.*/)?{PACKAGE_NAME}/(?:Network|Weights)\.[^/]+$")
_BOOKKEEPING_RE = re.compile(r"\.(?:trace|hash|log\.json|json)$")


def package_sources(network_lean: bytes, weights_lean: str) -> dict[str, bytes]:
    """The trusted files of a package, by path relative to its root (pure)."""
    return {
        "lean-toolchain": LEAN_TOOLCHAIN_FILE.encode(),
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


def check_lean_text(p: int) -> str:
    """Check.lean, written only after the build and the replay. Top level, no namespace, no
    `open`, no module header (`#print axioms` refuses to run in a module, lean-facts §2).

    `_root_.X` resolves through `resolveExact` (the `_root_` prefix is stripped) before any alias
    is tried, and `#print axioms` prints the resolved name without `_root_`
    (lean4 src/Lean/ResolveName.lean `resolveExact`; src/Lean/Elab/Print.lean `printAxiomsOf`).

    Precisely: `resolveGlobalName` tries `resolveUsingNamespace` first, but at top level the current
    namespace is anonymous, for which it returns nothing; `resolveExact` then strips `_root_`, and
    only if that fails are private names, `open`s and aliases consulted. `lean --json` prints one
    `SerialMessage` per line; its derived ToJson flattens `BaseMessage`, so `severity` and `data`
    are top-level keys (src/Lean/Message.lean; src/Lean/Elab/Deriving/FromToJson.lean
    `getStructureFieldsFlattened`)."""
    thm = theorem_name(p)
    return (
        "import LeanCheckedNetwork.Weights\n"
        "import LeanCheckedNetwork.Submission\n"
        "\n"
        f"theorem {CHECK_THEOREM} : _root_.LeanCheckedNetwork.Net.Spec :=\n"
        f"  _root_.{thm}\n"
        "\n"
        f"#print axioms _root_.{thm}\n"
        f"#print axioms {CHECK_THEOREM}\n"
    )


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


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def hash_tree(root: Path) -> dict[str, str]:
    """sha256 of every regular file under root, by relative POSIX path; a symlink is recorded as
    such (and never followed)."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        for name in filenames + [d for d in dirnames if (base / d).is_symlink()]:
            path = base / name
            rel = path.relative_to(root).as_posix()
            out[rel] = "symlink" if path.is_symlink() else _sha256_file(path)
    return out


def hash_files(root: Path, rels: list[str]) -> dict[str, str | None]:
    """Hash the given files under root; None for anything missing, not a regular file, or
    reached through a symlinked directory."""
    real_root = root.resolve()
    out: dict[str, str | None] = {}
    for rel in rels:
        path = root / rel
        try:
            if path.is_symlink() or not path.is_file() or path.resolve().parent != (real_root / rel).parent:
                out[rel] = None
            else:
                out[rel] = _sha256_file(path)
        except OSError:
            out[rel] = None
    return out


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


def new_grade_dir(work_root: Path | None) -> Path:
    if work_root is not None:
        work_root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=GRADE_DIR_PREFIX, dir=work_root)).resolve()


def copy_package(src: Path, dest: Path) -> None:
    """Copy, not hard-link; copy2 keeps mtimes so Lake sees the prebuilt modules as up to date."""
    shutil.copytree(src, dest, symlinks=True, copy_function=shutil.copy2, dirs_exist_ok=True)


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


# ---- the cache -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrebuildOutcome:
    ok: bool
    reason: str = ""
    records: list[CommandRecord] = field(default_factory=list)


Prebuild = Callable[[Path], Awaitable[PrebuildOutcome]]


class PrebuildFailed(Exception):
    def __init__(self, reason: str, records: list[CommandRecord]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.records = records


@dataclass(frozen=True)
class CacheEntry:
    package: Path
    manifest: dict[str, str]
    status: Literal["hit", "built"]
    records: list[CommandRecord] = field(default_factory=list)


# One lock per (cache root, key) per event loop: asyncio locks bind to the loop that first uses them.
_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str], asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


def _lock_for(root: Path, key: str) -> asyncio.Lock:
    per_loop = _locks.setdefault(asyncio.get_running_loop(), {})
    return per_loop.setdefault((str(root), key), asyncio.Lock())


def _load_entry(entry_dir: Path, key: str) -> dict[str, str] | None:
    """The manifest of a complete, uncorrupted entry, else None."""
    try:
        data = json.loads((entry_dir / "manifest.json").read_text(encoding="utf-8"))
        if data.get("layout") != LAYOUT_VERSION or data.get("key") != key:
            return None
        manifest: dict[str, str] = data["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if hash_tree(entry_dir / "package") != manifest:
        return None
    return manifest


def _discard(path: Path) -> None:
    """Move aside first (atomic), then delete, so no reader sees a half-deleted entry."""
    trash = path.with_name(f".trash-{path.name}-{os.getpid()}-{id(path)}")
    with contextlib.suppress(OSError):
        os.rename(path, trash)
        path = trash
    shutil.rmtree(path, ignore_errors=True)


async def prebuild_package(
    package: Path, sources: Mapping[str, bytes], prebuild: Prebuild
) -> tuple[dict[str, str], list[CommandRecord]]:
    """Write the trusted sources into `package`, build them, and hash the result: the manifest
    the tamper checks compare against, and the prebuild's command records. PrebuildFailed if the
    build fails, leaves a symlink, or leaves no .olean we would know to re-check."""
    await asyncio.to_thread(write_sources, package, sources)
    outcome = await prebuild(package)
    if not outcome.ok:
        raise PrebuildFailed(outcome.reason, outcome.records)
    manifest = await asyncio.to_thread(hash_tree, package)
    if any(v == "symlink" for v in manifest.values()):
        raise PrebuildFailed("the prebuilt package contains a symlink", outcome.records)
    if missing := missing_outputs(manifest):
        raise PrebuildFailed(
            f"prebuild left no .olean for {', '.join(missing)} under .lake/", outcome.records
        )
    return manifest, outcome.records


def _seal(tmp: Path, key: str, manifest: Mapping[str, str]) -> None:
    payload = {"layout": LAYOUT_VERSION, "key": key, "files": dict(manifest)}
    (tmp / "manifest.json").write_text(json.dumps(payload, indent=1, sort_keys=True), encoding="utf-8")


async def ensure_entry(
    cache_root: Path, key: str, sources: Mapping[str, bytes], prebuild: Prebuild
) -> CacheEntry:
    """The verified cache entry for `key`, building it if absent or corrupt. Concurrent first
    grades in this process build once (per-key lock); across processes the atomic rename decides
    and the loser uses the winner's entry."""
    cache_root.mkdir(parents=True, exist_ok=True, mode=0o700)
    entry_dir = cache_root / key
    async with _lock_for(cache_root, key):
        if entry_dir.exists():
            manifest = await asyncio.to_thread(_load_entry, entry_dir, key)
            if manifest is not None:
                return CacheEntry(entry_dir / "package", manifest, "hit")
            await asyncio.to_thread(_discard, entry_dir)  # corrupt or stale: rebuild
        tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=cache_root))
        try:
            manifest, records = await prebuild_package(tmp / "package", sources, prebuild)
            await asyncio.to_thread(_seal, tmp, key, manifest)
            try:
                os.rename(tmp, entry_dir)
            except OSError:
                # Another process won the race: use its entry if it is sound.
                winner = await asyncio.to_thread(_load_entry, entry_dir, key)
                if winner is None:
                    raise
                return CacheEntry(entry_dir / "package", winner, "hit", records)
            return CacheEntry(entry_dir / "package", manifest, "built", records)
        finally:
            if tmp.exists():
                await asyncio.to_thread(shutil.rmtree, tmp, True)
