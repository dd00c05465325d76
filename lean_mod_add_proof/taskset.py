"""The verifiers v1 taskset: task data, run-time and load-time config, the task's metric and
reward, the taskset and its default env (null harness on the subprocess runtime)."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import verifiers.v1 as vf
from pydantic import Field, field_validator

from lean_mod_add_proof.constants import reference_submission
from lean_mod_add_proof.dataset.tasks import (
    DEFAULT_TASKS_DIR,
    NETWORK_LEAN_PATH,
    TaskRecord,
    TaskSetError,
    load_tasks,
    sha256_text,
    weights_path,
)
from lean_mod_add_proof.grading.pipeline import grade, grade_reply
from lean_mod_add_proof.grading.result import AxiomsMode, GraderConfig, GradeResult, SandboxMode
from lean_mod_add_proof.prompt import SYSTEM_PROMPT, build_prompt, read_verbatim

logger = logging.getLogger(__name__)

#: Where the grade is stored on the trace.
INFO_KEY = "lean_grader"
#: Prefix of the stage metrics, so they read as the `lean_stages` metric's keys.
METRIC_PREFIX = "lean_stages/"

_GRADER_DEFAULTS = GraderConfig()


class LeanData(vf.TaskData):
    """One task on the wire: small and JSON-only (the Weights text lives in the prompt)."""

    p: int
    """The modulus: the network must compute (a + b) % p."""
    hidden: int
    """Number of hidden neurons."""
    seed: int
    """Training seed of the frozen network."""
    split: Literal["train", "eval"]
    """Which split the task belongs to (seed 2 is eval)."""
    train_fraction: float
    """Fraction of the p*p pairs the network was trained on."""
    theorem: str
    """Fully qualified name of the theorem to prove."""
    weights_sha256: str
    """sha256 of the task's Weights.lean; the grader refuses a file that does not match."""
    tasks_dir: str | None = None
    """The generated task set the task came from (None: the one shipped in the package)."""


class LeanTaskConfig(vf.TaskConfig):
    """How submissions are graded (`--env.taskset.task.*`); mirrors GraderConfig."""

    timeout_s: float = Field(_GRADER_DEFAULTS.timeout_s, gt=0)
    """One deadline, in seconds, for build, kernel replay and checks together."""
    axioms_mode: AxiomsMode = _GRADER_DEFAULTS.axioms_mode
    """`subset`: any of propext, Classical.choice, Quot.sound; `exact`: all three, nothing else."""
    work_root: Path | None = _GRADER_DEFAULTS.work_root
    """Where each grade's throwaway Lake package is made (default: the system temp dir)."""
    keep_packages: bool = _GRADER_DEFAULTS.keep_packages
    """Keep each grade's package directory for inspection instead of deleting it."""
    memory_mb: int = Field(_GRADER_DEFAULTS.memory_mb, ge=64)
    """Address-space cap for every Lean process, in MiB."""
    max_file_mb: int = Field(_GRADER_DEFAULTS.max_file_mb, ge=1)
    """Largest file a Lean process may write, in MiB."""
    max_concurrent: int | None = Field(_GRADER_DEFAULTS.max_concurrent, ge=1)
    """How many grades may run Lean at once in this process (default: the number of cores)."""
    sandbox: SandboxMode = _GRADER_DEFAULTS.sandbox
    """Run Lean under bubblewrap: `auto` when bwrap works, `on` to require it, `off` never."""
    cache_dir: Path | None = _GRADER_DEFAULTS.cache_dir
    """Where prebuilt Network/Weights packages are kept (default: ~/.cache/lean-mod-add-proof)."""
    toolchain_dir: Path | None = _GRADER_DEFAULTS.toolchain_dir
    """Toolchain directory holding bin/lake (default: the pinned toolchain under ~/.elan)."""

    def grader_config(self) -> GraderConfig:
        """The GraderConfig these knobs describe (the one place the two are mapped)."""
        shared = set(GraderConfig.model_fields) & set(type(self).model_fields)
        return GraderConfig(**{name: getattr(self, name) for name in shared})


class LeanTasksetConfig(vf.TasksetConfig):
    """Which tasks load (`--env.taskset.*`)."""

    split: Literal["train", "eval", "all"] = "train"
    """`train` (seeds 0 and 1), `eval` (seed 2, held out) or `all`."""
    max_p: int | None = Field(None, ge=2)
    """Only tasks with p <= max_p (default: no limit)."""
    tasks_dir: Path | None = None
    """Another generated task set (tasks.jsonl + <id>/Weights.lean); default: the packaged one."""
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


