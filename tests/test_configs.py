"""The shipped configs: every TOML under configs/ parses and names this taskset and the right
split; `vf-eval @ configs/eval.toml --dry-run` resolves; each prime-rl source's `env` block is a
valid verifiers EnvConfig for this taskset (prime-rl itself is not installed here: its own keys
are checked against the schema snapshots below, taken from the files cited in the TOMLs); the
orchestrator's seq_len holds the largest prompt plus the completion budget."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import verifiers.v1 as vf

from lean_mod_add_proof.constants import TASKSET_ID
from lean_mod_add_proof.demo import child_env

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "configs"
EVAL_TOML = CONFIGS / "eval.toml"
ORCHESTRATOR_TOML = CONFIGS / "prime-rl" / "orchestrator.toml"
ORCHESTRATOR_HARD_TOML = CONFIGS / "prime-rl" / "orchestrator-hard.toml"
EVAL_HARD_TOML = CONFIGS / "eval-hard.toml"
PRIME_RL_EVAL_TOML = CONFIGS / "prime-rl" / "eval.toml"
#: Fields of prime-rl's TrainSourceConfig / EvalSourceConfig (and their EnvConfig base) as read in
#: packages/prime-rl-configs/src/prime_rl/configs/orchestrator.py; a key outside them is a typo.
PRIME_RL_SOURCE_KEYS = {
    "env",
    "serve",
    "name",
    "select",
    "sampling",
    "ratio",
    "group_size",
    "algo",
    "curriculum",
    "sampler",
    "min_abs_advantage",
}
#: Fields of prime-rl's EvalConfig (`uv run eval`: configs/eval.py, with its EvalSourcesConfig /
#: ServedEvalConfig bases) and of the blocks eval.toml sets, from the same sources.
PRIME_RL_EVAL_KEYS = {
    "model",
    "client",
    "select",
    "concurrency",
    "group_size",
    "run",
    "output_dir",
    "clean",
    "dry_run",
    "dashboard",
    "resume",
    "log",
    "monitors",
    "source",
    "env",
    "sampling",
    "tasks_per_minute",
    "heartbeat",
}
PRIME_RL_CLIENT_KEYS = {
    "base_url",
    "api_key_var",
    "headers",
    "headers_from_env",
    "skip_model_check",
    "wait_for_ready_timeout",
    "admin_base_url",
    "dynamo",
    "timeout",
}
PRIME_RL_CONCURRENCY_KEYS = {"initial_inflight", "min_inflight", "max_inflight"}
PRIME_RL_EVAL_SAMPLING_KEYS = {
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "max_completion_tokens",
    "reasoning_effort",
    "extra_body",
}
#: Chat-template tokens per prompt on top of the system and user texts (role markers and the
#: generation prompt: well under this for the common templates).
TEMPLATE_TOKENS = 64


def load(path: Path) -> dict[str, Any]:
    with path.open("rb") as f:
        return tomllib.load(f)


def tasksets(node: Any) -> list[dict[str, Any]]:
    """Every `taskset` table anywhere in a parsed TOML."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "taskset" and isinstance(value, dict):
                found.append(value)
            found += tasksets(value)
    elif isinstance(node, list):
        for item in node:
            found += tasksets(item)
    return found


def test_every_config_parses_and_names_this_taskset() -> None:
    paths = sorted(CONFIGS.rglob("*.toml"))
    assert EVAL_TOML in paths and ORCHESTRATOR_TOML in paths and PRIME_RL_EVAL_TOML in paths
    for path in paths:
        found = tasksets(load(path))
        assert found, f"{path} names no taskset"
        for taskset in found:
            assert taskset["id"] == TASKSET_ID, path
            assert taskset.get("split") in ("train", "eval", "hard-train", "hard-eval"), (
                f"{path}: say which split"
            )


def test_eval_config_is_a_small_eval_split_smoke_run() -> None:
    data = load(EVAL_TOML)
    assert data["env"]["taskset"]["split"] == "eval"
    assert data["select"]["limit"] <= 5 and data["num_rollouts"] == 1
    assert data["push"] is False
    assert (data["env"]["agent"]["harness"]["id"], data["env"]["agent"]["runtime"]["type"]) == (
        "null",
        "subprocess",
    )


