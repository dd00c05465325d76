"""Turn trained networks (.npz files from the trainer) into a task set.

`python -m lean_mod_add_proof.gen_dataset OUT_DIR RUN.npz ...` writes `OUT_DIR/tasks.jsonl` and
`OUT_DIR/<id>/Weights.lean`. Every network is re-checked with the exact integer evaluator first;
one that is wrong on any pair or has a tie is skipped with the reason printed, because a task
whose Spec is false could never be proved. A missing or malformed .npz is an error (exit 2): it
means the inputs are not what the trainer wrote, and guessing would silently change the set.
The output is byte-for-byte a function of the inputs (sorted rows, stable JSON).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sys
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lean_mod_add_proof.constants import theorem_name
from lean_mod_add_proof.dataset.cost import NoLimitFits, hard_estimate, limit_between
from lean_mod_add_proof.dataset.network import WEIGHT_BOUND, kernel_mul_adds, verify
from lean_mod_add_proof.dataset.packed_route import check_network
from lean_mod_add_proof.dataset.tasks import (
    TaskRecord,
    is_hard,
    sha256_text,
    split_for,
    task_id,
    weights_path,
)
from lean_mod_add_proof.dataset.weights_lean import render_weights_lean

REQUIRED_KEYS: tuple[str, ...] = ("E1", "E2", "W2", "p", "H", "seed", "train_fraction", "train_mask")
#: Names of task folders (`task_id`); only these are removed or compared as generated files.
TASK_DIR_RE = re.compile(r"\Ap\d+_h\d+_s\d+\Z")


class NpzError(ValueError):
    """A trained-network file that is missing or not in the trainer's format."""


@dataclass(frozen=True)
class TrainedNetwork:
    """One frozen network as read from a trainer .npz."""

    source: Path
    p: int
    hidden: int
    seed: int
    train_fraction: float
    train_mask: np.ndarray
    e1: np.ndarray
    e2: np.ndarray
    w2: np.ndarray

    @property
    def id(self) -> str:
        return task_id(self.p, self.hidden, self.seed)


def _scalar_int(data: np.lib.npyio.NpzFile, key: str) -> int:
    arr = data[key]
    if arr.shape != () or not np.issubdtype(arr.dtype, np.integer):
        raise NpzError(f"`{key}` must be an integer scalar, got dtype {arr.dtype} shape {arr.shape}")
    return int(arr)


def load_network(path: Path) -> TrainedNetwork:
    """Read and validate one trainer .npz; NpzError names the file and the problem."""
    if not path.is_file():
        raise NpzError(f"{path}: no such file")
    if not zipfile.is_zipfile(path):
        raise NpzError(f"{path}: not an .npz file (not a zip archive)")
    try:
        with np.load(path, allow_pickle=False) as data:
            missing = [k for k in REQUIRED_KEYS if k not in data.files]
            if missing:
                raise NpzError(f"missing array(s) {', '.join(missing)}")
            p, hidden, seed = (_scalar_int(data, k) for k in ("p", "H", "seed"))
            frac_arr = data["train_fraction"]
            if frac_arr.shape != () or not np.issubdtype(frac_arr.dtype, np.floating):
                raise NpzError("`train_fraction` must be a float scalar")
            fraction = float(frac_arr)
            mats = {k: data[k] for k in ("E1", "E2", "W2")}
            mask = data["train_mask"]
    except NpzError as exc:
        raise NpzError(f"{path}: {exc}") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise NpzError(f"{path}: not a readable .npz ({type(exc).__name__}: {exc})") from None
    try:
        if p < 2 or hidden < 1 or seed < 0:
            raise NpzError(f"bad p={p}, H={hidden} or seed={seed}")
        for name, m in mats.items():
            if m.shape != (p, hidden):
                raise NpzError(f"`{name}` has shape {m.shape}, expected ({p}, {hidden})")
            if not np.issubdtype(m.dtype, np.integer):
                raise NpzError(f"`{name}` must hold integers, got dtype {m.dtype}")
            if int(np.abs(m.astype(np.int64)).max()) > WEIGHT_BOUND:
                raise NpzError(f"`{name}` has an entry outside [-{WEIGHT_BOUND}, {WEIGHT_BOUND}]")
        if mask.shape != (p, p) or mask.dtype != np.bool_:
            raise NpzError(f"`train_mask` must be a boolean {p}x{p} array, got {mask.dtype} {mask.shape}")
        if not 0.0 < fraction <= 1.0:
            raise NpzError(f"train_fraction {fraction} is not in (0, 1]")
        expected = math.floor(fraction * p * p + 1e-9)
        if int(mask.sum()) != expected:
            raise NpzError(
                f"train_mask has {int(mask.sum())} pairs, train_fraction {fraction} implies {expected}"
            )
    except NpzError as exc:
        raise NpzError(f"{path}: {exc}") from None
    return TrainedNetwork(
        source=path,
        p=p,
        hidden=hidden,
        seed=seed,
        train_fraction=fraction,
        train_mask=mask,
        e1=mats["E1"].astype(np.int64),
        e2=mats["E2"].astype(np.int64),
        w2=mats["W2"].astype(np.int64),
    )


