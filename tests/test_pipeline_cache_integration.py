"""The cache as the pipeline uses it, against the toolchain double: an unremovable corrupt entry
falls back to an in-place build, a FIFO manifest is rebuilt, cancelled grades leave nothing,
and a kept package is never swept."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
from pathlib import Path

from helpers import run_double, submission, work_dirs

from lean_mod_add_proof.grading import workdirs


def entry_dir(tmp_path: Path) -> Path:
    (entry,) = [
        p
        for p in (tmp_path / "cache").iterdir()
        if not p.name.startswith((".", "judge-")) and p.name != "selftest"
    ]
    return entry


async def test_unremovable_corrupt_entry_falls_back_in_place(tmp_path: Path) -> None:
    assert (await run_double(submission(), tmp_path)).cache == "built"
    entry = entry_dir(tmp_path)
    (entry / "manifest.json").write_text("[]")
    subprocess.run(["chattr", "+i", str(entry)], check=True)
    try:
        res = await run_double(submission(), tmp_path)
    finally:
        subprocess.run(["chattr", "-i", str(entry)], check=True)
    assert res.accepted, res.reason
    assert res.cache == "off" and "cannot be removed" in res.cache_note, res.cache_note
    assert work_dirs(tmp_path) == []


async def test_fifo_manifest_is_rebuilt(tmp_path: Path) -> None:
    assert (await run_double(submission(), tmp_path)).cache == "built"
    entry = entry_dir(tmp_path)
    (entry / "manifest.json").unlink()
    os.mkfifo(entry / "manifest.json")
    res = await asyncio.wait_for(run_double(submission(), tmp_path), 30)
    assert res.accepted and res.cache == "built"


async def test_cancelled_grades_leave_nothing(tmp_path: Path) -> None:
    assert (await run_double(submission(), tmp_path)).cache == "built"
    big = entry_dir(tmp_path) / "package"
    rng = random.Random(7)
    for _ in range(4):
        tasks = [asyncio.create_task(run_double(submission(), tmp_path)) for _ in range(4)]
        for t in tasks:
            asyncio.get_running_loop().call_later(rng.uniform(0, 0.5), t.cancel)
        await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.sleep(0.3)
    assert work_dirs(tmp_path) == []
    assert big.is_dir()


async def test_kept_package_is_not_swept(tmp_path: Path) -> None:
    res = await run_double(submission(), tmp_path, keep_packages=True)
    kept = Path(res.package_dir)
    assert workdirs.sweep_dead(tmp_path / "work", tmp_path / "cache") == [] and kept.is_dir()