@functools.lru_cache(maxsize=8)
def _index(tasks_dir: str) -> dict[str, TaskRecord]:
    """tasks.jsonl of a task set by id (read once per process; Weights files are re-checked
    against their hash on every grade)."""
    return {r.id: r for r in load_tasks(Path(tasks_dir), verify_hashes=False)}


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

    @property
    def record(self) -> TaskRecord:
        """This task's row of tasks.jsonl (the grader's view of the task)."""
        record = _index(str(self.tasks_dir)).get(self.data.id or "")
        if record is None:
            raise TaskSetError(f"task {self.data.id!r} is not in {self.tasks_dir}")
        return record

    def weights_lean(self) -> str:
        """This task's Weights.lean, checked against the hash it was loaded with."""
        path = weights_path(self.tasks_dir, self.data.id or "")
        text = read_verbatim(path)
        if sha256_text(text) != self.data.weights_sha256:
            raise TaskSetError(f"{path} does not match the task's weights_sha256")
        return text

    def _failure(self, reason: str) -> GradeResult:
        return GradeResult(reason=reason, task_id=self.data.id or "", theorem=self.data.theorem)

    async def grade_trace(self, trace: vf.Trace) -> GradeResult:
        """Grade the trace's reply and store the result on `trace.info`; never raises
        (except cancellation): a grader failure is a 0.0 with the reason recorded."""
        try:
            result = await grade_reply(
                reply_text(trace), self.record, self.weights_lean(), self.config.grader_config()
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.exception("grading %s failed", self.key)
            result = self._failure(f"grader error: {type(exc).__name__}: {exc}")
        trace.info[INFO_KEY] = utf8_safe(result.model_dump(mode="json"))
        return result

    @vf.metric
    async def lean_stages(self, trace: vf.Trace) -> dict[str, float]:
        """Which grading stages passed, and how long grading took."""
        return stage_metrics(await self.grade_trace(trace))

    @vf.reward(weight=1.0)
    async def kernel_accepts(self, trace: vf.Trace) -> float:
        """1.0 only when Lean's kernel accepts the proof and every check passes."""
        cached = trace.info.get(INFO_KEY)
        if isinstance(cached, dict) and "accepted" in cached:
            return 1.0 if cached["accepted"] is True else 0.0
        return 1.0 if (await self.grade_trace(trace)).accepted else 0.0

    async def validate(self, runtime: vf.Runtime | None = None) -> bool | None:
        """Gold check: the reference (brute-force `decide +kernel`) proof must be accepted."""
        try:
            result = await grade(
                reference_submission(self.data.p),
                self.record,
                self.weights_lean(),
                self.config.grader_config(),
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.exception("gold check of %s failed", self.key)
            result = self._failure(f"grader error: {type(exc).__name__}: {exc}")
        if not result.accepted:
            logger.warning("gold check of %s: reference proof not accepted: %s", self.key, result.reason)
        return result.accepted


class LeanModAddProofTaskset(vf.Taskset[LeanTask, LeanTasksetConfig]):
    """The frozen mod-p adder networks of a generated task set, filtered by split and max_p."""

    def records(self) -> list[TaskRecord]:
        cfg = self.config
        rows = load_tasks(cfg.tasks_dir or DEFAULT_TASKS_DIR)
        return [
            r
            for r in rows
            if (cfg.split == "all" or r.split == cfg.split) and (cfg.max_p is None or r.p <= cfg.max_p)
        ]

    def load(self) -> Iterator[LeanTask]:
        cfg = self.config
        tasks_dir = cfg.tasks_dir or DEFAULT_TASKS_DIR
        records = self.records()
        if not records:
            raise ValueError(f"no task in {tasks_dir} matches split={cfg.split!r}, max_p={cfg.max_p}")
        network = read_verbatim(NETWORK_LEAN_PATH)
        for r in records:
            prompt = build_prompt(
                p=r.p,
                network_lean=network,
                weights_lean=read_verbatim(weights_path(tasks_dir, r.id)),
                timeout_s=cfg.task.timeout_s,
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
            )
            yield LeanTask(data, cfg.task)


class LeanEnvConfig(vf.SingleAgentEnvConfig):
    """The single agent seat, defaulting to the null (chat-only) harness on the subprocess runtime."""

    agent: vf.AgentConfig = vf.AgentConfig(harness={"id": "null"}, runtime=vf.SubprocessConfig())
    """The policy under evaluation; `--env.agent.harness.*` / `--env.agent.runtime.*` override."""


class LeanEnv(vf.SingleAgentEnv, vf.Env[LeanEnvConfig]):
    """A single-agent env (so replay and GEPA still apply) with chat-only local defaults."""
