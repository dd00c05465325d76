"""Folders that travel with the package: the wheel carries them inside it (pyproject's
`[tool.hatch.build.targets.wheel.force-include]`), a checkout (and so an editable install) keeps
them at the repository's root. One lookup for `configs/` and `docs/`."""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent


def shipped_places(name: str) -> tuple[Path, Path]:
    """Where folder `name` is looked for, in order: the wheel's copy, then the checkout's."""
    return PACKAGE_DIR / name, PACKAGE_DIR.parent / name


def shipped_dir(name: str, pattern: str) -> Path | None:
    """The first of `shipped_places(name)` holding a file matching `pattern` (searched below it)."""
    for candidate in shipped_places(name):
        if candidate.is_dir() and any(candidate.rglob(pattern)):
            return candidate
    return None
