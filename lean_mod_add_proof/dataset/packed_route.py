"""The packed route for the hard split: a model of its kernel work, and the check it runs.

The route is the fast proof the hard split is meant to admit (docs/dataset.md, "The packed
route"; the Lean draft is `lean_mod_add_proof/hard_route/PackedDraft.lean`, UNVERIFIED). For each
row `a` it computes one big `Nat` whose 32-bit slots hold every score of the row's p pairs, and
checks every pair's winner at once with a few more `Nat` operations. Lean's kernel runs `Nat`
literal arithmetic natively (GMP): `reduce_nat` in leanprover/lean4 `src/kernel/type_checker.cpp`
@ b2bb7c48 handles `Nat.add/sub/mul/div/mod/pow/land/lor/xor/shiftLeft/shiftRight/beq/ble` on
literals. So the route costs O(p·H) kernel operations where brute force costs (p+1)·p²·H.

This module mirrors the draft's definitions one for one (each function names its Lean
definition) and runs them on a `Machine`, which counts every operation the kernel would perform:

* `steps`: one step of a structural recursion over a list (`pack`, `addRow`, `packCols`,
  `List.map`, `List.replicate`, the bounds check, the row and column loops);
* `int_ops`: one `Int` operation (`x + 127`, `127 - x`, `Int.toNat`, a comparison with ±127),
  each a few definition unfoldings in the kernel (Int has no kernel extension);
* `nat_ops`: one `Nat` literal operation the kernel hands to GMP, with the sizes of its operands
  (`limb_work`: 64-bit limbs touched, products of limb counts for multiplications).

Two machines share the code path, so the counts cannot drift apart: `RealMachine` computes the
values (Python ints) and so decides whether a network passes the check; `SizeMachine` tracks only
upper bounds of bit lengths, which is enough to count, fast enough for `tasks`. Where a real
value decides the control flow (the `&&` over rows), the size machine takes the all-pass path,
the longest. Pure apart from the work it does; no Lean here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

#: Slot width in bits (`sw` in the draft). Every score with offsets is below 2^31 for H <= 131
#: (H · 254² · 254 < 2^31), and the comparison needs one bit above it.
SLOT_BITS = 32
#: Weights lie in [-OFFSET, OFFSET] (network.WEIGHT_BOUND); adding it makes them natural numbers.
OFFSET = 127
LIMB_BITS = 64

Matrix = Sequence[Sequence[int]]
V = TypeVar("V")


@dataclass
class OpCount:
    """What one run of the packed check asks of the kernel."""

    steps: int = 0
    int_ops: int = 0
    nat_ops: int = 0
    limb_work: int = 0
    """Sum over `Nat` operations of the 64-bit limbs they touch (products of limb counts for `*`)."""
    largest_bits: int = 0
    """The largest `Nat` any operation produced, in bits."""
    result_bits: int = 0
    """Sum of the sizes of every `Nat` produced: the kernel's whnf cache keeps each one until the
    declaration is checked, so this bounds the cache's literal storage."""

    @property
    def operations(self) -> int:
        """Steps, Int operations and Nat operations, each counted as one kernel operation."""
        return self.steps + self.int_ops + self.nat_ops


