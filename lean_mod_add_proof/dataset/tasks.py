"""Reading a generated task set (`tasks.jsonl` plus one `<id>/Weights.lean` per task)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from lean_mod_add_proof.constants import theorem_name

#: The committed task set, shipped inside the package.
DEFAULT_TASKS_DIR = Path(__file__).resolve().parent.parent / "tasks"
#: The network definition every task imports, shipped inside the package.
NETWORK_LEAN_PATH = Path(__file__).resolve().parent.parent / "Network.lean"

Split = Literal["train", "eval", "hard-train", "hard-eval"]
#: What each `--split` name selects: the grid's two parts and `all` (both; the seed's grid), the
#: hard split's two parts and `hard` (both). A hard task is asked for by name, never by `all`.
SPLIT_MEMBERS: dict[str, tuple[Split, ...]] = {
    "train": ("train",),
    "eval": ("eval",),
    "all": ("train", "eval"),
    "hard-train": ("hard-train",),
    "hard-eval": ("hard-eval",),
    "hard": ("hard-train", "hard-eval"),
}
#: Every part: what a selection by task id filters with (not a `--split` choice).
ANY_SPLIT = "any"
#: What `split = all` selects: the seed's grid (train + eval).
ALL_SPLITS: tuple[Split, ...] = SPLIT_MEMBERS["all"]
#: What `split = hard` selects: every task beyond the grid.
HARD_SPLITS: tuple[Split, ...] = SPLIT_MEMBERS["hard"]
#: What a `--split` flag accepts.
SPLIT_CHOICES: tuple[str, ...] = tuple(SPLIT_MEMBERS)
#: Primes above this are the hard split (the grid's largest prime; trainer.GRID_P).
GRID_MAX_P = 23
#: The grid's held-out seed (`eval`), and the hard split's (`hard-eval`).
EVAL_SEED = 2
HARD_EVAL_SEED = 3
#: Completion tokens a hard task's reply is given in the shipped hard configs: the packed route's
#: Lean draft (hard_route/PackedDraft.lean) is about 20k tokens by the project's upper estimate,
#: and a reply needs room for reasoning as well (docs/dataset.md, Configs).
HARD_COMPLETION_TOKENS = 32768


class TaskSetError(ValueError):
    """A task set that cannot be used: missing files, a bad row, or a hash that does not match."""


@dataclass(frozen=True)
class TaskRecord:
    """One row of tasks.jsonl: a frozen network for addition modulo `p`."""

    id: str
    p: int
    hidden: int
    seed: int
    split: Split
    train_fraction: float
    theorem: str
    weights_sha256: str
    min_margin: int
    n_pairs: int
    n_train_pairs: int
    max_abs_weight: int
    kernel_mul_adds: int  # Int multiply-adds of the brute-force evaluation (network.kernel_mul_adds)
    timeout_s: float | None = None
    """The task's own time limit, shipped with it (hard tasks: cost.hard_estimate); None: the
    grader's fixed `timeout_s`. A `--env.taskset.task.timeouts` file overrides it."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def split_for(p: int, seed: int) -> Split:
    """p above the grid's primes is the hard split; in the grid and in the hard split alike one
    seed is held out for evaluation (EVAL_SEED, HARD_EVAL_SEED) and the others are for training."""
    if p > GRID_MAX_P:
        return "hard-eval" if seed == HARD_EVAL_SEED else "hard-train"
    return "eval" if seed == EVAL_SEED else "train"


def in_split(record_split: str, split: str) -> bool:
    """Whether a task of `record_split` is selected by `split` (SPLIT_MEMBERS; ANY_SPLIT: every
    task)."""
    return split == ANY_SPLIT or record_split in SPLIT_MEMBERS.get(split, ())


def is_hard(record_split: str) -> bool:
    """A task of the hard split (either part)."""
    return record_split in HARD_SPLITS


def task_id(p: int, hidden: int, seed: int) -> str:
    return f"p{p:02d}_h{hidden:02d}_s{seed}"


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def weights_path(tasks_dir: Path, task_id_: str) -> Path:
    return tasks_dir / task_id_ / "Weights.lean"


def _record_from_row(row: dict[str, Any], where: str) -> TaskRecord:
    fields = TaskRecord.__dataclass_fields__
    missing = [name for name, f in fields.items() if name not in row and f.default is dataclasses.MISSING]
    if missing:
        raise TaskSetError(f"{where}: missing field(s) {', '.join(missing)}")
    record = TaskRecord(**{name: row[name] for name in fields if name in row})
    if record.theorem != theorem_name(record.p):
        raise TaskSetError(f"{where}: theorem {record.theorem!r} is not {theorem_name(record.p)!r}")
    if record.split != split_for(record.p, record.seed):
        raise TaskSetError(
            f"{where}: split {record.split!r} does not match p {record.p} and seed {record.seed}"
        )
    return record


def load_tasks(tasks_dir: Path = DEFAULT_TASKS_DIR, *, verify_hashes: bool = True) -> list[TaskRecord]:
    """Read `tasks_dir/tasks.jsonl`; with `verify_hashes`, check each Weights.lean against its row."""
    index = tasks_dir / "tasks.jsonl"
    if not index.is_file():
        raise TaskSetError(f"{tasks_dir}: no tasks.jsonl (is this a generated task set?)")
    records: list[TaskRecord] = []
    for lineno, line in enumerate(index.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{index}:{lineno}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TaskSetError(f"{where}: not JSON ({exc.msg})") from None
        record = _record_from_row(row, where)
        if verify_hashes:
            path = weights_path(tasks_dir, record.id)
            if not path.is_file():
                raise TaskSetError(f"{where}: {path} is missing")
            if sha256_text(path.read_text(encoding="utf-8")) != record.weights_sha256:
                raise TaskSetError(f"{where}: {path} does not match weights_sha256")
        records.append(record)
    ids = [r.id for r in records]
    if len(set(ids)) != len(ids):
        raise TaskSetError(f"{index}: duplicate task ids")
    return records


def find_task(task_id_: str, tasks_dir: Path = DEFAULT_TASKS_DIR) -> TaskRecord:
    for record in load_tasks(tasks_dir):
        if record.id == task_id_:
            return record
    raise TaskSetError(f"unknown task id {task_id_!r} in {tasks_dir}")
