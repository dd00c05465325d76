"""Train the two-layer network (embed, add, square, read out) and freeze it to integers.

`train_run` is the whole recipe for one (p, H, seed): full-batch AdamW on the training pairs,
then rounding to integers in [-127, 127] with one scale shared by E1 and E2 (they are summed
before squaring) and one for W2. Positive scalings keep the argmax (scores scale as s_e^2 * s_w),
so only rounding can change an answer; the frozen network is re-checked exactly.

Everything is deterministic per seed, and the same on every CPU: the numpy generator is seeded
from (p, H, seed), and no float result depends on BLAS or on numpy's SIMD dispatch (see
`train_float` and `portable_math`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lean_mod_add_proof.dataset import portable_math
from lean_mod_add_proof.dataset.network import WEIGHT_BOUND, evaluate_all, targets, verify
from lean_mod_add_proof.dataset.tasks import GRID_MAX_P

#: The grid of the committed task set.
GRID_P: tuple[int, ...] = (5, 7, 11, 13, 17, 19, 23)
GRID_H: tuple[int, ...] = (8, 16, 32)
GRID_SEEDS: tuple[int, ...] = (0, 1, 2)
#: The hard split (issues 28, 40): (p, H) shapes whose brute force the cost model keeps at least
#: 3x over each task's limit at the fastest rate planned for, while the packed route stays under a
#: fifth of it at the slowest (dataset/cost.py). Cost grows as p^3 H and the prompt as p H, so
#: these trade neurons for a larger p at about the old prompt size (under 40k tokens by the
#: project's estimate). Four seeds each (seed 3 held out: `hard-eval`); all trained on every pair.
#: A run took about 6 CPU-minutes (p = 109, H = 14: 5 min 50 s each, 2026-12-06; p^3 H per step,
#: 1500 steps), so each seed added here adds about 12 CPU-minutes to `make dataset` and
#: `make check-dataset`.
HARD_SHAPES: tuple[tuple[int, int], ...] = ((107, 15), (109, 14))
HARD_SEEDS: tuple[int, ...] = (0, 1, 2, 3)
#: Hard runs that were trained and did not freeze to an exact network, so the generator skips
#: them (training is byte for byte the same on every machine, so a rebuild would skip them
#: again). They are left out of `hard_grid` so that a rebuild does not spend minutes on each.
#: After 1500 steps (2026-12-06), p109_h14_s1 was right in float but wrong on 1 of 11,881 pairs
#: once frozen, and p109_h14_s2 was right on only 98.3% of the pairs in float.
HARD_NOT_FROZEN: frozenset[tuple[int, int, int]] = frozenset({(109, 14, 1), (109, 14, 2)})

FULL = 1.0
PARTIAL = 0.9


def is_hard(p: int) -> bool:
    """A run of the hard split: p above every prime of the seed's grid."""
    return p > GRID_MAX_P


def train_fraction_for(p: int, hidden: int, seed: int) -> float:
    """The 0.9 rule: every 32-neuron run of the grid with p >= 7 trains on 90% of the pairs (18
    of 63 runs, three seeds for each of the six primes 7..23) and must generalise to the
    held-out 10%.

    p = 5 is left out because only 2-3 of its 25 pairs would be held out, too few for
    generalisation to mean anything (it also never generalised in the recipes tried). Hard runs
    train on every pair: their point is the checking cost, not generalisation."""
    return PARTIAL if hidden == 32 and 7 <= p and not is_hard(p) else FULL


def n_train_pairs_for(p: int, fraction: float) -> int:
    """Number of training pairs, in integer arithmetic (floor of fraction * p^2)."""
    if fraction == FULL:
        return p * p
    if fraction == PARTIAL:
        return (9 * p * p) // 10
    raise ValueError(f"unsupported train fraction {fraction}")


def train_mask_for(p: int, seed: int, fraction: float) -> np.ndarray:
    """Boolean p x p mask of training pairs; the held-out pairs depend only on (p, seed)."""
    n_train = n_train_pairs_for(p, fraction)
    mask = np.zeros(p * p, dtype=bool)
    order = np.random.default_rng([7919, p, seed]).permutation(p * p)
    mask[order[:n_train]] = True
    return mask.reshape(p, p)


