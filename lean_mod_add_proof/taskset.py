"""The verifiers v1 taskset: task data, run-time and load-time config, the task's metric and
reward, the taskset and its default env (null harness on the subprocess runtime)."""

from __future__ import annotations

import asyncio
import atexit
import json
import logging
import os
import shutil
import sys
import sysconfig
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from pathlib import Path
from typing import Any, Literal

import verifiers.v1 as vf
from pydantic import Field, ValidationInfo, field_validator, model_validator

from lean_mod_add_proof.constants import reference_submission
from lean_mod_add_proof.dataset.cost import TimeoutsFileError, read_timeouts
from lean_mod_add_proof.dataset.tasks import (
    DEFAULT_TASKS_DIR,
    NETWORK_LEAN_PATH,
    TaskRecord,
    TaskSetError,
    in_split,
    load_tasks,
    sha256_text,
    weights_path,
)
from lean_mod_add_proof.feedback import feedback_message
from lean_mod_add_proof.grading.grader import GradeTask, grade, grade_reply
from lean_mod_add_proof.grading.messages import one_line
from lean_mod_add_proof.grading.process import find_prlimit
from lean_mod_add_proof.grading.result import (
    GraderConfig,
    GradeResult,
    GraderSettings,
    checked_setting,
    flag_name,
    verdict_exit_code,
)
from lean_mod_add_proof.grading.sandbox import decide_sandbox, probe_sandbox
from lean_mod_add_proof.grading.steps_log import LOG_LINE
from lean_mod_add_proof.grading.toolchain import DOUBLE_BANNER, Toolchain, install_fix, locate_toolchain
from lean_mod_add_proof.prompt import SYSTEM_PROMPT, build_prompt, read_verbatim

logger = logging.getLogger(__name__)

#: Where verifiers' CLIs (vf-eval, vf-validate) route their own log records.
VERIFIERS_LOGGER = "verifiers.v1"
#: Where the reason of a rollout errored by "could not judge" is recorded, in traces.jsonl.
REASON_IN_TRACES = "traces.jsonl: traces[i].errors[j].message"

#: The image `make image` builds (container/Containerfile), named by this package's version.
DEFAULT_IMAGE = "lean-mod-add-proof:0.1.0"
#: Where the reply is written inside the runtime box, relative to its working directory.
REPLY_IN_BOX = "lean-mod-add-proof-reply.txt"
#: Settings passed on to the grader in the box; paths (toolchain, cache, work root) are the box's own.
RUNTIME_SETTINGS: tuple[str, ...] = (
    "timeout_s",
    "axioms_mode",
    "memory_mb",
    "max_processes",
    "max_disk_mb",
    "max_file_mb",
    "max_files",
    "sandbox",
    "output_cap_bytes",
    "tail_chars",
    "kernels",
    "grade_in",
)

#: Where the grade is stored on the trace.
INFO_KEY = "lean_grader"
#: Prefix of the stage metrics, so they read as the `lean_stages` metric's keys.
METRIC_PREFIX = "lean_stages/"


class LeanData(vf.TaskData):
    """One task on the wire: small and JSON-only (the Weights text lives in the prompt)."""

    p: int
    """The modulus: the network must compute (a + b) % p."""
    hidden: int
    """Number of hidden neurons."""
    seed: int
    """Training seed of the frozen network."""
    split: Literal["train", "eval", "hard-train", "hard-eval"]
    """Which split the task belongs to (seed 2 is eval; p above 23 is hard, seed 3 of it held out)."""
    train_fraction: float
    """Fraction of the p*p pairs the network was trained on."""
    theorem: str
    """Fully qualified name of the theorem to prove."""
    weights_sha256: str
    """sha256 of the task's Weights.lean; the grader refuses a file that does not match."""
    tasks_dir: str | None = None
    """The generated task set the task came from (None: the one shipped in the package)."""
    box_is_host: bool = False
    """The rollout's box is this machine (subprocess runtime), so host paths mean the same in it."""


def read_task_timeouts(path: Path) -> dict[str, float]:
    """`read_timeouts`, with every limit checked as the `timeout_s` setting is (its bounds), and
    whatever the file's bytes can raise reported as one TimeoutsFileError naming the file: a
    deeply nested document (RecursionError), bytes that are not UTF-8 (UnicodeDecodeError), an
    integer longer than Python converts (ValueError)."""
    try:
        limits = read_timeouts(path)
    except TimeoutsFileError:
        raise
    except RecursionError:
        raise TimeoutsFileError(f"{path}: not JSON (nested too deeply)") from None
    except UnicodeDecodeError as exc:
        raise TimeoutsFileError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:
        raise TimeoutsFileError(f"{path}: not JSON ({' '.join(str(exc).split())[:200]})") from None
    for task_id, seconds in limits.items():
        try:
            checked_setting("timeout_s", seconds)
        except ValueError as exc:
            raise TimeoutsFileError(f"{path}: timeouts.{task_id}: {exc}") from None
    return limits


