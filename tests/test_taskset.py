"""The taskset without a model or a harness: loading, the prompt, config resolution, and
offline scoring of hand-built traces (`Task.score` with no runtime). None of this needs Lean: where a
grade reaches the toolchain stage, the toolchain is forced missing, so these tests say the same
thing on a machine that has Lean."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest
import verifiers.v1 as vf
from helpers import DOUBLE_DIR, STAGE_KEYS, make_task_set
from pydantic import ValidationError

import lean_mod_add_proof
from lean_mod_add_proof.constants import (
    ALLOWED_AXIOMS,
    ALLOWED_IMPORTS,
    reference_submission,
    theorem_signature,
)
from lean_mod_add_proof.dataset.tasks import (
    DEFAULT_TASKS_DIR,
    HARD_EVAL_SEED,
    NETWORK_LEAN_PATH,
)
from lean_mod_add_proof.grading.guard import BANNED_WORDS
from lean_mod_add_proof.grading.result import GraderConfig
from lean_mod_add_proof.grading.toolchain import DOUBLE_BANNER
from lean_mod_add_proof.taskset import (
    INFO_KEY,
    SCORE_DOUBLE_ENV,
    GraderUnavailable,
    LeanEnv,
    LeanEnvConfig,
    LeanModAddProofTaskset,
    LeanTask,
    LeanTaskConfig,
    LeanTasksetConfig,
    box_log_lines,
)

TASKSET_ID = "lean-mod-add-proof"


@pytest.fixture
def tasks_dir(tmp_path: Path) -> Path:
    return make_task_set(tmp_path / "tasks")


@pytest.fixture
def no_toolchain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty directory as the configured toolchain, and an empty ELAN_HOME."""
    empty = tmp_path / "no-toolchain"
    empty.mkdir()
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "empty-elan"))
    monkeypatch.delenv("LEAN_MOD_ADD_PROOF_TOOLCHAIN", raising=False)
    return empty


