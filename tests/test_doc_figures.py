"""The figures the README and docs state are the ones the commands print (issue 41: several token
figures were stale, and the test time was not stated). Each figure is read out of the page and
compared with the output of the command the page names."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from lean_mod_add_proof.cli import main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
OPERATIONS = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
DATASET = (ROOT / "docs" / "dataset.md").read_text(encoding="utf-8")
DEVELOPMENT = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")


def _flat(text: str) -> str:
    return " ".join(text.split())


def _number(pattern: str, text: str) -> float:
    """The number the first group of `pattern` matches in `text` (commas dropped)."""
    found = re.search(pattern, _flat(text))
    assert found, pattern
    return float(found.group(1).replace(",", ""))


def _tasks(split: str, capsys: pytest.CaptureFixture[str]) -> list[dict]:
    """`lean-mod-add-proof tasks --json --split SPLIT --tokenizer estimate`, as the docs name it."""
    assert main(["tasks", "--json", "--split", split, "--tokenizer", "estimate"]) == 0
    return json.loads(capsys.readouterr().out)


def _k(tokens: int) -> float:
    """Tokens as the docs write them: thousands, one decimal ("about 20.5k")."""
    return round(tokens / 1000, 1)


def test_task_counts(capsys: pytest.CaptureFixture[str]) -> None:
    every = _tasks("all", capsys)
    hard = _tasks("hard", capsys)
    train = [r for r in every if r["split"] == "train"]
    evals = [r for r in every if r["split"] == "eval"]
    assert _number(r"\*\*Data\*\*: (\d+) integer networks", README) == len(every)
    assert _number(r"`train` (\d+), `eval` \d+ \(seed 2\)", README) == len(train)
    assert _number(r"`train` \d+, `eval` (\d+) \(seed 2\)", README) == len(evals)
    assert _number(r"the \[hard split\]\([^)]*\), (\d+) with p", README) == len(hard)
    row = re.search(r"^\| `split` \| .*$", README, re.MULTILINE)
    assert row is not None
    counts = [int(n) for n in re.findall(r"\((\d+)(?: tasks)?[,)]", row.group(0))]
    by_split = [sum(r["split"] == name for r in hard) for name in ("hard-train", "hard-eval")]
    assert counts == [len(train), len(evals), *by_split], row.group(0)
    hard_ps = sorted({r["p"] for r in hard})
    assert f"p ∈ {{{', '.join(map(str, hard_ps))}}}" in README


def test_prompt_token_figures(capsys: pytest.CaptureFixture[str]) -> None:
    every = _tasks("all", capsys)
    hard = _tasks("hard", capsys)
    tokens = [r["prompt_tokens"] for r in every]
    train = [r["prompt_tokens"] for r in every if r["split"] == "train"]
    assert _number(r"The prompts run from about ([\d.]+)k tokens", OPERATIONS) == _k(min(tokens))
    assert _number(r"to about ([\d.]+)k \(p = 23, H = 32", OPERATIONS) == _k(max(train))
    assert _number(r"the hard split's prompts reach about ([\d.]+)k", OPERATIONS) == _k(
        max(r["prompt_tokens"] for r in hard)
    )
    assert _number(r"the largest train prompt \(about ([\d.]+)k\)", OPERATIONS) == _k(max(train))
    small = max(r["prompt_tokens"] for r in every if r["p"] <= 11)
    assert _number(r"`env.taskset.max_p = 11` the largest prompt is about ([\d.]+)k", OPERATIONS) == _k(small)
    low = _number(r"\*\*Prompt size:\*\* ([\d,]+) to [\d,]+ tokens", DATASET)
    high = _number(r"\*\*Prompt size:\*\* [\d,]+ to ([\d,]+) tokens", DATASET)
    assert (low, high) == (min(r["prompt_tokens"] for r in hard), max(r["prompt_tokens"] for r in hard))


def test_the_sequence_length_holds_the_largest_train_prompt(capsys: pytest.CaptureFixture[str]) -> None:
    """README and operations.md say 25600; the orchestrator config sets it; it must hold the
    largest train prompt plus the completion budget the config sets."""
    config = tomllib.loads((ROOT / "configs" / "prime-rl" / "orchestrator.toml").read_text(encoding="utf-8"))
    seq_len = config["seq_len"]
    completion = re.search(
        r"^max_completion_tokens = (\d+)",
        (ROOT / "configs" / "prime-rl" / "orchestrator.toml").read_text(),
        re.MULTILINE,
    )
    assert completion is not None
    train = max(r["prompt_tokens"] for r in _tasks("train", capsys))
    assert train + int(completion.group(1)) <= seq_len
    assert _number(r"RL needs `seq_len` ≥ (\d+)", README) == seq_len
    assert _number(r"The orchestrator config sets `seq_len = (\d+)`", OPERATIONS) == seq_len


def test_the_readme_and_development_state_the_same_test_times() -> None:
    said = re.search(
        r"`make test` takes about (\d+) minutes on a quiet 2-core machine and about (\d+)", _flat(README)
    )
    table = re.search(
        r"\| `make test` \| [^|]+\| about (\d+) min quiet, about (\d+) min beside other work \|", DEVELOPMENT
    )
    assert said and table
    assert said.groups() == table.groups()


def test_the_collected_test_counts() -> None:
    """`pytest --collect-only -q` (and with `-m quick`): within 5 % of what development.md says."""

    def collected(*args: str) -> int:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=ROOT,
        )
        found = re.search(r"(\d+)(?:/\d+)? tests? collected", done.stdout)
        assert found, done.stdout[-2000:]
        return int(found.group(1))

    whole = _number(r"About ([\d,]+) tests are collected now", DEVELOPMENT)
    assert abs(collected() - whole) <= 0.05 * whole
    quick = _number(r"\| `make test-quick` \|[^|]+\| [^|]*?for about ([\d,]+) tests", DEVELOPMENT)
    assert abs(collected("-m", "quick") - quick) <= 0.05 * quick