class LeanTaskConfig(vf.TaskConfig, GraderSettings):
    """How submissions are graded (vf-eval `--env.taskset.task.*`, vf-validate `--taskset.task.*`):
    every grader setting (defined once, in `GraderSettings`) plus what the taskset does when the
    grader cannot judge."""

    on_grader_error: Literal["raise", "zero"] = "raise"
    """When no verdict could be reached (no toolchain, sandbox unusable, self-test failed, internal
    error): `raise` errors the rollout so it is not trained on; `zero` scores it 0.0."""
    max_attempts: int = Field(1, ge=1, le=16)
    """Attempts per rollout: above 1, a rejected proof is answered with the stage, the reason and
    Lean's first errors, and the model tries again (each attempt is a full grade)."""
    feedback_chars: int = Field(2000, ge=0)
    """Most characters of Lean error messages in one feedback message."""
    attempt_discount: float = Field(1.0, gt=0, le=1)
    """An accepted attempt k (1-based) earns attempt_discount ** (k - 1); 1.0 = no discount."""
    timeouts: Path | None = None
    """A per-task `timeout_s` file written by `calibrate --timeouts-out`; a task it does not list
    gets its shipped limit (hard tasks) or the fixed `timeout_s`."""
    # Here and not in GraderSettings: the grader grades one task with one deadline; choosing the
    # deadline per task is the taskset's job, where each task's config and prompt are made (load).

    @field_validator("timeouts")
    @classmethod
    def _readable_timeouts(cls, value: Path | None) -> Path | None:
        if value is None:
            return None
        value = value.expanduser().resolve()
        try:
            read_task_timeouts(value)
        except TimeoutsFileError as exc:
            raise ValueError(f"not a usable timeouts file: {exc}") from None
        return value

    def for_task(self, task_id: str, limits: Mapping[str, float]) -> LeanTaskConfig:
        """This config with the task's own `timeout_s` from `limits`, if it has one."""
        if task_id not in limits:
            return self
        # model_copy validates nothing: the value gets the setting's own check (its bounds).
        return self.model_copy(update={"timeout_s": checked_setting("timeout_s", limits[task_id])})

    @model_validator(mode="after")
    def _feedback_grades_on_the_host(self) -> LeanTaskConfig:
        if self.max_attempts > 1 and self.grade_in == "runtime":
            raise ValueError("max_attempts > 1 needs grade_in=host (attempts are graded between turns)")
        return self

    def grader_config(self) -> GraderConfig:
        """The GraderConfig these knobs describe (the one place the two are mapped)."""
        return GraderConfig(**{name: getattr(self, name) for name in GraderSettings.model_fields})


class LeanTasksetConfig(vf.TasksetConfig):
    """Which tasks load (vf-eval `--env.taskset.*`, vf-validate `--taskset.*`)."""

    split: Literal["train", "eval", "all", "hard-train", "hard-eval", "hard"] = "train"
    """`train` (seeds 0 and 1), `eval` (seed 2, held out), `all` (train + eval, the seed's grid), or
    the hard split (p > 23, each task with its own limit that brute force is estimated to exceed;
    docs/dataset.md): `hard-train`, `hard-eval` (seed 3, held out) or `hard` (both)."""
    tasks_dir: Path | None = None
    """Another generated task set (tasks.jsonl + <id>/Weights.lean); default: the packaged one."""
    max_p: int | None = Field(None, ge=2)
    """Only tasks with p <= max_p (default: no limit); some task must remain."""
    image: str | None = DEFAULT_IMAGE
    """With `task.grade_in runtime`, the container image each rollout's box starts from (Prime
    sandboxes, Docker, Modal): `make image`'s, with Lean, bubblewrap, this package and a warm
    grader cache. Empty: none. Unused when grading on the host, and on the subprocess runtime, whose
    box is this machine (LeanEnv drops it there, so no `--env.taskset.image ""` is needed)."""
    task: LeanTaskConfig = LeanTaskConfig()

    @field_validator("tasks_dir")
    @classmethod
    def _check_tasks_dir(cls, value: Path | None) -> Path | None:
        if value is None:
            return None
        value = value.expanduser().resolve()
        try:
            load_tasks(value)
        except TaskSetError as exc:
            raise ValueError(f"tasks_dir is not a usable task set: {exc}") from None
        return value

    @field_validator("max_p")
    @classmethod
    def _some_task_remains(cls, value: int | None, info: ValidationInfo) -> int | None:
        """Checked when the config is resolved, so `--max-p 3` fails before anything runs."""
        if value is None:
            return None
        try:
            rows = load_tasks(info.data.get("tasks_dir") or DEFAULT_TASKS_DIR, verify_hashes=False)
        except TaskSetError:
            return value  # tasks_dir's own check says what is wrong
        split = info.data.get("split", "train")
        ps = sorted({r.p for r in rows if in_split(r.split, split)})
        if ps and not any(p <= value for p in ps):
            raise ValueError(f"no {split} task has p <= {value} (the smallest p is {ps[0]})")
        return value


