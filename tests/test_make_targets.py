"""`make test-quick` and `make test-stress` (issue 41): what they run, and the CPU hog the second
runs the suite beside, which must end with its command and leave nothing running."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")
HOG = ROOT / "scripts" / "beside_cpu_hog.py"


def _recipe(target: str) -> str:
    found = re.search(rf"^{re.escape(target)}: setup\n((?:\t.*\n)+)", MAKEFILE, re.MULTILINE)
    assert found, target
    return found.group(1)


def test_the_quick_and_stress_targets() -> None:
    assert "-m quick" in _recipe("test-quick") and "ruff check" in _recipe("test-quick")
    stress = _recipe("test-stress")
    assert "scripts/beside_cpu_hog.py --hogs $(STRESS_HOGS) -- $(BIN)/pytest" in stress
    assert "ruff check" in stress


def test_the_hog_runs_beside_the_command_and_ends_with_it() -> None:
    """The command sees the hog's processes running and gets its exit status back; the hog is
    gone afterwards (the autouse check of conftest.py fails this test otherwise)."""
    probe = (
        "import os, sys\n"
        "busy = 0\n"
        "for p in filter(str.isdigit, os.listdir('/proc')):\n"
        "    try:\n"
        "        busy += b'while True: pass' in open(f'/proc/{p}/cmdline', 'rb').read()\n"
        "    except OSError:\n"
        "        pass\n"
        "print(busy)\n"
        "sys.exit(7)\n"
    )
    done = subprocess.run(
        [sys.executable, str(HOG), "--hogs", "2", "--", sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 7, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("beside_cpu_hog: 2 busy process(es) running")
    assert int(lines[-1]) >= 2  # (other runs' hogs may be running too)
