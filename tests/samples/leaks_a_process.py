"""Run only by tests/test_leftovers.py (its name does not match `test_*.py`): a test that leaves a
process behind, which the autouse check of conftest.py must fail and kill."""

import os
import subprocess

SLEEPER = "import time; time.sleep(300)"


def test_leaves_a_sleeper_behind() -> None:
    # setsid and a double fork: the sleeper leaves pytest's tree, keeping only its environment.
    mark = os.environ["LEAK_MARK"]
    subprocess.run(["sh", "-c", f"setsid python3 -c '{SLEEPER}' {mark} >/dev/null 2>&1 &"], check=True)