def reply_text(trace: vf.Trace) -> str:
    """The model's final answer: the last reply, else the last non-empty assistant content.
    Passed to the grader as it is (its extractor rejects NULs and lone surrogates itself)."""
    try:
        text = trace.last_reply
    except Exception:  # a malformed trace must not break grading
        text = ""
    if not text:
        for message in reversed(trace.assistant_messages):
            if isinstance(message.content, str) and message.content.strip():
                text = message.content
                break
    return text


def utf8_safe(value: Any) -> Any:
    """`value` with every string made encodable as UTF-8 (lone surrogates become U+FFFD), so
    the grade stored on the trace always serialises."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        return value
    if isinstance(value, dict):
        return {utf8_safe(k): utf8_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [utf8_safe(v) for v in value]
    return value


class GraderUnavailable(vf.TaskError):
    """The grader could not judge (the message says why and how to fix it). A verifiers
    TaskError, so verifiers records it as it is: the trace's error type is `GraderUnavailable`
    (the name vf-eval's dashboard shows) and its message the bare reason."""


class _ToVerifiersLog(logging.Handler):
    """Hands this package's records to the handlers verifiers' CLIs put on their own logger
    (stderr under `--no-rich`, the run's log file always), so they land where verifiers' own
    do; outside those CLIs, to Python's last-resort handler (stderr, warnings and up), as
    before. Without it the rich dashboard, which switches the last resort off, printed
    `No handlers could be found for logger "lean_mod_add_proof.taskset"` instead."""

    def emit(self, record: logging.LogRecord) -> None:
        targets = [
            h for h in logging.getLogger(VERIFIERS_LOGGER).handlers if not isinstance(h, logging.NullHandler)
        ]
        if not targets and logging.lastResort is not None:
            targets = [logging.lastResort]
        for handler in targets:
            if record.levelno >= handler.level:
                handler.handle(record)


def _route_package_logs() -> None:
    package = logging.getLogger(__name__.partition(".")[0])
    if not any(isinstance(h, _ToVerifiersLog) for h in package.handlers):
        package.addHandler(_ToVerifiersLog())
    # The long steps' INFO lines (grading/steps_log.py) must reach vf-eval's INFO handlers; left
    # NOTSET, the root's WARNING would drop them before any handler. The last resort still
    # shows only warnings and up.
    if package.level == logging.NOTSET:
        package.setLevel(logging.INFO)


_route_package_logs()


def verifiers_cli_logging() -> bool:
    """Whether a verifiers CLI (vf-eval, vf-validate, an env server) set up logging here."""
    handlers = logging.getLogger(VERIFIERS_LOGGER).handlers
    return any(not isinstance(h, logging.NullHandler) for h in handlers)


def notice(line: str) -> None:
    """One line to stderr, where vf-eval's rich dashboard (which keeps logs off the terminal)
    still shows it: before the first rollout, or after the dashboard has closed."""
    print(f"lean-mod-add-proof: {line}", file=sys.stderr, flush=True)


_announced: set[str] = set()


def notice_once(line: str) -> None:
    if line not in _announced:
        _announced.add(line)
        notice(line)


#: Grades that reached no verdict in this process: reason -> count (for the summary at exit).
_unjudged: dict[str, int] = {}
_unjudged_policy: dict[str, str] = {}
_summary_registered = False


def unjudged_summary() -> str | None:
    """One line: how many grades of this process reached no verdict, the first reason, and where
    each rollout's own reason is recorded (None when every grade reached a verdict)."""
    if not _unjudged:
        return None
    count = sum(_unjudged.values())
    first = next(iter(_unjudged)).removeprefix("could not judge: ")
    raised = "raise" in _unjudged_policy.values()
    outcome = (
        f"their rollouts errored (on_grader_error=raise); each rollout's reason is in {REASON_IN_TRACES} "
        "(vf-validate: results.jsonl, `error`)"
        if raised
        else "they scored 0.0 (on_grader_error=zero); each reason is in traces.jsonl: "
        f"traces[i].info.{INFO_KEY}.reason"
    )
    others = f" ({len(_unjudged) - 1} other reason(s) too)" if len(_unjudged) > 1 else ""
    return f"{count} grade(s) could not judge, so {outcome}. First reason{others}: {first}"


def _print_unjudged_summary() -> None:
    line = unjudged_summary()
    if line is not None:
        # A blank line first: vf-eval's dashboard ends with its own notice (vf-eval will be
        # deprecated ...), which this line otherwise read as the end of (issue 41).
        print(file=sys.stderr)
        notice(line)


def warn_unjudged_once(reason: str, on_grader_error: str) -> None:
    """Count a grade that reached no verdict; the first time, one prominent warning (to the
    log). Under a verifiers CLI, a one-line summary is printed to stderr at exit, after vf-eval's
    dashboard has closed, so the reason is on screen in its default (rich) mode too."""
    global _summary_registered
    first = not _unjudged
    _unjudged[reason] = _unjudged.get(reason, 0) + 1
    _unjudged_policy[reason] = on_grader_error
    if not _summary_registered and verifiers_cli_logging():
        _summary_registered = True
        atexit.register(_print_unjudged_summary)
    if not first:
        return
    logger.warning(
        "\n%s\nGRADING IS NOT POSSIBLE: %s\nRollouts are %s until this is fixed. Check the machine with "
        "`lean-mod-add-proof doctor`; install Lean with `lean-mod-add-proof install-lean`.\n%s",
        "=" * 78,
        reason.removeprefix("could not judge: "),
        "errored (on_grader_error=raise)"
        if on_grader_error == "raise"
        else "scored 0.0 (on_grader_error=zero)",
        "=" * 78,
    )


#: Set to `1` only by a test that wants grades by the toolchain double scored as verdicts. Without
#: it the taskset scores none of them: each is "could not judge" (issue 41).
SCORE_DOUBLE_ENV = "LEAN_MOD_ADD_PROOF_SCORE_TOOLCHAIN_DOUBLE"


def double_is_scored() -> bool:
    """Whether a test asked for the toolchain double's grades to be scored (`SCORE_DOUBLE_ENV`)."""
    return os.environ.get(SCORE_DOUBLE_ENV) == "1"


def double_refused(toolchain: str | None, lean_toolchain: str) -> str:
    """Why a grade by the toolchain double is not scored (pure)."""
    named = (toolchain or "the test double").removeprefix(f"{DOUBLE_BANNER}: ")
    return (
        f"{DOUBLE_BANNER}: the toolchain is the test double ({named}), scripts that act out what "
        f"a test scripts; the taskset scores none of its grades. Install Lean: {install_fix(lean_toolchain)}"
    )


def scored_grade(result: GradeResult, lean_toolchain: str, double_scored: bool) -> GradeResult:
    """The grade as the taskset scores it: a grade by the toolchain double is could-not-judge
    (its flag and the double's own verdict kept for diagnosis), unless `double_scored` (pure)."""
    if not result.toolchain_double or double_scored or not result.judged:
        return result
    return result.model_copy(
        update={
            "judged": False,
            "stage_reached": "toolchain",
            "failed_stage": "toolchain",
            "reason": "could not judge: "
            + double_refused(result.toolchain, lean_toolchain)
            + f" (the double's own verdict: {result.reason})",
        }
    )


def grading_blocker(task: LeanTaskConfig, toolchain_dir: Path | None) -> str | None:
    """Why no grade made here can reach a verdict, found without grading: the checks every grade
    makes first (the pinned toolchain, that it is not the test double, the sandbox that
    `sandbox` asks for, prlimit); None when none fails. Cheap after the first call (the
    toolchain and sandbox probes are cached)."""
    found = locate_toolchain(toolchain_dir, lean_toolchain=task.lean_toolchain)
    if not isinstance(found, Toolchain):
        return f"Lean toolchain not found: {found.reason}; {found.fix}"
    if found.is_double and not double_is_scored():
        return double_refused(found.label, task.lean_toolchain)
    probe = None if task.sandbox == "off" else probe_sandbox()
    _, error = decide_sandbox(task.sandbox, probe)
    if error is not None:
        return f"{error} (install bubblewrap, or set sandbox off to run untrusted code unsandboxed)"
    if find_prlimit() is None:
        return "prlimit (util-linux) not found; it enforces the file-size cap"
    return None


def blocker_banner(reason: str, on_grader_error: str) -> str:
    """The one line printed before the first rollout when grading cannot work (pure)."""
    outcome = (
        "error (on_grader_error=raise)" if on_grader_error == "raise" else "score 0.0 (on_grader_error=zero)"
    )
    # Under `zero` the rollout is not errored (its `errors` list is empty): the reason is on the grade.
    where = (
        REASON_IN_TRACES if on_grader_error == "raise" else f"traces.jsonl: traces[i].info.{INFO_KEY}.reason"
    )
    return (
        f"GRADING IS NOT POSSIBLE here: {reason}. Every rollout will {outcome} until this is fixed "
        f"(`lean-mod-add-proof doctor` checks the machine); each rollout's reason: {where}."
    )


def result_from_box(
    exit_code: int, stdout: str, stderr: str, unjudged: Callable[[str], GradeResult]
) -> GradeResult:
    """The GradeResult a box's `grade --json` printed, checked against its exit code (0 accepted,
    1 rejected, 3 could not judge); anything else is could-not-judge, never an acceptance (pure)."""
    tail = " ".join((stderr or stdout or "").split())[-300:]
    try:
        data = json.loads(stdout)
    except ValueError:
        return unjudged(f"the grader in the runtime printed no result (exit {exit_code}): {tail}")
    if not isinstance(data, dict) or "error" in data:
        error = data.get("error") if isinstance(data, dict) else None
        return unjudged(f"the grader in the runtime refused (exit {exit_code}): {error or tail}")
    try:
        result = GradeResult.model_validate(data)
    except ValueError:
        return unjudged(f"the grader in the runtime printed an unreadable result (exit {exit_code})")
    if exit_code != verdict_exit_code(result):
        return unjudged(f"the grader in the runtime exited {exit_code}, which disagrees with its result")
    return result


#: The most log lines of a runtime box's grader passed on to this process's log, per grade.
BOX_LOG_LINES_MAX = 50


def box_log_lines(stderr: str) -> list[str]:
    """The long-step lines (grading/steps_log.py) a runtime box's grader wrote on its stderr, to
    pass on to the host's log: their messages, the last `BOX_LOG_LINES_MAX`, each on one line
    (pure). The box is the model's: anything else there is not this grader's to log."""
    found = [one_line(m) for m in LOG_LINE.findall(stderr or "")]
    return found[-BOX_LOG_LINES_MAX:]


def reply_key(reply: str) -> str:
    """What identifies a graded reply on the trace (sha256 of its UTF-8-safe text; pure)."""
    return sha256_text(utf8_safe(reply))


def stage_metrics(result: GradeResult) -> dict[str, float]:
    return {METRIC_PREFIX + name: value for name, value in result.stage_flags().items()}


class LeanTask(vf.Task[LeanData, vf.State, LeanTaskConfig]):
    """Grade the reply once (in the metric), cache it on the trace, reward the kernel's verdict."""

    @property
    def key(self) -> str:
        return self.data.id or self.hash

    @property
    def tasks_dir(self) -> Path:
        return Path(self.data.tasks_dir) if self.data.tasks_dir else DEFAULT_TASKS_DIR

    def grade_task(self) -> GradeTask:
        """What the grader needs, from the task's own data (no second read of tasks.jsonl)."""
        return GradeTask(
            task_id=self.data.id or "",
            p=self.data.p,
            network_lean=read_verbatim(NETWORK_LEAN_PATH),
            weights_lean=self.weights_lean(),
        )

    def weights_lean(self) -> str:
        """This task's Weights.lean, checked against the hash it was loaded with."""
        path = weights_path(self.tasks_dir, self.data.id or "")
        text = read_verbatim(path)
        if sha256_text(text) != self.data.weights_sha256:
            raise TaskSetError(f"{path} does not match the task's weights_sha256")
        return text

    def _unjudged(self, reason: str) -> GradeResult:
        return GradeResult(
            reason=f"could not judge: {reason}",
            judged=False,
            failed_stage="toolchain",
            task_id=self.data.id or "",
            theorem=self.data.theorem,
        )

    async def grade_text(self, reply: str, runtime: vf.Runtime | None = None) -> GradeResult:
        """Grade one reply (on the host, or in the rollout's runtime box). Cancellation aside it
        never raises: a failure of the grader itself is a "could not judge" result."""
        try:
            if self.config.grade_in == "runtime":
                result = await self.grade_in_runtime(reply, runtime)
            else:
                result = await grade_reply(reply, self.grade_task(), self.config.grader_config())
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # e.g. the task's Weights.lean changed on disk
            logger.exception("grading %s failed", self.key)
            return self._unjudged(f"grader error: {type(exc).__name__}: {exc}")
        return scored_grade(result, self.config.lean_toolchain, double_is_scored())

    def store(self, trace: vf.Trace, reply: str, result: GradeResult, attempts: list[GradeResult]) -> None:
        """Put the grade on `trace.info` (the final one, and every attempt's when there were several)."""
        info: dict[str, Any] = {
            **utf8_safe(result.model_dump(mode="json")),
            "graded_in": self.config.grade_in,
            "reply_sha256": reply_key(reply),
        }
        if len(attempts) > 1 or self.config.max_attempts > 1:
            info["attempts"] = [utf8_safe(a.model_dump(mode="json")) for a in attempts]
        trace.info[INFO_KEY] = info

    async def grade_trace(self, trace: vf.Trace, runtime: vf.Runtime | None = None) -> GradeResult:
        """The grade of the trace's final reply: the one made during the run if the feedback loop
        already graded exactly this reply, else a new one; stored on `trace.info`."""
        reply = reply_text(trace)
        cached = trace.info.get(INFO_KEY)
        if (
            isinstance(cached, dict)
            and cached.get("reply_sha256") == reply_key(reply)
            and "attempts" in cached
        ):
            return GradeResult.model_validate(cached)
        result = await self.grade_text(reply, runtime)
        self.store(trace, reply, result, [result])
        return result

    def runtime_argv(self) -> list[str]:
        """`lean-mod-add-proof grade ... --json` as run inside the box (pure)."""
        if self.data.tasks_dir is not None:
            raise TaskSetError(
                "grade_in=runtime grades the packaged task set only (tasks_dir is a host path)"
            )
        argv = ["lean-mod-add-proof", "grade", self.data.id or "", REPLY_IN_BOX, "--reply", "--json"]
        argv += ["--weights-sha256", self.data.weights_sha256]
        for name in RUNTIME_SETTINGS:
            argv += [flag_name(name), str(getattr(self.config, name))]
        if self.data.box_is_host and self.config.cache_dir is not None:
            # The box is this machine: the configured cache is its cache too (issue 29: tests that
            # set a cache dir must not fill the real ~/.cache/lean-mod-add-proof).
            argv += [flag_name("cache_dir"), str(self.config.cache_dir)]
        return argv

    async def grade_in_runtime(self, reply: str, runtime: vf.Runtime | None) -> GradeResult:
        """Run the grader inside the rollout's runtime box and read back its JSON result. The
        verdict rules are the box's grader's own, identical to the host's; anything but a
        well-formed result whose verdict agrees with the exit code is "could not judge"."""
        if runtime is None:
            return self._unjudged("grade_in=runtime needs the rollout's runtime (none was given)")
        await runtime.write(REPLY_IN_BOX, reply.encode("utf-8", "surrogatepass"))
        done = await runtime.run(self.runtime_argv(), {})
        for line in box_log_lines(done.stderr):  # (its self-test, cache build: after the fact)
            logger.info("runtime box of %s: %s", self.key, line)
        return result_from_box(done.exit_code, done.stdout, done.stderr, self._unjudged)

    def unjudged(self, trace: vf.Trace, result: GradeResult) -> None:
        """A grade that reached no verdict: warn once per process, and with `on_grader_error=raise`
        error the rollout (verifiers records it as ok=False with the reason), so that an RL run
        never trains on it as if the proof were wrong."""
        warn_unjudged_once(result.reason, self.config.on_grader_error)
        if self.config.on_grader_error == "raise":
            raise GraderUnavailable(result.reason)

    @vf.metric
    async def lean_stages(self, trace: vf.Trace, runtime: vf.Runtime | None = None) -> dict[str, float]:
        """Which grading stages passed, whether a verdict was reached, how long it took, and how
        many attempts were used."""
        result = await self.grade_trace(trace, runtime)
        attempts = trace.info[INFO_KEY].get("attempts") or [trace.info[INFO_KEY]]
        metrics = {
            **stage_metrics(result),
            METRIC_PREFIX + "attempts": float(len(attempts)),
        }
        if attempts[0].get("judged") is not False:  # (a first attempt with no verdict: no value)
            metrics[METRIC_PREFIX + "first_attempt_accepted"] = float(attempts[0].get("accepted") is True)
        if not result.judged:
            trace.metrics.update(metrics)  # recorded even when the rollout is errored below
            self.unjudged(trace, result)
        return metrics

    @vf.reward(weight=1.0)
    async def kernel_accepts(self, trace: vf.Trace, runtime: vf.Runtime | None = None) -> float:
        """1.0 only when Lean's kernel accepts the proof and every check passes."""
        cached = trace.info.get(INFO_KEY)
        if not (isinstance(cached, dict) and "accepted" in cached):
            result = await self.grade_trace(trace, runtime)
            if not result.judged:
                self.unjudged(trace, result)
            cached = trace.info[INFO_KEY]
        if cached["accepted"] is not True:
            return 0.0
        attempts = len(cached.get("attempts") or [cached])
        return self.config.attempt_discount ** (attempts - 1)

    async def validate(self, runtime: vf.Runtime | None = None) -> bool | None:
        """Gold check: the reference proof must be accepted. A grade that reached no verdict
        raises, so vf-validate lists the task as an error with the reason."""
        try:
            task, config = self.grade_task(), self.config.grader_config()
            result = await grade(reference_submission(self.data.p), task, config)
            result = scored_grade(result, self.config.lean_toolchain, double_is_scored())
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.exception("gold check of %s failed", self.key)
            result = self._unjudged(f"grader error: {type(exc).__name__}: {exc}")
        if not result.judged:
            warn_unjudged_once(result.reason, "raise")
            raise GraderUnavailable(result.reason)
        if not result.accepted:
            logger.warning("gold check of %s: reference proof not accepted: %s", self.key, result.reason)
        return result.accepted


class LeanModAddProofTaskset(vf.Taskset[LeanTask, LeanTasksetConfig]):
    """The frozen mod-p adder networks of a generated task set, filtered by split and max_p."""

    local_boxes: bool = False
    """Set by LeanEnv when the agent runs on the subprocess runtime: each rollout's box is this
    machine, so `grade_in=runtime` needs (and gets) no image and grades with this machine's
    toolchain as `lean-mod-add-proof grade` finds it there."""

    def preflight(self) -> str | None:
        """Before the first rollout: if grading cannot reach a verdict here, say so in one line on
        stderr (once per reason and process) and return the reason. A box of a container runtime
        is checked by its own grader, at its first grade."""
        task = self.config.task
        if task.grade_in == "runtime" and not self.local_boxes:
            return None
        # A local box's grader finds the toolchain as the CLI does (toolchain_dir is a host setting).
        toolchain_dir = task.toolchain_dir if task.grade_in == "host" else None
        reason = grading_blocker(task, toolchain_dir)
        if reason is not None:
            notice_once(blocker_banner(reason, task.on_grader_error))
        elif isinstance(
            found := locate_toolchain(toolchain_dir, lean_toolchain=task.lean_toolchain), Toolchain
        ) and (found.is_double):
            notice_once(  # a test asked for the double's grades to be scored: still say what it is
                f"{DOUBLE_BANNER}: grading with the test double {found.dir}; its grades are scored "
                f"only because {SCORE_DOUBLE_ENV}=1 is set (tests only)"
            )
        return reason

    def records(self) -> list[TaskRecord]:
        cfg = self.config
        rows = load_tasks(cfg.tasks_dir or DEFAULT_TASKS_DIR)
        return [r for r in rows if in_split(r.split, cfg.split) and (cfg.max_p is None or r.p <= cfg.max_p)]

    def load(self) -> Iterator[LeanTask]:
        cfg = self.config
        tasks_dir = cfg.tasks_dir or DEFAULT_TASKS_DIR
        records = self.records()
        if not records:
            raise ValueError(f"no task in {tasks_dir} matches split={cfg.split!r}, max_p={cfg.max_p}")
        self.preflight()
        network = read_verbatim(NETWORK_LEAN_PATH)
        # A task's shipped limit (the hard tasks'), unless the timeouts file lists the task.
        limits = {r.id: r.timeout_s for r in records if r.timeout_s is not None}
        limits.update(read_task_timeouts(cfg.task.timeouts) if cfg.task.timeouts is not None else {})
        image = (cfg.image or None) if cfg.task.grade_in == "runtime" and not self.local_boxes else None
        for r in records:
            task_cfg = cfg.task.for_task(r.id, limits)
            prompt = build_prompt(
                p=r.p,
                network_lean=network,
                weights_lean=read_verbatim(weights_path(tasks_dir, r.id)),
                timeout_s=task_cfg.timeout_s,
                lean_toolchain=task_cfg.lean_toolchain,
                axioms_mode=cfg.task.axioms_mode,
                memory_mb=cfg.task.memory_mb,
            )
            data = LeanData(
                id=r.id,
                name=r.id,
                prompt=prompt,
                system_prompt=SYSTEM_PROMPT,
                p=r.p,
                hidden=r.hidden,
                seed=r.seed,
                split=r.split,
                train_fraction=r.train_fraction,
                theorem=r.theorem,
                weights_sha256=r.weights_sha256,
                tasks_dir=None if cfg.tasks_dir is None else str(cfg.tasks_dir),
                image=image,
                box_is_host=self.local_boxes,
            )
            yield LeanTask(data, task_cfg)


#: The console scripts a rollout's box on the subprocess runtime runs from PATH: the null
#: harness's `uv` (it runs its chat program with `uv run --script`) and, with grade_in=runtime,
#: this package's own CLI.
UV = "uv"
CLI = "lean-mod-add-proof"


def own_uv() -> Path | None:
    """The `uv` installed with this package (a dependency), wherever PATH points."""
    try:
        import uv  # the uv wheel's own locator

        return Path(uv.find_uv_bin())
    except (ImportError, FileNotFoundError):
        candidate = Path(sys.executable).parent / UV
        return candidate if candidate.is_file() else None


def own_scripts_dir() -> Path:
    """Where this environment's console scripts (`lean-mod-add-proof`, `vf-eval`) live."""
    return Path(sysconfig.get_path("scripts"))


def put_own_tools_on_path(environ: MutableMapping[str, str], need_cli: bool) -> str | None:
    """For the subprocess runtime, whose boxes inherit this process's PATH: append the
    directories of this package's own `uv` (and, when `need_cli`, `lean-mod-add-proof`) to
    `environ["PATH"]` when PATH has none, e.g. when vf-eval was started by its full path with the
    virtual environment not activated (verifiers would otherwise try to download uv). Returns
    one line saying what to do when a tool is nowhere to be found, else None."""
    path = environ.get("PATH", "")
    added: list[str] = []
    problem = None
    if shutil.which(UV, path=path) is None:
        uv = own_uv()
        if uv is not None:
            added.append(str(uv.parent))
        else:
            problem = (
                "the null harness runs its chat program with `uv`, which is neither on PATH nor "
                f"installed next to {sys.executable}: `{sys.executable} -m pip install uv`, or put uv "
                "on PATH (verifiers will otherwise try to download it)"
            )
    if need_cli and shutil.which(CLI, path=path) is None:
        scripts = own_scripts_dir()
        if (scripts / CLI).is_file():
            added.append(str(scripts))
        elif problem is None:
            problem = (
                f"grade_in=runtime runs `{CLI} grade` in each box, and `{CLI}` is not on PATH: "
                "activate the environment this package is installed in, or put its bin on PATH"
            )
    if added:
        environ["PATH"] = os.pathsep.join([*([path] if path else []), *dict.fromkeys(added)])
    return problem


class LeanEnvConfig(vf.SingleAgentEnvConfig):
    """The single agent seat, defaulting to the null (chat-only) harness on the subprocess runtime."""

    agent: vf.AgentConfig = vf.AgentConfig(harness={"id": "null"}, runtime=vf.SubprocessConfig())
    """The policy under evaluation; `--env.agent.harness.*` / `--env.agent.runtime.*` override."""


class LeanEnv(vf.SingleAgentEnv, vf.Env[LeanEnvConfig]):
    """A single-agent env (so replay and GEPA still apply) with chat-only local defaults, and the
    compiler-feedback loop when `max_attempts` > 1.

    The loop is verifiers v1's turn-by-turn interaction (`Agent.interaction`, `Interaction.turn`
    in verifiers/v1/agent.py; the user-sim env drives one the same way): the prompted task
    speaks first, each reply is graded, and a judged rejection is answered with the feedback
    message until an attempt is accepted, no verdict can be reached, or the attempts run out.
    Leaving the interaction finishes the rollout, and scoring reuses the last grade.

    On the subprocess runtime (the default), before any rollout: the tools the local boxes run
    are put on PATH (`put_own_tools_on_path`), and `grade_in=runtime` drops the image (the box is
    this machine: there is none to start), so it needs no `--env.taskset.image ""`."""

    def __init__(self, config: LeanEnvConfig) -> None:
        super().__init__(config)
        if not isinstance(config.agent.runtime, vf.SubprocessConfig):
            return
        taskset = self.taskset
        runtime_grading = False
        if isinstance(taskset, LeanModAddProofTaskset):
            taskset.local_boxes = True
            runtime_grading = taskset.config.task.grade_in == "runtime"
            if runtime_grading and taskset.config.image:
                notice_once(
                    f"grade_in=runtime on the subprocess runtime: each rollout's box is this machine, "
                    f"so image {taskset.config.image!r} is not used; the box grades with this "
                    "machine's toolchain ($LEAN_MOD_ADD_PROOF_TOOLCHAIN, else elan's)"
                )
        problem = put_own_tools_on_path(os.environ, need_cli=runtime_grading)
        if problem is not None:
            notice_once(problem)

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        if not isinstance(task, LeanTask) or task.config.max_attempts <= 1:
            await agents.agent.run(task)
            return
        config = task.config
        async with agents.agent.interaction(task) as conversation:
            segment = await conversation.turn()
            attempts: list[GradeResult] = []
            while not segment.terminated:
                reply = reply_text(conversation.trace)
                result = await task.grade_text(reply)
                attempts.append(result)
                task.store(conversation.trace, reply, result, attempts)
                if result.accepted or not result.judged or len(attempts) >= config.max_attempts:
                    break
                left = config.max_attempts - len(attempts)
                segment = await conversation.turn(feedback_message(result, left, config.feedback_chars))
