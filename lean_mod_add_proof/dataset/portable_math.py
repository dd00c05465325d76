"""Float64 arithmetic whose result is the same on every CPU: contractions, sums and exp.

Why this exists: float `@`/`np.dot`/`np.matmul`/`tensordot` go to OpenBLAS, which picks a kernel
per CPU (with its own blocking, summation order and FMA use), and numpy's float reductions are
loops whose order numpy does not promise. Both changed the committed weights between machines.

How: each operand is rounded to a fixed-point int64 array with a power-of-two scale chosen from
its largest entry, the contraction or sum runs in int64, and the result is scaled back. Integer
addition is exact and associative, so the order numpy (or a compiler, or SIMD) uses cannot
change the result, and integer `matmul` never reaches BLAS (numpy hands only float and complex
types to cblas; `umath/matmul.c.src`). Every float step here is exact or correctly rounded:
scaling by a power of two and `rint` are exact, `int64 -> float64` conversion rounds to nearest.
The bit budget keeps every partial sum below 2**62, so nothing overflows.

`exp` is a polynomial in elementwise + and * after an exact power-of-two range reduction, so it
avoids numpy's `np.exp`, which has per-CPU SIMD variants (AVX2, AVX-512) that differ in the last
bits.

The price of the fixed-point contractions is precision: about 26 significant bits relative to
each operand's largest entry, close to float32, which is plenty for full-batch gradient descent.
"""

from __future__ import annotations

import numpy as np

#: Partial sums stay below 2**62 (int64 holds 2**63 - 1).
_SUM_BITS = 62


def _bits_per_operand(n_terms: int, n_factors: int) -> int:
    """Bits each factor may use so that `n_terms` products of `n_factors` factors fit."""
    headroom = max(int(n_terms - 1).bit_length(), 0)
    return (_SUM_BITS - headroom) // n_factors


def to_fixed(x: np.ndarray, bits: int) -> tuple[np.ndarray, int]:
    """(integers q, exponent e) with x ~= q * 2**e and |q| <= 2**bits."""
    peak = float(np.max(np.abs(x))) if x.size else 0.0
    if peak == 0.0 or not np.isfinite(peak):
        if not np.isfinite(peak):
            raise FloatingPointError("fixed-point conversion of a non-finite array")
        return np.zeros(x.shape, dtype=np.int64), 0
    _, peak_exp = np.frexp(peak)  # peak < 2**peak_exp, exactly
    exponent = int(peak_exp) - bits
    return np.rint(np.ldexp(x, -exponent)).astype(np.int64), exponent


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b for 2-D float arrays, computed in int64 (see the module docstring)."""
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} do not chain")
    bits = _bits_per_operand(a.shape[1], 2)
    qa, ea = to_fixed(a, bits)
    qb, eb = to_fixed(b, bits)
    return np.ldexp(np.matmul(qa, qb).astype(np.float64), ea + eb)


def sum_axis(x: np.ndarray, axis: int) -> np.ndarray:
    """x.sum(axis) computed in int64 (see the module docstring)."""
    qx, ex = to_fixed(x, _bits_per_operand(x.shape[axis], 1))
    return np.ldexp(qx.sum(axis=axis).astype(np.float64), ex)


#: ln 2 split in two (Cody and Waite): the high part has trailing zero bits, so k * _LN2_HI is
#: exact for the |k| < 2**11 that occur here.
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e00
#: Taylor terms for exp(r) on |r| <= 0.35: the first omitted term is below 2**-60.
_EXP_TERMS = 14


def exp(x: np.ndarray) -> np.ndarray:
    """exp(x) for x <= 0 (softmax after subtracting the row maximum), to about 1e-15 relative.

    Inputs below -700 give 0.0 rather than a subnormal, which is what a softmax wants anyway."""
    x = np.asarray(x, dtype=np.float64)
    if np.any(x > 0.0):
        raise ValueError("portable_math.exp is only defined for x <= 0")
    # Only the entries at or above -700 are computed (the others are 0.0), and the Horner steps
    # reuse two buffers: the same IEEE operations on the same values as computing everything and
    # then zeroing, so the bits are the same, at a fraction of the work once a softmax's logits
    # spread far (tests/test_dataset_portability.py compares the two).
    out = np.zeros_like(x)
    keep = x >= -700.0
    xs = x[keep]
    k = np.rint(xs * _INV_LN2)
    r = (xs - k * _LN2_HI) - k * _LN2_LO
    poly = np.ones_like(r)
    step = np.empty_like(r)
    for n in range(_EXP_TERMS, 0, -1):  # Horner: 1 + r/1 (1 + r/2 (1 + ... (1 + r/14)))
        np.divide(r, float(n), out=step)
        np.multiply(step, poly, out=step)
        np.add(step, 1.0, out=poly)
    out[keep] = np.ldexp(poly, k.astype(np.int64))
    return out