@dataclass(frozen=True)
class Recipe:
    """Hyperparameters of one training run (full-batch AdamW)."""

    steps: int = 3000
    lr: float = 0.01
    beta1: float = 0.9
    beta2: float = 0.98
    weight_decay: float = 0.05
    loss: str = "ce"  # "ce" (cross-entropy) or "mse" (one-hot targets, as Gromov)
    init_scale: float = 0.5  # weights start uniform in [-init_scale, init_scale]


#: Steps of a hard run: p = 107, H = 15 and p = 109, H = 14 (seed 0) froze exactly after 1500 steps
#: (p = 113, H = 14 was still 0.4% wrong in float after 1000; docs/dataset.md). Not every seed
#: does: HARD_NOT_FROZEN.
HARD_STEPS = 1500


def recipe_for(p: int, hidden: int, fraction: float) -> Recipe:
    """The recipe used for a run: plain for full data, a grokking recipe for 90% runs, and a
    shorter plain run for the hard split (HARD_STEPS reach an exact network there, and each step
    costs p^3 H: see docs/dataset.md for the figures)."""
    if fraction == FULL:
        return Recipe(steps=HARD_STEPS) if is_hard(p) else Recipe()
    # Grokking recipe: MSE on one-hot targets (Gromov's loss for quadratic activations) with
    # strong decoupled weight decay, which pulls the network from memorising the training pairs
    # to the general (Fourier) solution.
    return Recipe(steps=4000, lr=0.005, weight_decay=2.0, loss="mse")


@dataclass(frozen=True)
class RunResult:
    p: int
    hidden: int
    seed: int
    train_fraction: float
    e1: np.ndarray
    e2: np.ndarray
    w2: np.ndarray
    train_mask: np.ndarray
    float_accuracy: float  # accuracy of the float network on all pairs
    exact_correct: bool  # frozen network right on all pairs with a unique max
    min_margin: int
    seconds: float