def rows_of(tasks_dir: Path) -> list[dict]:
    lines = (tasks_dir / "tasks.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def taskset(tasks_dir: Path | None, **cfg) -> LeanModAddProofTaskset:
    task = cfg.pop("task", {})
    return LeanModAddProofTaskset(
        LeanTasksetConfig(id=TASKSET_ID, tasks_dir=tasks_dir, task=LeanTaskConfig(**task), **cfg)
    )


def make_trace(task: vf.Task, reply: str) -> vf.Trace:
    return vf.Trace(
        agent=vf.AgentInfo(config=vf.AgentConfig()),
        task=vf.TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
        nodes=[
            vf.MessageNode(parent=None, message=vf.UserMessage(content=task.data.prompt_text)),
            vf.MessageNode(parent=0, message=vf.AssistantMessage(content=reply), sampled=True),
        ],
    )


# --- loading -------------------------------------------------------------------------------------


def selected(split: str, row_split: str) -> bool:
    """The documented rule, written out independently: `all` is train + eval (the seed's grid),
    `hard` is hard-train + hard-eval."""
    groups = {"all": ("train", "eval"), "hard": ("hard-train", "hard-eval")}
    return row_split in groups.get(split, (split,))


@pytest.mark.parametrize("split", ["train", "eval", "all", "hard-train", "hard-eval", "hard"])
@pytest.mark.parametrize("max_p", [None, 5, 7, 29])
def test_load_counts_match_tasks_jsonl(tmp_path: Path, split: str, max_p: int | None) -> None:
    specs = ((5, 8, 0), (5, 8, 2), (7, 16, 1), (11, 8, 0), (29, 2, 0), (29, 2, 3))
    tasks_dir = make_task_set(tmp_path / "tasks", specs)
    expected = [
        r["id"]
        for r in rows_of(tasks_dir)
        if selected(split, r["split"]) and (max_p is None or r["p"] <= max_p)
    ]
    if not expected:
        with pytest.raises(ValueError, match=f"no ({split} )?task"):
            list(taskset(tasks_dir, split=split, max_p=max_p))
        return
    tasks = list(taskset(tasks_dir, split=split, max_p=max_p))
    assert [t.data.id for t in tasks] == expected
    assert [t.key for t in tasks] == expected
    assert [t.data.idx for t in tasks] == list(range(len(expected)))


@pytest.mark.skipif(
    not (DEFAULT_TASKS_DIR / "tasks.jsonl").is_file(), reason="packaged task set not generated yet"
)
@pytest.mark.parametrize(
    ("split", "max_p"),
    [
        ("train", None),
        ("eval", None),
        ("all", None),
        ("hard", None),
        ("hard-train", None),
        ("hard-eval", None),
        ("train", 7),
        ("eval", 11),
        ("all", 23),
        ("hard", 113),
    ],
)
def test_packaged_set_counts(split: str, max_p: int | None) -> None:
    rows = rows_of(DEFAULT_TASKS_DIR)
    expected = [r["id"] for r in rows if selected(split, r["split"]) and (max_p is None or r["p"] <= max_p)]
    assert [t.key for t in taskset(None, split=split, max_p=max_p)] == expected


@pytest.mark.skipif(
    not (DEFAULT_TASKS_DIR / "tasks.jsonl").is_file(), reason="packaged task set not generated yet"
)
def test_all_is_the_seed_grid_and_hard_is_apart() -> None:
    everything = rows_of(DEFAULT_TASKS_DIR)
    grid = [t.data for t in taskset(None, split="all")]
    hard = [t.data for t in taskset(None, split="hard")]
    assert len(grid) == 63 and {d.p for d in grid} == {5, 7, 11, 13, 17, 19, 23}
    assert len(hard) >= 6 and all(d.p > 23 and d.split in ("hard-train", "hard-eval") for d in hard)
    assert len(grid) + len(hard) == len(everything)
    # One seed of every hard shape is held out, as seed 2 is in the grid.
    held_out = [d for d in hard if d.split == "hard-eval"]
    assert {(d.p, d.hidden) for d in held_out} == {(d.p, d.hidden) for d in hard}
    assert {d.seed for d in held_out} == {HARD_EVAL_SEED}


def write_timeouts(path: Path, limits: dict[str, float]) -> Path:
    fit = {"intercept_s": 1.0, "seconds_per_mul_add": 1e-4, "n_tasks": 1}
    doc = {"toolchain": "test", "fit": fit, "headroom": 3.0, "floor_s": 60.0, "timeouts": limits}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.skipif(
    not (DEFAULT_TASKS_DIR / "tasks.jsonl").is_file(), reason="packaged task set not generated yet"
)
def test_a_hard_task_is_graded_under_its_shipped_limit_unless_a_file_lists_it(tmp_path: Path) -> None:
    """The shipped limit (tasks.jsonl `timeout_s`) is the default for a hard task, whatever the
    fixed timeout_s says, in its config and in its prompt; a timeouts file listing the task wins."""
    rows = {r["id"]: r for r in rows_of(DEFAULT_TASKS_DIR)}
    hard = {t.data.id: t for t in taskset(None, split="hard", task={"timeout_s": 300})}
    first, second = sorted(hard)[:2]
    for tid, task in hard.items():
        shipped = rows[tid]["timeout_s"]
        assert shipped and task.config.timeout_s == shipped != 300
        assert f"{shipped:g} seconds" in task.data.prompt
    limits = write_timeouts(tmp_path / "t.json", {first: 4321.0})
    overridden = {t.data.id: t for t in taskset(None, split="hard", task={"timeouts": limits})}
    assert overridden[first].config.timeout_s == 4321.0 and "4321 seconds" in overridden[first].data.prompt
    assert overridden[second].config.timeout_s == rows[second]["timeout_s"]
    # The grid keeps the fixed timeout_s.
    grid = next(iter(taskset(None, split="all", task={"timeout_s": 123})))
    assert rows[grid.data.id]["timeout_s"] is None and grid.config.timeout_s == 123


def test_timeouts_file_sets_each_listed_task_and_falls_back(tasks_dir: Path, tmp_path: Path) -> None:
    limits = write_timeouts(tmp_path / "t.json", {"p05_h08_s0": 77.0, "p99_h01_s0": 5.0})
    tasks = {
        t.data.id: t for t in taskset(tasks_dir, split="all", task={"timeout_s": 123, "timeouts": limits})
    }
    listed, other = tasks["p05_h08_s0"], tasks["p07_h16_s1"]
    assert listed.config.timeout_s == 77.0 and listed.config.grader_config().timeout_s == 77.0
    assert "77 seconds" in listed.data.prompt and "123 seconds" not in listed.data.prompt
    assert other.config.timeout_s == 123 and "123 seconds" in other.data.prompt


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read"),
        ("{", "not JSON"),
        ('{"toolchain": "x"}', "fit"),
        ("BAD", "timeouts.p05_h08_s0: must be a positive number"),
    ],
)
def test_bad_timeouts_file_names_the_setting(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "t.json"
    if content == "BAD":
        write_timeouts(path, {"p05_h08_s0": -1.0})
    elif content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(ValidationError, match="timeouts") as info:
        LeanTaskConfig(timeouts=path)
    assert message in str(info.value)


def test_task_data_is_small_and_json(tasks_dir: Path) -> None:
    task = next(iter(taskset(tasks_dir, split="all")))
    dumped = task.data.model_dump(mode="json")
    assert {
        "p",
        "hidden",
        "seed",
        "split",
        "train_fraction",
        "theorem",
        "id",
        "name",
        "prompt",
        "system_prompt",
    } <= set(dumped)
    weights = (tasks_dir / task.data.id / "Weights.lean").read_text(encoding="utf-8")
    # The Weights text appears once: in the prompt, nowhere else.
    assert json.dumps(dumped).count(json.dumps(weights)[1:-1]) == 1
    assert task.data.split == "train" and task.data.theorem.endswith(f"adds_mod_{task.data.p}")


def test_prompt_contents(tasks_dir: Path) -> None:
    network = NETWORK_LEAN_PATH.read_bytes().decode("utf-8")
    for task in taskset(tasks_dir, split="all", task={"timeout_s": 123}):
        prompt = task.data.prompt
        assert isinstance(prompt, str)
        weights = (tasks_dir / task.data.id / "Weights.lean").read_bytes().decode("utf-8")
        assert network in prompt and weights in prompt
        assert theorem_signature(task.data.p) in prompt
        for word in BANNED_WORDS:
            assert f"`{word}`" in prompt, word
        for module in ALLOWED_IMPORTS:
            assert module in prompt
        for axiom in ALLOWED_AXIOMS:
            assert axiom in prompt
        assert "123 seconds" in prompt
        assert "```lean" in prompt and "LeanCheckedNetwork/Submission.lean" in prompt
        # Statement, Network.lean, Weights.lean, theorem, rules: in that order.
        order = [
            prompt.index("Prove in Lean 4"),
            prompt.index(network),
            prompt.index(weights),
            prompt.index(theorem_signature(task.data.p)),
            prompt.index("## Rules"),
        ]
        assert order == sorted(order)
        assert task.data.system_prompt


@pytest.mark.parametrize("toolchain", [None, "leanprover/lean4:v4.36.0", "leanprover/lean4:v4.35.0-rc9"])
def test_the_prompt_names_the_configured_toolchain(tasks_dir: Path, toolchain: str | None) -> None:
    """The rules name the toolchain the grader grades with (the `lean_toolchain` setting), not a
    constant: a prompt that names rc2 while the grader refuses anything but another would be wrong."""
    task_cfg = {} if toolchain is None else {"lean_toolchain": toolchain}
    expected = toolchain or GraderConfig().lean_toolchain
    for task in taskset(tasks_dir, split="all", task=task_cfg):
        (line,) = [x for x in task.data.prompt.splitlines() if x.startswith("- Toolchain: ")]
        assert line.startswith(f"- Toolchain: `{expected}`, "), line
        assert task.config.lean_toolchain == expected


def test_grader_config_is_built_from_task_config(tmp_path: Path) -> None:
    cfg = LeanTaskConfig(
        timeout_s=12,
        axioms_mode="exact",
        work_root=tmp_path,
        keep_packages=True,
        memory_mb=512,
        max_concurrent=2,
        sandbox="off",
        cache_dir=tmp_path / "c",
    )
    grader = cfg.grader_config()
    assert isinstance(grader, GraderConfig)
    assert (
        grader.timeout_s,
        grader.axioms_mode,
        grader.work_root,
        grader.keep_packages,
        grader.memory_mb,
        grader.max_concurrent,
        grader.sandbox,
        grader.cache_dir,
    ) == (12, "exact", tmp_path, True, 512, 2, "off", tmp_path / "c")
    assert LeanTaskConfig().grader_config() == GraderConfig()


# --- package exports and config resolution --------------------------------------------------------


def test_package_exports_one_taskset_and_one_env() -> None:
    assert sorted(lean_mod_add_proof.__all__) == ["LeanEnv", "LeanModAddProofTaskset"]
    assert vf.taskset_config_type(TASKSET_ID) is LeanTasksetConfig
    assert vf.environment_class(TASKSET_ID) is LeanEnv
    assert vf.task_type(TASKSET_ID) is LeanTask


def test_resolve_env_config_defaults_and_values(tasks_dir: Path) -> None:
    cfg = vf.resolve_env_config(
        {
            "taskset": {
                "id": TASKSET_ID,
                "split": "eval",
                "max_p": 11,
                "tasks_dir": str(tasks_dir),
                "task": {"timeout_s": 600, "axioms_mode": "exact"},
            }
        }
    )
    assert isinstance(cfg, LeanEnvConfig)
    assert isinstance(cfg.taskset, LeanTasksetConfig) and isinstance(cfg.taskset.task, LeanTaskConfig)
    assert (cfg.taskset.split, cfg.taskset.max_p, cfg.taskset.tasks_dir) == ("eval", 11, tasks_dir.resolve())
    assert (cfg.taskset.task.timeout_s, cfg.taskset.task.axioms_mode) == (600, "exact")
    # The Env's defaults: null harness on the subprocess runtime.
    assert cfg.agent.harness.id == "null"
    assert cfg.agent.runtime.type == "subprocess"
    ts = vf.load_taskset(cfg.taskset)
    assert [t.key for t in ts] == ["p05_h08_s2"]


@pytest.mark.parametrize(
    ("taskset_cfg", "field"),
    [
        ({"split": "bogus"}, "split"),
        ({"max_p": -1}, "max_p"),
        ({"tasks_dir": "/nonexistent/lean-tasks"}, "tasks_dir"),
        ({"task": {"timeout_s": 0}}, "timeout_s"),
        ({"task": {"axioms_mode": "none"}}, "axioms_mode"),
        ({"task": {"memory_mb": 1}}, "memory_mb"),
        ({"task": {"sandbox": "maybe"}}, "sandbox"),
        ({"max_pp": 3}, "max_pp"),
        ({"max_p": 3}, "max_p"),  # no task left: refused when the config is resolved
        ({"task": {"max_attempts": 2, "grade_in": "runtime"}}, "grade_in"),
    ],
)
def test_resolve_env_config_rejects_bad_values(taskset_cfg: dict, field: str) -> None:
    with pytest.raises(ValidationError) as info:
        vf.resolve_env_config({"taskset": {"id": TASKSET_ID, **taskset_cfg}})
    assert field in str(info.value)


def test_tasks_dir_without_index_names_the_field(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"tasks_dir[\s\S]*no tasks.jsonl"):
        vf.resolve_env_config({"taskset": {"id": TASKSET_ID, "tasks_dir": str(tmp_path)}})


def test_tasks_dir_with_tampered_weights_is_rejected(tasks_dir: Path) -> None:
    path = tasks_dir / "p05_h08_s0" / "Weights.lean"
    path.write_text(
        path.read_text(encoding="utf-8").replace("Int.ofNat", "Int.ofNat 1 +", 1), encoding="utf-8"
    )
    with pytest.raises(ValidationError, match=r"tasks_dir[\s\S]*weights_sha256"):
        vf.resolve_env_config({"taskset": {"id": TASKSET_ID, "tasks_dir": str(tasks_dir)}})


# --- offline scoring -------------------------------------------------------------------------------


def score(task: LeanTask, reply: str) -> vf.Trace:
    trace = make_trace(task, reply)
    asyncio.run(task.score(trace))
    return trace


def assert_zero_with_reason(trace: vf.Trace) -> dict:
    assert trace.rewards["kernel_accepts"].score == 0.0
    assert trace.reward == 0.0
    info = trace.info[INFO_KEY]
    if info["judged"]:
        assert STAGE_KEYS <= set(trace.metrics)
    else:  # no verdict: only the stages passed before the fault have a value (1.0), never a 0.0
        assert {"lean_stages/judged", "lean_stages/grader_seconds"} <= set(trace.metrics)
        assert all(v == 1.0 for k, v in trace.metrics.items() if k.endswith("_passed")), trace.metrics
    assert all(isinstance(v, float) for v in trace.metrics.values())
    assert info["reason"] and info["accepted"] is False and info["reward"] == 0.0
    assert not trace.errors
    # What the grader adds serialises as traces.jsonl needs it (UTF-8 JSON; the hand-built reply
    # itself may hold lone surrogates, which is the framework's business, not the grader's).
    json.dumps({"info": trace.info, "metrics": trace.metrics}, ensure_ascii=False).encode("utf-8")
    trace.model_dump_json(exclude={"nodes"})
    return info


@pytest.fixture
def task(tasks_dir: Path, no_toolchain: Path) -> LeanTask:
    ts = taskset(tasks_dir, split="train", max_p=5, task={"toolchain_dir": no_toolchain, "timeout_s": 30})
    return next(iter(ts))


def test_score_no_code_block(task: LeanTask) -> None:
    info = assert_zero_with_reason(score(task, "The network adds, trust me."))
    assert info["failed_stage"] == "extract"
    assert info["guard_passed"] is False


def test_score_guard_failure(task: LeanTask) -> None:
    reply = "```lean\n" + reference_submission(task.data.p).replace("decide +kernel", "sorry") + "```"
    trace = score(task, reply)
    info = assert_zero_with_reason(trace)
    assert info["failed_stage"] == "guard"
    assert "sorry" in info["reason"]
    assert trace.metrics["lean_stages/guard_passed"] == 0.0


def test_no_toolchain_errors_the_rollout_by_default(task: LeanTask) -> None:
    """Could not judge is not a rejection: with on_grader_error=raise (the default) the rollout is
    errored (verifiers records ok=False with the reason) instead of scored 0.0."""
    trace = make_trace(task, "```lean\n" + reference_submission(task.data.p) + "```")
    with pytest.raises(vf.TaskError, match="could not judge: Lean toolchain not found"):
        asyncio.run(task.score(trace))
    assert trace.metrics["lean_stages/judged"] == 0.0  # recorded all the same
    assert trace.metrics["lean_stages/guard_passed"] == 1.0
    info = trace.info[INFO_KEY]
    assert info["judged"] is False and info["failed_stage"] == "toolchain"


def test_no_toolchain_scores_zero_when_asked(task: LeanTask) -> None:
    task.config = task.config.model_copy(update={"on_grader_error": "zero"})
    trace = score(task, "```lean\n" + reference_submission(task.data.p) + "```")
    info = assert_zero_with_reason(trace)
    assert info["judged"] is False and trace.metrics["lean_stages/judged"] == 0.0
    assert info["failed_stage"] == "toolchain" and "Lean toolchain not found" in info["reason"]
    # Issue 41: the build and later stages were never reached, so they have no value (a 0.0 read
    # as a 0 % pass rate on dashboards); the guard, which passed, has its 1.0.
    assert trace.metrics["lean_stages/guard_passed"] == 1.0
    for stage in ("build", "leanchecker", "statement", "axioms"):
        assert f"lean_stages/{stage}_passed" not in trace.metrics
    assert "lean_stages/first_attempt_accepted" not in trace.metrics
    assert trace.metrics["lean_stages/attempts"] == 1.0


def test_a_verdict_is_recorded_as_judged(task: LeanTask) -> None:
    trace = score(task, "no code block at all")
    assert trace.metrics["lean_stages/judged"] == 1.0 and trace.info[INFO_KEY]["judged"] is True


def test_score_huge_reply(task: LeanTask) -> None:
    filler = "-- " + "x" * 77 + "\n"
    body = reference_submission(task.data.p) + filler * 60_000  # about 4.8 MB
    reply = "Here it is.\n```lean\n" + body + "```\n" + "y" * 1_000_000
    started = time.monotonic()
    trace = score(task, reply)
    assert time.monotonic() - started < 60
    assert_zero_with_reason(trace)
    assert len(json.dumps(trace.info[INFO_KEY])) < 1_000_000  # the grade does not copy the reply


@pytest.mark.parametrize(
    "reply",
    [
        "```lean\nimport LeanCheckedNetwork.Weights\x00\n\ntheorem x : True := trivial\n```",
        "```lean\n\ud800\udfff import LeanCheckedNetwork.Weights \udcff\n```",
        "\x00" * 10_000,
        "```lean\n" + "\x00\ufffe\uffff" * 1000 + "\n```",
    ],
)
def test_score_binary_junk(task: LeanTask, reply: str) -> None:
    assert_zero_with_reason(score(task, reply))


def test_score_empty_reply(task: LeanTask) -> None:
    assert_zero_with_reason(score(task, ""))


def test_reward_reads_cached_grade(task: LeanTask, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = LeanTask.grade_trace

    async def counting(self, trace, runtime=None):
        calls.append(1)
        return await original(self, trace, runtime)

    monkeypatch.setattr(LeanTask, "grade_trace", counting)
    score(task, "no code")
    assert len(calls) == 1


def test_reward_grades_when_cache_missing(task: LeanTask) -> None:
    trace = make_trace(task, "```lean\n" + reference_submission(task.data.p) + "```")
    with pytest.raises(GraderUnavailable, match="Lean toolchain not found"):
        asyncio.run(task.kernel_accepts(trace))
    task.config = task.config.model_copy(update={"on_grader_error": "zero"})
    trace = make_trace(task, "```lean\n" + reference_submission(task.data.p) + "```")
    assert asyncio.run(task.kernel_accepts(trace)) == 0.0
    assert "Lean toolchain not found" in trace.info[INFO_KEY]["reason"]


def test_grader_crash_is_could_not_judge(task: LeanTask, monkeypatch: pytest.MonkeyPatch) -> None:
    import lean_mod_add_proof.taskset as module

    async def boom(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(module, "grade_reply", boom)
    task.config = task.config.model_copy(update={"on_grader_error": "zero"})
    info = assert_zero_with_reason(score(task, "```lean\nx\n```"))
    assert "disk on fire" in info["reason"] and info["judged"] is False


def test_weights_changed_after_loading_is_could_not_judge(task: LeanTask, tasks_dir: Path) -> None:
    path = tasks_dir / task.data.id / "Weights.lean"
    path.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    trace = make_trace(task, "```lean\n" + reference_submission(task.data.p) + "```")
    with pytest.raises(vf.TaskError, match="weights_sha256"):
        asyncio.run(task.score(trace))
    assert trace.info[INFO_KEY]["judged"] is False


def test_validate_without_toolchain_raises_with_the_reason(task: LeanTask) -> None:
    with pytest.raises(GraderUnavailable, match="Lean toolchain not found"):
        asyncio.run(task.validate())


def test_env_builds_with_null_harness_and_subprocess_runtime(tasks_dir: Path) -> None:
    cfg = vf.resolve_env_config({"taskset": {"id": TASKSET_ID, "tasks_dir": str(tasks_dir)}})
    env = vf.load_environment(cfg)
    assert isinstance(env, LeanEnv) and isinstance(env, vf.SingleAgentEnv)
    assert cfg.agent.harness.id == "null" and cfg.agent.runtime.type == "subprocess"
    override = vf.resolve_env_config(
        {"taskset": {"id": TASKSET_ID}, "agent": {"runtime": {"type": "docker"}}}
    )
    assert override.agent.runtime.type == "docker"


def test_accepted_grade_gives_reward_one(task: LeanTask, monkeypatch: pytest.MonkeyPatch) -> None:
    import lean_mod_add_proof.taskset as module
    from lean_mod_add_proof.grading.result import GradeResult

    async def accept(reply, grade_task, config):
        assert grade_task.task_id == task.data.id and config.timeout_s == 30
        assert grade_task.weights_lean.startswith("import LeanCheckedNetwork.Network")
        return GradeResult(
            stage_reached="axioms", reason="accepted", task_id=grade_task.task_id, grader_seconds=1.5
        )

    monkeypatch.setattr(module, "grade_reply", accept)
    trace = score(task, "```lean\n" + reference_submission(task.data.p) + "```")
    assert trace.reward == 1.0 and trace.rewards["kernel_accepts"].score == 1.0
    assert {k: trace.metrics[k] for k in STAGE_KEYS} == {
        **{k: 1.0 for k in STAGE_KEYS},
        "lean_stages/grader_seconds": 1.5,
    }
    assert trace.info[INFO_KEY]["accepted"] is True


def _double_taskset(tasks_dir: Path, tmp_path: Path) -> LeanModAddProofTaskset:
    return taskset(
        tasks_dir,
        split="train",
        max_p=5,
        task={
            "toolchain_dir": DOUBLE_DIR,
            "sandbox": "off",
            "work_root": tmp_path / "work",
            "cache_dir": tmp_path / "cache",
            "timeout_s": 60,
            "memory_mb": 1024,
        },
    )


def test_plumbing_with_the_toolchain_double(
    tasks_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shell test double of the toolchain (tests/toolchain_double: not Lean, proves nothing)
    accepts whatever it is scripted to. With the self-test on, as in production: the double first
    passes the canaries, then the reference grade reaches the trace as reward 1.0 with every
    stage flag set, because this test asks for the double's grades to be scored."""
    monkeypatch.setenv(SCORE_DOUBLE_ENV, "1")
    task = next(iter(_double_taskset(tasks_dir, tmp_path)))
    trace = score(task, "```lean\n" + reference_submission(task.data.p) + "```")
    info = trace.info[INFO_KEY]
    assert trace.reward == 1.0, info["reason"]
    assert all(trace.metrics[k] == 1.0 for k in STAGE_KEYS if not k.endswith("grader_seconds"))
    assert "toolchain double" in (info["toolchain"] or "") and info["toolchain_double"] is True
    assert list((tmp_path / "cache" / "selftest").glob("*.json"))  # the self-test ran and passed


def test_the_doubles_grades_are_not_scored_unless_a_test_asks(
    tasks_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 41: a grade by the toolchain double must never pass for Lean's. Without the test's
    switch the taskset says so before the first rollout and errors the rollout (could not judge),
    the double's own verdict kept in the reason and its flag on the grade."""
    import lean_mod_add_proof.taskset as module

    monkeypatch.delenv(SCORE_DOUBLE_ENV, raising=False)
    monkeypatch.setattr(module, "_announced", set())  # (an earlier test may have said it already)
    ts = _double_taskset(tasks_dir, tmp_path)
    task = next(iter(ts))
    (banner,) = capsys.readouterr().err.strip().splitlines()
    assert banner.startswith(f"lean-mod-add-proof: GRADING IS NOT POSSIBLE here: {DOUBLE_BANNER}"), banner
    trace = make_trace(task, "```lean\n" + reference_submission(task.data.p) + "```")
    with pytest.raises(GraderUnavailable, match=f"could not judge: {DOUBLE_BANNER}"):
        asyncio.run(task.score(trace))
    info = trace.info[INFO_KEY]
    assert info["judged"] is False and info["toolchain_double"] is True and info["accepted"] is False
    assert "the double's own verdict: accepted" in info["reason"]
    assert trace.metrics["lean_stages/judged"] == 0.0


def test_surrogates_and_nul_are_rejected_by_the_extractor(task: LeanTask) -> None:
    info = assert_zero_with_reason(score(task, "```lean\nimport LeanCheckedNetwork.Weights \ud800\n```"))
    assert info["failed_stage"] == "extract"
    info = assert_zero_with_reason(score(task, "```lean\nimport LeanCheckedNetwork.Weights\x00\n```"))
    assert info["failed_stage"] == "extract"


# --- saying why grading failed, before and after the run ------------------------------------------


def test_could_not_judge_is_a_typed_verifiers_error(task: LeanTask) -> None:
    """verifiers records a TaskError subclass as it is: the type vf-eval's dashboard shows is
    GraderUnavailable, and the message is the reason itself (no "task LeanTask scoring:" prefix)."""
    assert issubclass(GraderUnavailable, vf.TaskError)
    trace = make_trace(task, "```lean\n" + reference_submission(task.data.p) + "```")
    with pytest.raises(GraderUnavailable) as info:
        asyncio.run(task.score(trace))
    trace.record_error(info.value)
    (error,) = trace.errors
    assert error.type == "GraderUnavailable" and not trace.ok
    assert error.message.startswith("could not judge: Lean toolchain not found")


def test_package_logs_reach_the_verifiers_cli_handlers(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under vf-eval's rich dashboard the last-resort handler is off: this package's warnings
    must still reach the handlers verifiers installed (its log file), with no "No handlers could
    be found" line on the terminal."""
    import logging

    import lean_mod_add_proof.taskset as module

    seen: list[str] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    library = logging.getLogger("verifiers.v1")
    handler = Capture()
    monkeypatch.setattr(logging, "lastResort", None)
    monkeypatch.setattr(logging.Logger.manager, "emittedNoHandlerWarning", False)
    library.addHandler(handler)
    try:
        module.logger.warning("grading note %d", 7)
    finally:
        library.removeHandler(handler)
    assert seen == ["grading note 7"]
    assert "No handlers could be found" not in capsys.readouterr().err


def test_load_says_before_any_rollout_that_grading_is_not_possible(
    tasks_dir: Path, no_toolchain: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ts = taskset(tasks_dir, split="train", task={"toolchain_dir": no_toolchain})
    assert len(list(ts)) == 3
    err = capsys.readouterr().err
    (line,) = err.strip().splitlines()
    assert line.startswith("lean-mod-add-proof: GRADING IS NOT POSSIBLE here: Lean toolchain not found")
    assert str(no_toolchain) in line and "install-lean" in line
    assert "Every rollout will error (on_grader_error=raise)" in line
    assert "traces[i].errors[j].message" in line
    list(ts)
    assert capsys.readouterr().err == ""  # once per process and reason


def test_no_banner_when_grading_can_work(
    tasks_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """(The double, scored because the test asks: grading works, and the notice still names it.)"""
    import lean_mod_add_proof.taskset as module

    monkeypatch.setenv(SCORE_DOUBLE_ENV, "1")
    monkeypatch.setattr(module, "_announced", set())
    ts = taskset(tasks_dir, split="train", task={"toolchain_dir": DOUBLE_DIR, "sandbox": "off"})
    assert ts.preflight() is None
    list(ts)
    err = capsys.readouterr().err
    assert "GRADING IS NOT POSSIBLE" not in err
    assert f"{DOUBLE_BANNER}: grading with the test double" in err


def test_the_summary_at_exit_names_the_reason_and_where_it_is(
    task: LeanTask, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lean_mod_add_proof.taskset as module

    monkeypatch.setattr(module, "_unjudged", {})
    monkeypatch.setattr(module, "_unjudged_policy", {})
    assert module.unjudged_summary() is None
    for _ in range(2):
        trace = make_trace(task, "```lean\n" + reference_submission(task.data.p) + "```")
        with pytest.raises(GraderUnavailable):
            asyncio.run(task.score(trace))
    line = module.unjudged_summary()
    assert line is not None and line.startswith("2 grade(s) could not judge")
    assert "on_grader_error=raise" in line and "traces.jsonl: traces[i].errors[j].message" in line
    assert "First reason: Lean toolchain not found" in line


def test_the_summary_at_exit_stands_apart_from_the_dashboards_last_notice(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 41: printed right under vf-eval's own closing notice, it read as part of it."""
    import lean_mod_add_proof.taskset as module

    monkeypatch.setattr(module, "_unjudged", {"could not judge: no Lean": 1})
    monkeypatch.setattr(module, "_unjudged_policy", {"could not judge: no Lean": "raise"})
    module._print_unjudged_summary()
    err = capsys.readouterr().err
    assert err.startswith("\nlean-mod-add-proof: 1 grade(s) could not judge"), repr(err)


def _env(tasks_dir: Path, runtime: str, **task: object) -> LeanEnv:
    cfg = vf.resolve_env_config(
        {
            "taskset": {"id": TASKSET_ID, "tasks_dir": str(tasks_dir), "max_p": 5, "task": task},
            "agent": {"runtime": {"type": runtime}},
        }
    )
    env = vf.load_environment(cfg)
    assert isinstance(env, LeanEnv)
    return env


def test_runtime_grading_on_the_subprocess_runtime_needs_no_image_flag(
    tasks_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """grade_in=runtime with the default image on the subprocess runtime: the box is this
    machine, so the tasks carry no image (verifiers would refuse every rollout otherwise) and one
    line says so; on a container runtime the image stays."""
    from verifiers.v1.utils.compile import resolve_runtime_config

    monkeypatch.setenv("PATH", os.environ.get("PATH", ""))  # the env may extend PATH
    env = _env(tasks_dir, "subprocess", grade_in="runtime", sandbox="off")
    tasks = list(env.taskset)
    assert tasks and {t.data.image for t in tasks} == {None}
    for t in tasks:
        resolve_runtime_config(env.config.agent.runtime, t)  # no "has no container" refusal
    assert "grade_in=runtime on the subprocess runtime" in capsys.readouterr().err
    docker = _env(tasks_dir, "docker", grade_in="runtime")
    assert {t.data.image for t in docker.taskset} == {"lean-mod-add-proof:0.1.0"}
    host = _env(tasks_dir, "subprocess")
    assert {t.data.image for t in host.taskset} == {None}


def test_own_tools_go_on_path_for_local_boxes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """vf-eval started by its full path, the virtual environment not activated: the null harness's
    `uv` and the box's `lean-mod-add-proof` are this package's own, found next to it."""
    import lean_mod_add_proof.taskset as module

    uv = module.own_uv()
    assert uv is not None and uv.is_file()
    environ = {"PATH": str(tmp_path)}
    assert module.put_own_tools_on_path(environ, need_cli=True) is None
    dirs = environ["PATH"].split(os.pathsep)
    assert dirs[0] == str(tmp_path) and str(uv.parent) in dirs
    assert (module.own_scripts_dir() / "lean-mod-add-proof").is_file()
    assert str(module.own_scripts_dir()) in dirs
    unchanged = {"PATH": environ["PATH"]}
    assert module.put_own_tools_on_path(unchanged, need_cli=True) is None
    assert unchanged["PATH"] == environ["PATH"]  # already there: nothing added twice
    monkeypatch.setattr(module, "own_uv", lambda: None)
    bare = {"PATH": str(tmp_path)}
    problem = module.put_own_tools_on_path(bare, need_cli=False)
    assert problem is not None and "pip install uv" in problem and "\n" not in problem


def test_the_env_puts_its_own_uv_on_path(tasks_dir: Path, tmp_path: Path, monkeypatch) -> None:
    import lean_mod_add_proof.taskset as module

    monkeypatch.setenv("PATH", str(tmp_path))
    _env(tasks_dir, "subprocess")
    assert str(module.own_uv().parent) in os.environ["PATH"].split(os.pathsep)


def test_a_box_on_this_machine_grades_with_the_configured_cache(tasks_dir: Path, tmp_path: Path) -> None:
    """grade_in=runtime on the subprocess runtime: the box is this machine, so its grader gets
    `--cache-dir` (issue 29: it used the real ~/.cache); a container box keeps its own paths."""
    cfg = {"grade_in": "runtime", "cache_dir": tmp_path / "cache"}
    ts = taskset(None, split="train", max_p=5, task=cfg)
    remote = next(iter(ts)).runtime_argv()
    assert "--cache-dir" not in remote
    ts.local_boxes = True
    local = next(iter(ts)).runtime_argv()
    assert local[local.index("--cache-dir") + 1] == str(tmp_path / "cache")


def test_box_log_lines_keep_only_the_graders_own_lines() -> None:
    """From a runtime box's stderr, only lines in the CLI's log format are passed on (the box is
    the model's: other text is not the grader's), each on one line, the last fifty at most."""
    stderr = (
        "12:00:01 lean-mod-add-proof: self-test started (toolchain x)\n"
        "Traceback (most recent call last):\n"
        "  lean-mod-add-proof: not at the start of a line with a time\n"
        "12:00:41 lean-mod-add-proof: self-test passed in 40.0 s\n"
    )
    assert box_log_lines(stderr) == ["self-test started (toolchain x)", "self-test passed in 40.0 s"]
    many = "".join(f"12:00:00 lean-mod-add-proof: step {i}\n" for i in range(60))
    assert box_log_lines(many) == [f"step {i}" for i in range(10, 60)]
    assert box_log_lines("12:00:00 lean-mod-add-proof: " + "x" * 1000) == ["x" * 299 + "…"]
    assert box_log_lines("") == []


def test_a_runtime_grade_passes_the_boxs_log_lines_to_the_hosts_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The long steps of a grader run in the rollout's box (its self-test, a cache build) reach
    the host's log, where vf-eval shows them (they were lost with the box's stderr)."""

    class Done:
        exit_code = 3
        stdout = ""
        stderr = "12:00:01 lean-mod-add-proof: self-test started (toolchain x)\nnoise\n"

    class Box:
        async def write(self, path: str, data: bytes) -> None:
            pass

        async def run(self, argv: list[str], env: dict[str, str]) -> Done:
            return Done()

    task = next(iter(taskset(None, split="train", max_p=5, task={"grade_in": "runtime"})))
    with caplog.at_level("INFO", logger="lean_mod_add_proof"):
        result = asyncio.run(task.grade_in_runtime("proof", Box()))  # type: ignore[arg-type]
    assert not result.judged
    logged = [r.getMessage() for r in caplog.records if "runtime box of" in r.getMessage()]
    assert logged == [f"runtime box of {task.key}: self-test started (toolchain x)"]