def test_prime_rl_sources_train_on_train_and_evaluate_on_eval() -> None:
    data = load(ORCHESTRATOR_TOML)
    train, evals = data["train"]["source"], data["eval"]["source"]
    assert train and evals
    assert {s["env"]["taskset"]["split"] for s in train} == {"train"}
    assert {s["env"]["taskset"]["split"] for s in evals} == {"eval"}
    names = [s["name"] for s in train + evals]
    assert len(names) == len(set(names))
    for source in train + evals:
        assert set(source) <= PRIME_RL_SOURCE_KEYS, set(source) - PRIME_RL_SOURCE_KEYS
    assert data["batch_size"] % data["group_size"] == 0  # prime-rl's own validator


@pytest.mark.parametrize("group", ["train", "eval"])
def test_prime_rl_env_blocks_are_valid_verifiers_env_configs(group: str) -> None:
    for source in load(ORCHESTRATOR_TOML)[group]["source"]:
        env = vf.resolve_env_config(source["env"])
        assert env.taskset.id == TASKSET_ID and env.taskset.split == group
        assert env.taskset.task.on_grader_error == "raise"
        assert env.agent.harness.id == "null" and env.agent.runtime.type == "subprocess"


def test_a_misspelt_env_key_would_be_caught() -> None:
    source = load(ORCHESTRATOR_TOML)["train"]["source"][0]
    bad = json.loads(json.dumps(source["env"]))
    bad["taskset"]["splitt"] = "train"
    with pytest.raises(ValueError, match="splitt"):
        vf.resolve_env_config(bad)


def vf_eval() -> str:
    path = Path(sys.executable).parent / "vf-eval"
    return str(path) if path.is_file() else (shutil.which("vf-eval") or "vf-eval")