def build_task(net: TrainedNetwork) -> tuple[TaskRecord, str] | str:
    """The task row and Weights.lean text, or the reason the network is skipped."""
    verdict = verify(net.e1, net.e2, net.w2)
    if verdict.n_wrong:
        return f"wrong on {verdict.n_wrong} of {net.p * net.p} pairs"
    if verdict.n_ties or verdict.min_margin <= 0:
        return f"tie between the top two scores on {verdict.n_ties} pair(s)"
    split = split_for(net.p, net.seed)
    timeout_s = None
    if is_hard(split):
        # A hard task ships its own limit, from the cost model, and only if the packed route's
        # check (the fast proof the split is built for) accepts its network.
        estimate = hard_estimate(net.p, net.hidden)
        if estimate.limit_s is None:
            try:
                limit_between(estimate.brute_force_s[0], estimate.packed_s[1])
            except NoLimitFits as exc:
                return f"no time limit fits: {exc}"
        timeout_s = estimate.limit_s
        if not check_network(net.e1.tolist(), net.e2.tolist(), net.w2.tolist())[0]:
            return "the packed route's check rejects it"
    text = render_weights_lean(
        net.id, net.p, net.hidden, net.seed, net.e1.tolist(), net.e2.tolist(), net.w2.tolist()
    )
    record = TaskRecord(
        id=net.id,
        p=net.p,
        hidden=net.hidden,
        seed=net.seed,
        split=split,
        train_fraction=net.train_fraction,
        theorem=theorem_name(net.p),
        weights_sha256=sha256_text(text),
        min_margin=verdict.min_margin,
        n_pairs=net.p * net.p,
        n_train_pairs=int(net.train_mask.sum()),
        max_abs_weight=int(max(np.abs(m).max() for m in (net.e1, net.e2, net.w2))),
        kernel_mul_adds=kernel_mul_adds(net.p, net.hidden),
        timeout_s=timeout_s,
    )
    return record, text


def tasks_jsonl(records: Sequence[TaskRecord]) -> str:
    """Stable JSON lines: sorted keys, one row per line, trailing newline."""
    return "".join(json.dumps(r.to_json(), sort_keys=True, ensure_ascii=False) + "\n" for r in records)


@dataclass(frozen=True)
class GenerateReport:
    written: list[TaskRecord]
    skipped: list[tuple[Path, str]]
    removed: list[str]


def generate(out_dir: Path, npz_paths: Sequence[Path]) -> GenerateReport:
    """Load every .npz (all must be well-formed), keep the exact networks, and write the set."""
    nets = [load_network(Path(p)) for p in npz_paths]
    seen: dict[str, Path] = {}
    for net in nets:
        if net.id in seen:
            raise NpzError(f"{net.source}: task {net.id} also comes from {seen[net.id]}")
        seen[net.id] = net.source
    built: list[tuple[TaskRecord, str]] = []
    skipped: list[tuple[Path, str]] = []
    for net in nets:
        outcome = build_task(net)
        if isinstance(outcome, str):
            skipped.append((net.source, f"{net.id}: {outcome}"))
        else:
            built.append(outcome)
    built.sort(key=lambda rt: (rt[0].p, rt[0].hidden, rt[0].seed))
    out_dir.mkdir(parents=True, exist_ok=True)
    keep = {r.id for r, _ in built}
    removed = []
    for child in sorted(out_dir.iterdir()):
        if child.is_dir() and TASK_DIR_RE.match(child.name) and child.name not in keep:
            shutil.rmtree(child)
            removed.append(child.name)
    for record, text in built:
        path = weights_path(out_dir, record.id)
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (out_dir / "tasks.jsonl").write_text(tasks_jsonl([r for r, _ in built]), encoding="utf-8")
    return GenerateReport(written=[r for r, _ in built], skipped=skipped, removed=removed)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lean_mod_add_proof.gen_dataset",
        description="Write tasks.jsonl and <id>/Weights.lean from trained .npz networks.",
    )
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("npz", type=Path, nargs="+")
    args = parser.parse_args(argv)
    try:
        report = generate(args.out_dir, args.npz)
    except NpzError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for source, reason in report.skipped:
        print(f"skipped {source}: {reason}")
    for name in report.removed:
        print(f"removed stale task folder {name}")
    print(f"wrote {len(report.written)} task(s) to {args.out_dir} ({len(report.skipped)} skipped)")
    return 0