def _forward(e1: np.ndarray, e2: np.ndarray, w2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hidden pre-activations and logits over all p*p pairs (row index a*p + b)."""
    p, h = e1.shape
    z = (e1[:, None, :] + e2[None, :, :]).reshape(p * p, h)
    return z, portable_math.matmul(z * z, w2.T)


def train_float(
    p: int, hidden: int, seed: int, mask: np.ndarray, recipe: Recipe
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Full-batch AdamW (decoupled weight decay) on the masked pairs; returns float weights.

    Only CPU-independent float operations are used: elementwise + - * /, sqrt (all correctly
    rounded in IEEE arithmetic) and `portable_math`'s int64 contractions and polynomial exp. No
    BLAS and no numpy transcendental function (numpy dispatches exp/log/tanh to per-CPU SIMD
    variants that differ in the last bits), and no `x ** n` (libm's pow): Adam's bias corrections are running
    products. The initial weights come from `Generator.random`, which is exact bit arithmetic,
    rather than `normal`, whose ziggurat calls libm's exp and log."""
    rng = np.random.default_rng([p, hidden, seed])
    params = [(2.0 * rng.random((p, hidden)) - 1.0) * recipe.init_scale for _ in range(3)]
    m = [np.zeros_like(x) for x in params]
    v = [np.zeros_like(x) for x in params]
    onehot = np.eye(p)[targets(p).reshape(-1)]
    w = mask.reshape(-1, 1).astype(np.float64) / max(int(mask.sum()), 1)
    beta1_t = beta2_t = 1.0
    for _step in range(recipe.steps):
        e1, e2, w2 = params
        z, logits = _forward(e1, e2, w2)
        if recipe.loss == "ce":
            probs = portable_math.exp(logits - logits.max(axis=1, keepdims=True))
            probs /= portable_math.sum_axis(probs, 1)[:, None]
            dlogits = (probs - onehot) * w
        elif recipe.loss == "mse":
            dlogits = 2.0 * (logits - onehot) * w
        else:
            raise ValueError(f"unknown loss {recipe.loss!r}")
        g_w2 = portable_math.matmul(dlogits.T, z * z)
        dz3 = ((2.0 * z) * portable_math.matmul(dlogits, w2)).reshape(p, p, hidden)
        grads = [portable_math.sum_axis(dz3, 1), portable_math.sum_axis(dz3, 0), g_w2]
        beta1_t *= recipe.beta1
        beta2_t *= recipe.beta2
        c1 = 1.0 - beta1_t
        c2 = 1.0 - beta2_t
        lr = recipe.lr
        for i, g in enumerate(grads):
            m[i] = recipe.beta1 * m[i] + (1.0 - recipe.beta1) * g
            v[i] = recipe.beta2 * v[i] + (1.0 - recipe.beta2) * (g * g)
            params[i] = params[i] * (1.0 - lr * recipe.weight_decay) - lr * (m[i] / c1) / (
                np.sqrt(v[i] / c2) + 1e-8
            )
    return params[0], params[1], params[2]


def float_accuracy(e1: np.ndarray, e2: np.ndarray, w2: np.ndarray) -> float:
    _, logits = _forward(e1, e2, w2)
    return float((logits.argmax(axis=1) == targets(e1.shape[0]).reshape(-1)).mean())


def quantize(
    e1: np.ndarray, e2: np.ndarray, w2: np.ndarray, shrink_e: float = 1.0, shrink_w: float = 1.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Round to integers in [-127, 127]: one scale for E1/E2 together, one for W2."""
    se = shrink_e * WEIGHT_BOUND / max(float(np.abs(e1).max()), float(np.abs(e2).max()))
    sw = shrink_w * WEIGHT_BOUND / float(np.abs(w2).max())
    q = [
        np.clip(np.rint(x * s), -WEIGHT_BOUND, WEIGHT_BOUND).astype(np.int64)
        for x, s in ((e1, se), (e2, se), (w2, sw))
    ]
    return q[0], q[1], q[2]


#: E1/E2 scale factors tried after rounding; 1.0 is the plain full-range rounding.
_SHRINKS: tuple[float, ...] = (1.0, 0.98, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7)


def _masked_quality(q1: np.ndarray, q2: np.ndarray, q3: np.ndarray, mask: np.ndarray) -> tuple[bool, int]:
    """(right with a unique max on every masked pair, min margin there or minus the failures)."""
    answers, margins = evaluate_all(q1, q2, q3)
    ok = (answers == targets(q1.shape[0])) & (margins > 0)
    if bool(ok[mask].all()):
        return True, int(margins[mask].min())
    return False, -int((~ok[mask]).sum())


def freeze(
    e1: np.ndarray, e2: np.ndarray, w2: np.ndarray, mask: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Integer-aware freezing: round at full range; if that breaks exactness on the training
    pairs, try slightly smaller scales (a different rounding grid) and keep the candidate with the
    largest training margin. Only training pairs steer the choice, so held-out pairs stay unseen;
    the caller checks the result on all pairs."""
    best: tuple[tuple[bool, int], tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
    for se in _SHRINKS:
        for sw in (1.0, 0.9, 0.8) if se != 1.0 else (1.0,):
            cand = quantize(e1, e2, w2, se, sw)
            quality = _masked_quality(*cand, mask)
            if best is None or quality > best[0]:
                best = (quality, cand)
        if best is not None and best[0][0]:
            break
    assert best is not None
    return best[1]


def train_run(
    p: int, hidden: int, seed: int, fraction: float | None = None, recipe: Recipe | None = None
) -> RunResult:
    """Train, freeze and check one network."""
    start = time.perf_counter()
    frac = train_fraction_for(p, hidden, seed) if fraction is None else fraction
    rec = recipe_for(p, hidden, frac) if recipe is None else recipe
    mask = train_mask_for(p, seed, frac)
    fe1, fe2, fw2 = train_float(p, hidden, seed, mask, rec)
    q1, q2, q3 = freeze(fe1, fe2, fw2, mask)
    verdict = verify(q1, q2, q3)
    return RunResult(
        p=p,
        hidden=hidden,
        seed=seed,
        train_fraction=frac,
        e1=q1,
        e2=q2,
        w2=q3,
        train_mask=mask,
        float_accuracy=float_accuracy(fe1, fe2, fw2),
        exact_correct=verdict.correct,
        min_margin=verdict.min_margin,
        seconds=time.perf_counter() - start,
    )


def run_filename(p: int, hidden: int, seed: int) -> str:
    return f"run_p{p:02d}_h{hidden:02d}_s{seed}.npz"


def save_run(result: RunResult, out_dir: Path) -> Path:
    """Write one run's frozen weights and metadata as an .npz (the generator's input)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / run_filename(result.p, result.hidden, result.seed)
    np.savez(
        path,
        E1=result.e1.astype(np.int64),
        E2=result.e2.astype(np.int64),
        W2=result.w2.astype(np.int64),
        p=np.int64(result.p),
        H=np.int64(result.hidden),
        seed=np.int64(result.seed),
        train_fraction=np.float64(result.train_fraction),
        train_mask=result.train_mask.astype(bool),
    )
    return path


def grid(
    ps: Iterable[int] = GRID_P, hs: Iterable[int] = GRID_H, seeds: Iterable[int] = GRID_SEEDS
) -> list[tuple[int, int, int]]:
    return [(p, h, s) for p in ps for h in hs for s in seeds]


def hard_grid() -> list[tuple[int, int, int]]:
    """The runs of the hard split: every shape and seed but the runs known not to freeze."""
    return [(p, h, s) for p, h in HARD_SHAPES for s in HARD_SEEDS if (p, h, s) not in HARD_NOT_FROZEN]


def _job(args: tuple[int, int, int]) -> RunResult:
    return train_run(*args)


def train_grid(
    runs: Sequence[tuple[int, int, int]], out_dir: Path, workers: int = 2, progress: bool = True
) -> list[RunResult]:
    """Train the runs (longest first, over a pool of `workers`) and save each .npz."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)

    def cost(run: tuple[int, int, int]) -> int:  # work per step grows as p^3 H
        p, h, _seed = run
        return p**3 * h * recipe_for(p, h, train_fraction_for(*run)).steps

    order = sorted(runs, key=cost, reverse=True)
    results: list[RunResult] = []
    with Progress(
        TextColumn("training"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=console,
        disable=not progress,
    ) as bar:
        task = bar.add_task("", total=len(order))
        if workers <= 1:
            it: Iterable[RunResult] = map(_job, order)
            pool = None
        else:
            pool = ProcessPoolExecutor(max_workers=workers)
            it = pool.map(_job, order)
        try:
            for r in it:
                save_run(r, out_dir)
                results.append(r)
                bar.update(
                    task,
                    advance=1,
                    description=f"p={r.p} H={r.hidden} s={r.seed} "
                    f"{'exact' if r.exact_correct else 'NOT exact'}",
                )
        finally:
            if pool is not None:
                pool.shutdown()
    results.sort(key=lambda r: (r.p, r.hidden, r.seed))
    return results


def summary_table(results: Sequence[RunResult]):  # -> rich.table.Table
    from rich.table import Table

    table = Table(title="training runs")
    for col in ("p", "H", "seed", "fraction", "float acc", "exact", "min margin", "seconds"):
        table.add_column(col, justify="right")
    for r in results:
        table.add_row(
            str(r.p),
            str(r.hidden),
            str(r.seed),
            f"{r.train_fraction:.1f}",
            f"{r.float_accuracy:.4f}",
            "yes" if r.exact_correct else "[red]no[/red]",
            str(r.min_margin),
            f"{r.seconds:.1f}",
        )
    n_ok = sum(r.exact_correct for r in results)
    table.caption = f"{n_ok}/{len(results)} exactly correct after freezing"
    return table


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lean_mod_add_proof.dataset.trainer",
        description="Train and freeze the grid of networks to .npz files.",
    )
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--p", type=int, nargs="+", default=list(GRID_P))
    parser.add_argument("--hidden", type=int, nargs="+", default=list(GRID_H))
    parser.add_argument("--seed", type=int, nargs="+", default=list(GRID_SEEDS))
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    from rich.console import Console

    start = time.perf_counter()
    results = train_grid(grid(args.p, args.hidden, args.seed), args.out_dir, workers=args.workers)
    console = Console()
    console.print(summary_table(results))
    console.print(f"wall time {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