def test_vf_eval_dry_run_resolves_the_eval_config(tmp_path: Path) -> None:
    # `@ file` goes before bare boolean flags: pydantic-config reads `--dry-run @ file` as a
    # config file nested under `dry_run` ("Extra inputs are not permitted").
    out_dir = tmp_path / "runs"
    argv = [vf_eval(), TASKSET_ID, "@", str(EVAL_TOML), "--dry-run", "-o", str(out_dir)]
    done = subprocess.run(argv, env=child_env(), capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    files = list(out_dir.glob("**/configs/resolved/eval.json"))
    assert len(files) == 1, done.stderr[-2000:]
    resolved = json.loads(files[0].read_text())
    taskset = resolved["env"]["taskset"]
    assert (taskset["id"], taskset["split"], taskset["max_p"]) == (TASKSET_ID, "eval", 7)
    assert resolved["select"]["limit"] == 3 and resolved["push"] is False
    assert resolved["model"] == "baseline-reference"
    assert resolved["client"]["base_url"] == "http://127.0.0.1:8765/v1"
    assert resolved["env"]["agent"]["harness"]["id"] == "null"
    assert resolved["env"]["agent"]["runtime"]["type"] == "subprocess"


# --- prime-rl's `uv run eval` route --------------------------------------------------------------


def test_prime_rl_eval_config_is_the_same_smoke_eval() -> None:
    """configs/prime-rl/eval.toml runs what configs/eval.toml runs, in prime-rl's EvalConfig
    shape: every key is a field of it, and each source's env block is this taskset's EnvConfig."""
    from lean_mod_add_proof.cli.baseline import policy_for

    data, vf_eval_data = load(PRIME_RL_EVAL_TOML), load(EVAL_TOML)
    assert set(data) <= PRIME_RL_EVAL_KEYS, set(data) - PRIME_RL_EVAL_KEYS
    assert set(data["client"]) <= PRIME_RL_CLIENT_KEYS
    assert set(data["concurrency"]) <= PRIME_RL_CONCURRENCY_KEYS
    assert data["concurrency"]["min_inflight"] <= data["concurrency"]["max_inflight"] <= 8
    assert set(data["sampling"]) <= PRIME_RL_EVAL_SAMPLING_KEYS
    select = vf.SelectCLIConfig.model_validate(data["select"])
    assert select.limit == vf_eval_data["select"]["limit"]
    assert data["model"] == vf_eval_data["model"] and policy_for(data["model"], "") == "reference"
    assert data["client"]["base_url"] == vf_eval_data["client"]["base_url"]
    (source,) = data["source"]
    assert set(source) <= PRIME_RL_SOURCE_KEYS
    env = vf.resolve_env_config(source["env"])
    expected = vf.resolve_env_config(vf_eval_data["env"])
    assert env.model_dump(mode="json") == expected.model_dump(mode="json")
    assert env.taskset.split == "eval" and env.taskset.task.on_grader_error == "raise"


# --- sequence length ----------------------------------------------------------------------------


def largest_prompt_tokens(split: str, max_p: int | None) -> int:
    from lean_mod_add_proof.cli.settings import select
    from lean_mod_add_proof.cli.tasks import estimate_tokens, prompt_text
    from lean_mod_add_proof.dataset.tasks import DEFAULT_TASKS_DIR, load_tasks

    records = select(load_tasks(DEFAULT_TASKS_DIR), split, max_p)
    assert records
    return max(estimate_tokens(prompt_text(r, DEFAULT_TASKS_DIR)) for r in records)


@pytest.mark.parametrize("path", [ORCHESTRATOR_TOML, ORCHESTRATOR_HARD_TOML], ids=lambda p: p.name)
def test_seq_len_holds_the_largest_prompt_and_the_completion(path: Path) -> None:
    """prime-rl truncates a sample (prompt + completion) longer than the orchestrator's seq_len
    (default 2048): it must hold the largest prompt of every source, by the upper estimate, plus
    the chat template and the source's completion budget."""
    data = load(path)
    seq_len = data["seq_len"]
    needs = []
    for group in ("train", "eval"):
        budget = data[group]["sampling"]["max_completion_tokens"]
        for source in data[group]["source"]:
            env = vf.resolve_env_config(source["env"])
            assert env.taskset.task.max_attempts == 1  # one completion per sample
            need = largest_prompt_tokens(env.taskset.split, env.taskset.max_p) + TEMPLATE_TOKENS + budget
            assert need <= seq_len, (group, source["name"], need, seq_len)
            needs.append(need)
    assert seq_len - max(needs) < 8192  # not wildly oversized


def test_every_config_that_selects_a_hard_task_fits_it() -> None:
    """Every shipped config whose sources can select a hard task gives it the hard completion
    budget, and either a seq_len holding the largest hard prompt plus that budget or, without a
    seq_len (an eval against a served model), a stated context that does."""
    from lean_mod_add_proof.dataset.tasks import HARD_COMPLETION_TOKENS, is_hard

    hard_need = largest_prompt_tokens("hard", None) + TEMPLATE_TOKENS + HARD_COMPLETION_TOKENS
    assert largest_prompt_tokens("hard", None) <= 40_000  # issue 40: every prompt within 40k tokens
    found = []
    for path in sorted(CONFIGS.rglob("*.toml")):
        text, data = path.read_text(encoding="utf-8"), load(path)
        for taskset in tasksets(data):
            if not is_hard(taskset["split"]):
                continue
            found.append(path.name)
            if "seq_len" in data:
                assert data["seq_len"] >= hard_need, (path, data["seq_len"], hard_need)
                budgets = {data[g]["sampling"]["max_completion_tokens"] for g in ("train", "eval")}
            else:
                flat = " ".join(line.lstrip("#").strip() for line in text.splitlines())
                stated = re.search(r"a context of at least (\d+) tokens", flat)
                assert stated and int(stated.group(1)) >= hard_need, (path, hard_need)
                sampling = data["sampling"]
                budgets = {sampling.get("max_tokens", sampling.get("max_completion_tokens"))}
            assert budgets == {HARD_COMPLETION_TOKENS}, path
    assert {"eval-hard.toml", "orchestrator-hard.toml"} <= set(found)


def test_the_hard_completion_budget_holds_the_packed_draft() -> None:
    from lean_mod_add_proof.cli.tasks import estimate_tokens
    from lean_mod_add_proof.dataset.tasks import HARD_COMPLETION_TOKENS
    from lean_mod_add_proof.hard_route import DRAFT_PATH

    assert estimate_tokens(DRAFT_PATH.read_text(encoding="utf-8")) < HARD_COMPLETION_TOKENS


def test_the_hard_orchestrator_trains_on_hard_train_and_evaluates_on_hard_eval() -> None:
    data = load(ORCHESTRATOR_HARD_TOML)
    assert {s["env"]["taskset"]["split"] for s in data["train"]["source"]} == {"hard-train"}
    assert {s["env"]["taskset"]["split"] for s in data["eval"]["source"]} == {"hard-eval"}
    for source in data["train"]["source"] + data["eval"]["source"]:
        assert set(source) <= PRIME_RL_SOURCE_KEYS
        env = vf.resolve_env_config(source["env"])
        assert env.taskset.task.on_grader_error == "raise"
        assert "timeout_s" not in source["env"]["taskset"].get("task", {})  # the shipped limits apply
    assert data["batch_size"] % data["group_size"] == 0