def _limbs(bits: int) -> int:
    return max(1, -(-bits // LIMB_BITS))


class Machine(Generic[V]):
    """The kernel's `Nat` and `Int` operations as the route uses them, counted."""

    def __init__(self) -> None:
        self.count = OpCount()

    def nat(self, value: int) -> V:
        """A literal of the draft (or one computed from indices, such as a shift amount)."""
        raise NotImplementedError

    def _apply(self, fn: Callable[[int, int], int], size: Callable[[int, int, int], int], a: V, b: V) -> V:
        """fn(a, b), or for a machine without values a result of at most
        size(bits of a, bits of b, b's value when b is a shift amount or an exponent)."""
        raise NotImplementedError

    def _bits(self, v: V) -> int:
        raise NotImplementedError

    def _op(
        self,
        fn: Callable[[int, int], int],
        size: Callable[[int, int, int], int],
        a: V,
        b: V,
        multiply: bool = False,
    ) -> V:
        out = self._apply(fn, size, a, b)
        a_bits, b_bits, out_bits = self._bits(a), self._bits(b), self._bits(out)
        c = self.count
        c.nat_ops += 1
        c.limb_work += _limbs(a_bits) * _limbs(b_bits) if multiply else _limbs(a_bits) + _limbs(b_bits)
        c.largest_bits = max(c.largest_bits, out_bits)
        c.result_bits += out_bits
        return out

    def step(self, n: int = 1) -> None:
        self.count.steps += n

    def add(self, a: V, b: V) -> V:
        return self._op(lambda x, y: x + y, lambda x, y, _: max(x, y) + 1, a, b)

    def sub(self, a: V, b: V) -> V:
        """Nat.sub, truncated at 0."""
        return self._op(lambda x, y: max(x - y, 0), lambda x, y, _: x, a, b)

    def mul(self, a: V, b: V) -> V:
        return self._op(lambda x, y: x * y, lambda x, y, _: x + y, a, b, multiply=True)

    def shl(self, a: V, n: V) -> V:
        return self._op(lambda x, y: x << y, lambda x, _, n: x + n, a, n)

    def shr(self, a: V, n: V) -> V:
        return self._op(lambda x, y: x >> y, lambda x, _, n: max(x - n, 1), a, n)

    def land(self, a: V, b: V) -> V:
        return self._op(lambda x, y: x & y, lambda x, y, _: min(x, y), a, b)

    def mod(self, a: V, b: V) -> V:
        return self._op(lambda x, y: x % y, lambda x, y, _: min(x, y), a, b)

    def pow2(self, n: V) -> V:
        """`2 ^ n` (Nat.pow)."""
        return self._op(lambda x, y: x**y, lambda _, __, n: n + 1, self.nat(2), n)

    def beq(self, a: V, b: V) -> bool:
        """`a == b` (Nat.beq): a Bool."""
        return self._op(lambda x, y: int(x == y), lambda *_: 1, a, b) == self.nat(1)

    def offset_nat(self, x: int, sign: int) -> V:
        """`offNat x = (x + 127).toNat` (sign 1) or `negOffNat x = (127 - x).toNat` (sign -1):
        one Int addition or subtraction and one `Int.toNat`."""
        self.count.int_ops += 2
        value = OFFSET + sign * x
        if not 0 <= value <= 2 * OFFSET:
            raise ValueError(f"weight {x} outside [-{OFFSET}, {OFFSET}]")
        return self.nat(value)


class RealMachine(Machine[int]):
    """Computes the values (Python ints are exact)."""

    def nat(self, value: int) -> int:
        return value

    def _apply(self, fn, size, a: int, b: int) -> int:
        return fn(a, b)

    def _bits(self, v: int) -> int:
        return v.bit_length()


@dataclass(frozen=True)
class Sized:
    """A `Nat` of at most `bits` bits; `exact` when it is a small value known from the indices."""

    bits: int
    exact: int | None = None


#: SizeMachine computes values exactly up to this many bits (indices, shift amounts, weights).
_EXACT_BITS = 64


class SizeMachine(Machine[Sized]):
    """Tracks upper bounds of sizes only; small values (indices, shift amounts) stay exact."""

    def nat(self, value: int) -> Sized:
        return Sized(value.bit_length(), value)

    def _apply(self, fn, size, a: Sized, b: Sized) -> Sized:
        if a.exact is not None and b.exact is not None and b.exact.bit_length() <= 32:
            out = fn(a.exact, b.exact)
            if out.bit_length() <= _EXACT_BITS:
                return Sized(out.bit_length(), out)
            return Sized(out.bit_length())
        amount = b.exact if b.exact is not None else -1  # a shift or exponent is always exact
        return Sized(max(size(a.bits, b.bits, amount), 1))

    def _bits(self, v: Sized) -> int:
        return v.bits

    def beq(self, a: Sized, b: Sized) -> bool:
        super().beq(a, b)
        return True  # the all-pass path: every row is evaluated


# --- The draft's definitions, one function each ------------------------------------------------


def pack(m: Machine[V], width: V, values: Sequence[V]) -> V:
    """`pack w (v :: vs) = v + (pack w vs <<< w)`, `pack w [] = 0`: slot i of the result holds
    values[i] while every value is below 2^w."""
    acc = m.nat(0)
    m.step()  # the `[]` case
    for v in reversed(values):
        m.step()
        acc = m.add(v, m.shl(acc, width))
    return acc


def ones(m: Machine[V], n: int) -> list[V]:
    """`List.replicate n 1` (or of 0)."""
    m.step(n + 1)
    return [m.nat(1) for _ in range(n)]


def add_row(m: Machine[V], square: bool, shift: V, row: Sequence[int], accs: list[V]) -> list[V]:
    """`addRow f sh (x :: xs) (acc :: accs) = (acc + (f (offNat x) <<< sh)) :: addRow f sh xs accs`:
    one row of a table added into the H column accumulators, each entry offset by 127 (and
    squared when f squares) at bit `sh`."""
    out = []
    for x, acc in zip(row, accs, strict=True):
        m.step()
        v = m.offset_nat(x, 1)
        if square:
            v = m.mul(v, v)
        out.append(m.add(acc, m.shl(v, shift)))
    m.step()  # the `_, _ => []` case
    return out


def pack_columns(m: Machine[V], square: bool, width: V, rows: Matrix, hidden: int) -> list[V]:
    """`packCols f w rows b accs`: folds the rows into H numbers, column k's entry of row b at
    bit `w * b`: the table's columns, packed, in one pass over its rows."""
    accs = ones(m, hidden)  # `List.replicate H 0`, counted like the ones
    accs = [m.nat(0) for _ in accs]
    for b, row in enumerate(rows):
        m.step()
        shift = m.mul(width, m.nat(b))  # `w * b`
        m.add(m.nat(b), m.nat(1))  # `b + 1`
        accs = add_row(m, square, shift, row, accs)
    m.step()  # the `[]` case
    return accs


def table_ok(m: Machine[V], rows: Matrix, hidden: int) -> bool:
    """`tableOK M`: every row is `rowBounded r H`, exactly H entries each in [-127, 127] (two
    Int comparisons per entry, the length counted down as it goes)."""
    ok = True
    for row in rows:
        m.step()  # one step of tableOK
        for x in row:
            m.step()  # one step of rowBounded
            m.count.int_ops += 2  # `decide (-127 ≤ x)`, `decide (x ≤ 127)`
            ok = ok and -OFFSET <= x <= OFFSET
        m.beq(m.nat(0), m.nat(max(hidden - len(row), 0)))  # rowBounded's `[], n => n == 0`
        ok = ok and len(row) == hidden
    m.step()  # tableOK's `[]`
    return ok


def packed_check(m: Machine[V], e1: Matrix, e2: Matrix, w2: Matrix) -> bool:
    """`allOK` of the draft (PackedDraft.lean, Part 1), operation for operation: true when every
    table is p rows of H entries in [-127, 127] and every row's packed comparison passes.

    Slots are SLOT_BITS wide; the number of row `a` has p blocks of 2p slots, block b for the
    pair (a, b). Slot j of block b holds s'(a, b, (a + j) % p), where s'(a, b, c) =
    Σ_k (x + y)² · (w_ck + 127) = score c + 127 · Σ_k (x + y)², the same shift for every class
    (x = E1[a][k], y = E2[b][k]). In block b the window of slots b .. b + p - 1 holds every class
    once, the target (a + b) % p first, so one broadcast of the target slot and one subtraction
    compare all p classes of all p pairs: slot z = target + 2^31 - 1 + [j = b] - s'(j) has its
    top bit set exactly when the target wins (or j = b). Constants are closed terms, which the
    kernel's whnf cache computes once per declaration; they are counted once."""
    p, hidden = len(e1), len(e1[0])
    shapes_ok = all([table_ok(m, t, hidden) for t in (e1, e2, w2)])
    for t in (e1, e2, w2):  # `Net.E1.length == p` and the others
        m.step(len(t) + 1)
        m.beq(m.nat(len(t)), m.nat(p))
    if not shapes_ok or not len(e2) == len(w2) == p:
        return False
    sw = m.nat(SLOT_BITS)
    block_w = m.mul(sw, m.nat(2 * p))  # `32 * 226`: the bits of one block of 2p slots
    one = pack(m, block_w, ones(m, p))  # ONE: 1 in slot 0 of every block
    diag = pack(m, m.mul(sw, m.nat(2 * p + 1)), ones(m, p))  # DIAG: 1 in slot b of block b
    onep = pack(m, sw, ones(m, p))  # ONEP: 1 in p consecutive slots
    win = m.mul(diag, onep)  # WIN: 1 in slots b .. b + p - 1 of block b
    full = m.sub(m.pow2(sw), m.nat(1))  # 2^32 - 1
    half = m.pow2(m.nat(SLOT_BITS - 1))  # 2^31
    mask_d = m.mul(diag, full)
    mask_w = m.mul(win, full)
    hi = m.mul(win, half)
    k_const = m.add(m.mul(win, m.sub(half, m.nat(1))), diag)
    block_mod = m.pow2(block_w)  # 2^(32 * 2p): one block
    ys = pack_columns(m, False, block_w, e2, hidden)  # Y_k: y + 127 in slot 0 of block b
    y2s = pack_columns(m, True, block_w, e2, hidden)  # Y2_k: (y + 127)²
    cs = pack_columns(m, False, sw, w2, hidden)  # C_k: w + 127 in slot c
    p_slots = m.mul(sw, m.nat(p))  # `32 * p`: the bits of p slots
    two_p_slots = m.add(p_slots, p_slots)
    c3s = []
    m.step(hidden + 1)  # `Cs.map`
    for c in cs:
        # C3_k = C + (C <<< 32·p + C <<< (32·p + 32·p)): the column three times over, to rotate
        c3s.append(m.add(c, m.add(m.shl(c, p_slots), m.shl(c, two_p_slots))))
    two = m.nat(2)
    ok = True
    m.step()  # allRows' `[]`
    for a in range(p):
        m.step()  # one step of allRows
        rot = m.mul(sw, m.nat(a))  # `32 * a`
        s = m.nat(0)
        m.step()  # rowSum's last case
        for k in range(hidden):
            m.step()  # one step of rowSum (and `term`)
            u = m.offset_nat(e1[a][k], -1)  # negOffNat x = (127 - x).toNat
            hk = m.sub(m.add(m.mul(m.mul(u, u), one), y2s[k]), m.mul(m.mul(two, u), ys[k]))
            ck = m.mod(m.shr(c3s[k], rot), block_mod)
            s = m.add(m.mul(hk, ck), s)
        t = m.land(s, mask_d)
        z = m.sub(m.add(m.mul(t, onep), k_const), m.land(s, mask_w))
        ok = m.beq(m.land(z, hi), hi)
        m.add(m.nat(a), m.nat(1))  # `a + 1`
        if not ok:
            break  # `&&` stops at the first failing row
    return ok


# --- What the tasks need ------------------------------------------------------------------------


def count_ops(p: int, hidden: int) -> OpCount:
    """The kernel work of the packed check for any network of this shape (sizes only, fast)."""
    m = SizeMachine()
    zeros = [[0] * hidden for _ in range(p)]
    packed_check(m, zeros, zeros, zeros)
    return m.count


def check_network(e1: Matrix, e2: Matrix, w2: Matrix) -> tuple[bool, OpCount]:
    """Run the packed check on real weights: (passes, work). Passing means what the draft's
    soundness lemmas turn into the Spec: every pair's target score beats every other score."""
    m = RealMachine()
    ok = packed_check(m, e1, e2, w2)
    return ok, m.count
