"""One log line when a long step starts and one when it ends, with its duration and outcome.

The steps that take seconds to minutes (the self-test, the native judge's build, a cache entry's
build, `warm-cache`, `calibrate`, `install-lean`) were silent in logs: progress showed only on a
terminal, so image builds and CI showed nothing until the end (issue 29, stumble 4). Each such
step now writes, through the standard `logging` module at INFO on its module's logger (under
the package's logger `lean_mod_add_proof`), `<step> started (<detail>)` and `<step> <outcome> in
<seconds> s[: <why>]`, also when it ends by an exception. Short steps (a cached grade) never
enter one, so they write nothing. Where the lines go is the caller's choice: the CLI prints them
to stderr (cli/__init__.py), the taskset hands them to verifiers' log (taskset.py). A grader run
in a rollout's runtime box writes them on the box's stderr; the host reads them back from there
(`LOG_LINE`) into its own log once that grade is over.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from lean_mod_add_proof.grading.messages import one_line

#: The logger every module's logger sits under (`logging.getLogger(__name__)` in the package).
PACKAGE_LOGGER = "lean_mod_add_proof"

#: How the CLI writes these lines on stderr (cli/__init__.py), and how a host reads them back from
#: the stderr of a grader it ran in a rollout's runtime box (taskset.py).
LOG_FORMAT = "%(asctime)s lean-mod-add-proof: %(message)s"
LOG_TIME_FORMAT = "%H:%M:%S"
LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d lean-mod-add-proof: (.+)$", re.MULTILINE)

#: The end line's reason is cut here: one line in a log, not a report.
DETAIL_MAX_CHARS = 300


@dataclass
class Step:
    """What the body of `long_step` found: the end line says `outcome` and, if set, `detail`."""

    outcome: str = "done"
    detail: str = ""


def end_line(what: str, step: Step, seconds: float) -> str:
    """The end line's text (pure), e.g. `self-test passed in 41.2 s`."""
    line = f"{what} {step.outcome} in {seconds:.1f} s"
    return f"{line}: {one_line(step.detail, DETAIL_MAX_CHARS)}" if step.detail else line


@contextmanager
def long_step(logger: logging.Logger, what: str, detail: str = "") -> Iterator[Step]:
    """Log `what` starting, run the body, log it ending with its time and outcome (the body
    sets `outcome`/`detail` on the yielded Step; an exception ends it as `failed (<type>)`, a
    cancellation as `cancelled`, and goes on up)."""
    logger.info("%s started%s", what, f" ({detail})" if detail else "")
    step = Step()
    started = time.monotonic()
    try:
        yield step
    except (asyncio.CancelledError, KeyboardInterrupt) as exc:
        step.outcome = "cancelled" if isinstance(exc, asyncio.CancelledError) else "interrupted"
        logger.info("%s", end_line(what, step, time.monotonic() - started))
        raise
    except BaseException as exc:
        step.outcome, step.detail = f"failed ({type(exc).__name__})", str(exc)
        logger.info("%s", end_line(what, step, time.monotonic() - started))
        raise
    logger.info("%s", end_line(what, step, time.monotonic() - started))
