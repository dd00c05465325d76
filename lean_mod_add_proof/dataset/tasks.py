"""Reading a generated task set (`tasks.jsonl` plus one `<id>/Weights.lean` per task)."""

from __future__ import annotations

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

Split = Literal["train", "eval", "hard"]
#: What `split = all` selects: the seed's grid (train + eval); the hard split is asked for by name.
ALL_SPLITS: tuple[Split, ...] = ("train", "eval")
#: What a `--split` flag accepts.
SPLIT_CHOICES: tuple[str, ...] = ("train", "eval", "hard", "all")
#: Primes above this are the hard split (the grid's largest prime; trainer.GRID_P).
GRID_MAX_P = 23


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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def split_for(p: int, seed: int) -> Split:
    """p above the grid's primes is the hard split; in the grid, seeds 0 and 1 are training tasks
    and seed 2 is held out for evaluation."""
    if p > GRID_MAX_P:
        return "hard"
    return "eval" if seed == 2 else "train"


def in_split(record_split: str, split: str) -> bool:
    """Whether a task of `record_split` is selected by `split` (`all` is train + eval only)."""
    return record_split in ALL_SPLITS if split == "all" else record_split == split


def task_id(p: int, hidden: int, seed: int) -> str:
    return f"p{p:02d}_h{hidden:02d}_s{seed}"


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def weights_path(tasks_dir: Path, task_id_: str) -> Path:
    return tasks_dir / task_id_ / "Weights.lean"


def _record_from_row(row: dict[str, Any], where: str) -> TaskRecord:
    fields = TaskRecord.__dataclass_fields__
    missing = [name for name in fields if name not in row]
    if missing:
        raise TaskSetError(f"{where}: missing field(s) {', '.join(missing)}")
    record = TaskRecord(**{name: row[name] for name in fields})
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
