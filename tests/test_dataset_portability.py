"""Training gives the same bytes whatever SIMD numpy dispatches to, and never calls BLAS.

The first test reruns two small trainings (a 90% grokking run and a full-data cross-entropy run)
in subprocesses with numpy's dispatch targets switched off through `NPY_DISABLE_CPU_FEATURES`,
numpy's own switch, and compares the frozen weights byte for byte. The target names differ by
numpy version and CPU, so they are read from numpy itself. OpenBLAS settings are left alone on
purpose: training must not depend on them, and the second test shows it never reaches BLAS.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lean_mod_add_proof.dataset import portable_math, trainer

#: One 90% MSE run and one full-data cross-entropy run, both small.
RUNS = [(7, 32, 1), (7, 8, 0)]

CHILD = """
import hashlib, json, sys
try:
    from numpy._core import _multiarray_umath as umath
except ImportError:  # numpy < 2
    from numpy.core import _multiarray_umath as umath
from lean_mod_add_proof.dataset.trainer import train_run
out = {"features": {k: bool(umath.__cpu_features__.get(k)) for k in umath.__cpu_dispatch__}}
for p, h, s in json.loads(sys.argv[1]):
    r = train_run(p, h, s)
    blob = b"".join(m.astype("<i8").tobytes() for m in (r.e1, r.e2, r.w2))
    out[f"{p}-{h}-{s}"] = [hashlib.sha256(blob).hexdigest(), r.exact_correct, r.min_margin]
print(json.dumps(out))
"""


def _dispatch_targets() -> list[str]:
    """numpy's dispatch targets that this CPU supports, lowest first (empty if numpy hides them)."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # pragma: no cover - numpy < 2
        from numpy.core import _multiarray_umath as umath
    dispatch = list(getattr(umath, "__cpu_dispatch__", []))
    features = getattr(umath, "__cpu_features__", {})
    return [name for name in dispatch if features.get(name)]


def _train_in_child(disabled: list[str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "NPY_DISABLE_CPU_FEATURES"}
    if disabled:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(disabled)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(RUNS)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    for name in disabled:  # the switch really took effect in the child
        assert result["features"][name] is False, (name, result["features"])
    return result


def test_training_is_identical_under_every_simd_dispatch_setting() -> None:
    available = _dispatch_targets()
    if not available:
        pytest.skip(f"numpy {np.__version__} reports no dispatch targets on this CPU to switch off")
    # Default; everything above the lowest dispatch target off; every dispatch target off
    # (numpy's compiled baseline only). For numpy 2.4 on an AVX-512 machine that is
    # "" / "X86_V4 AVX512_ICL AVX512_SPR" / "X86_V3 X86_V4 AVX512_ICL AVX512_SPR".
    settings = [[], available[1:], available]
    results = [_train_in_child(s) for s in settings if s or s is settings[0]]
    weights = [{k: v for k, v in r.items() if k != "features"} for r in results]
    assert all(w == weights[0] for w in weights), weights
    assert all(exact for _sha, exact, _margin in weights[0].values())


def test_training_calls_no_blas_and_no_numpy_transcendental(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(name: str):
        def call(*args, **kwargs):
            raise AssertionError(f"training called np.{name}")

        return call

    real_matmul = np.matmul

    def integer_matmul_only(a, b, *args, **kwargs):
        # Integer matmul is numpy's own exact loop; float matmul is handed to BLAS.
        if not (
            np.issubdtype(np.asarray(a).dtype, np.integer) and np.issubdtype(np.asarray(b).dtype, np.integer)
        ):
            raise AssertionError("training called np.matmul on floats (BLAS)")
        return real_matmul(a, b, *args, **kwargs)

    monkeypatch.setattr(np, "matmul", integer_matmul_only)
    for name in ("dot", "einsum", "tensordot", "inner", "vdot", "exp", "log", "tanh", "power", "cos", "sin"):
        monkeypatch.setattr(np, name, refuse(name))
    monkeypatch.setattr(np.linalg, "multi_dot", refuse("linalg.multi_dot"))
    r = trainer.train_run(5, 8, 0)
    assert r.exact_correct
    r = trainer.train_run(7, 32, 0, recipe=trainer.Recipe(steps=50, loss="mse"))
    assert r.e1.shape == (7, 32)


def test_training_code_has_no_matmul_operator() -> None:
    """`a @ b` reaches BLAS without going through the `np.matmul` name the test above patches."""
    for module in (trainer, portable_math):
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        uses = [n.lineno for n in ast.walk(tree) if isinstance(n, (ast.MatMult))]
        assert not uses, f"{module.__name__} uses `@` on lines {uses}"


def test_portable_math_matches_numpy_closely() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(40, 30)), rng.normal(size=(30, 20))
    assert np.allclose(portable_math.matmul(a, b), np.matmul(a, b), rtol=0, atol=1e-6)
    assert np.allclose(portable_math.sum_axis(a, 0), a.sum(axis=0), rtol=0, atol=1e-12)
    x = -np.linspace(0.0, 700.0, 10001)
    assert np.allclose(portable_math.exp(x), np.exp(x), rtol=1e-14, atol=0)
    assert portable_math.exp(np.array([-800.0]))[0] == 0.0
    with pytest.raises(ValueError):
        portable_math.exp(np.array([0.5]))
    with pytest.raises(FloatingPointError):
        portable_math.matmul(np.array([[np.inf]]), np.array([[1.0]]))
    with pytest.raises(ValueError):
        portable_math.matmul(a, a)


def test_fixed_point_contraction_cannot_overflow() -> None:
    """The bit budget holds at the worst case: every entry at the operand's peak."""
    k = 529  # p^2 for p = 23, the longest contraction in training
    a = np.full((2, k), -3.0)
    b = np.full((k, 2), 7.0)
    assert np.array_equal(portable_math.matmul(a, b), np.full((2, 2), -21.0 * k))


def _exp_reference(x: np.ndarray) -> np.ndarray:
    """portable_math.exp as first written: every entry computed, then those below -700 zeroed."""
    k = np.rint(x * portable_math._INV_LN2)
    r = (x - k * portable_math._LN2_HI) - k * portable_math._LN2_LO
    poly = np.ones_like(r)
    for n in range(portable_math._EXP_TERMS, 0, -1):
        poly = 1.0 + (r / float(n)) * poly
    return np.where(x < -700.0, 0.0, np.ldexp(poly, k.astype(np.int64)))


@pytest.mark.parametrize("scale", [1.0, 30.0, 800.0, 3000.0])
def test_exp_computes_only_what_it_keeps_with_the_same_bits(scale: float) -> None:
    """The masked, in-place exp gives the bits the straightforward one gave, so the committed
    networks do not move (the speed-up matters for the hard runs' wide-spread logits)."""
    x = -np.abs(np.random.default_rng(3).standard_normal((40, 50)) * scale)
    x[0, :5] = [0.0, -700.0, np.nextafter(-700.0, -1000.0), -745.2, -5e-324]
    assert np.array_equal(portable_math.exp(x).view(np.int64), _exp_reference(x).view(np.int64))
