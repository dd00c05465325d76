import LeanCheckedNetwork.Weights

/-!
# UNVERIFIED DRAFT: the packed route, for task p109_h14_s0

NOTHING HERE HAS BEEN CHECKED BY LEAN. It was written where no Lean toolchain exists, against
the Lean 4 sources only (citations below). Two independent audits (readings, not Lean) found
errors that are fixed here; docs/lean-audit.md records them and what is still open.
`lean-mod-add-proof lean-check` grades it on a machine with Lean and reports the verdict; that
verdict counts for nothing in grading. The design it follows, the
statement chain and every lemma's role are in docs/dataset.md ("The packed route").

Part 1 is the computation the kernel evaluates (mirrored operation for operation by
`lean_mod_add_proof/dataset/packed_route.py`, which counts its kernel work). Part 2 proves, for
every network, that the computation returning `true` implies the Spec. Only core Lean 4 is used.

Core facts used, as read in leanprover/lean4 (names to confirm on the pinned toolchain):
* kernel: `Nat.add/sub/mul/div/mod/pow/land/shiftLeft/shiftRight/beq/ble` on literals run as
  GMP operations (`type_checker::reduce_nat`, src/kernel/type_checker.cpp @ b2bb7c48);
  `decide +kernel` proves `b = true` by the kernel's `whnf` alone (`is_def_eq_core`, same file);
* `Nat.shiftLeft_eq`, `Nat.shiftRight_eq_div_pow`, `Nat.mul_add_div`, `Nat.mul_add_mod`,
  `Nat.sub_mul`, `Nat.pow_add`, `Nat.div_eq_of_lt`, `Nat.mod_eq_of_lt`
  (src/Init/Data/Nat/Basic.lean);
* `Nat.testBit_and`, `Nat.eq_of_testBit_eq`, `Nat.testBit_two_pow_mul_add`, `Nat.and_lt_two_pow`,
  `Nat.ge_two_pow_of_testBit`, `Nat.testBit_two_pow_self`, `Nat.testBit_lt_two_pow`,
  `Nat.two_pow_pos` (src/Init/Data/Nat/Bitwise/Lemmas.lean, as in 2026 copies of lean4 master
  (sankalpsthakur/lean4 @ 46be98ca; lean4 PR #11905): the 2024 names `testBit_mul_pow_two_add`
  and `testBit_implies_ge` were renamed in 2025 and have no alias there; docs/lean-audit.md);
* `Int.toNat_of_nonneg`, `Int.sub_mul`, `Int.mul_sub`, `Int.mul_comm`, `Int.neg_mul_neg`
  (src/Init/Data/Int); the tactics `omega`, `simp only`, `induction`, `decide +kernel`.
-/

namespace LeanCheckedNetwork.Packed

open LeanCheckedNetwork

/-! ## Part 1. The computation

Written for p = 109 and H = 14 (this task); `32` is the slot width, `218 = 2 * 109` slots make one
pair's block and `219 = 2 * 109 + 1` is the stride of the diagonal. -/

-- `offNat x` is `x + 127` as a natural number (weights lie in [-127, 127]).
def offNat (x : Int) : Nat := (x + 127).toNat
/-- `127 - x` as a natural number. -/
def negOffNat (x : Int) : Nat := (127 - x).toNat

/-- Little-endian packing in slots of `w` bits: slot `i` holds entry `i`. -/
def pack (w : Nat) : List Nat → Nat
  | [] => 0
  | v :: vs => v + (pack w vs <<< w)

/-- One row added into the column accumulators: entry `k`, offset and mapped by `f`, at bit `sh`
of accumulator `k`. -/
def addRow (f : Nat → Nat) (sh : Nat) : List Int → List Nat → List Nat
  | x :: xs, acc :: accs => (acc + (f (offNat x) <<< sh)) :: addRow f sh xs accs
  | _, _ => []

/-- The columns of a table, packed in one pass over its rows: row `b` lands at bit `w * b`. -/
def packCols (f : Nat → Nat) (w : Nat) : List (List Int) → Nat → List Nat → List Nat
  | [], _, accs => accs
  | row :: rows, b, accs => packCols f w rows (b + 1) (addRow f (w * b) row accs)

/-- Bits of one pair's block: 218 slots of 32 bits. -/
def blockW : Nat := 32 * 218
def ONE : Nat := pack blockW (List.replicate 109 1)
def DIAG : Nat := pack (32 * 219) (List.replicate 109 1)
def ONEP : Nat := pack 32 (List.replicate 109 1)
def WIN : Nat := DIAG * ONEP
def FULL : Nat := 2 ^ 32 - 1
def HALF : Nat := 2 ^ 31
def MASKD : Nat := DIAG * FULL
def MASKW : Nat := WIN * FULL
def HI : Nat := WIN * HALF
def KC : Nat := WIN * (HALF - 1) + DIAG
def BLOCKMOD : Nat := 2 ^ blockW

def Ys : List Nat := packCols (fun v => v) blockW Net.E2 0 (List.replicate 14 0)
def Y2s : List Nat := packCols (fun v => v * v) blockW Net.E2 0 (List.replicate 14 0)
def Cs : List Nat := packCols (fun v => v) 32 Net.W2 0 (List.replicate 14 0)
def C3s : List Nat := Cs.map fun c => c + ((c <<< (32 * 109)) + (c <<< (32 * 109 + 32 * 109)))

/-- One column's contribution to a row's number. -/
def term (rot : Nat) (x : Int) (y y2 c : Nat) : Nat :=
  (negOffNat x * negOffNat x * ONE + y2 - 2 * negOffNat x * y) * ((c >>> rot) % BLOCKMOD)

/-- A row's number: every pair's every class score, one per slot. -/
def rowSum (rot : Nat) : List Int → List Nat → List Nat → List Nat → Nat
  | x :: xs, y :: ys, y2 :: y2s, c :: cs => term rot x y y2 c + rowSum rot xs ys y2s cs
  | _, _, _, _ => 0

/-- A row's comparison: every window slot's top bit is set. -/
def rowOK (a : Nat) (row : List Int) : Bool :=
  let S := rowSum (32 * a) row Ys Y2s C3s
  let Z := (S &&& MASKD) * ONEP + KC - (S &&& MASKW)
  Z &&& HI == HI

def allRows : List (List Int) → Nat → Bool
  | [], _ => true
  | row :: rows, a => rowOK a row && allRows rows (a + 1)

/-- A row of exactly `n` entries, each in [-127, 127]. -/
def rowBounded : List Int → Nat → Bool
  | [], n => n == 0
  | x :: xs, n + 1 => (decide (-127 ≤ x) && decide (x ≤ 127)) && rowBounded xs n
  | _ :: _, 0 => false

def tableOK : List (List Int) → Bool
  | [] => true
  | r :: rs => rowBounded r 14 && tableOK rs

def allOK : Bool :=
  (tableOK Net.E1 && tableOK Net.E2 && tableOK Net.W2) &&
  (Net.E1.length == 109 && Net.E2.length == 109 && Net.W2.length == 109) && allRows Net.E1 0

set_option maxHeartbeats 0 in
/-- The whole computation, by the kernel (GMP for every `Nat` operation on literals). -/
theorem allOK_eq : allOK = true := by decide +kernel

/-! ## Part 2. Why `allOK = true` proves the Spec -/

/-! ### Lists and sums -/

-- `ent r k` is entry `k` of a row of integers, `0` past its end.
def ent : List Int → Nat → Int
  | [], _ => 0
  | x :: _, 0 => x
  | _ :: xs, k + 1 => ent xs k

/-- Entry `k` of a list of naturals, `0` past its end. -/
def entN : List Nat → Nat → Nat
  | [], _ => 0
  | x :: _, 0 => x
  | _ :: xs, k + 1 => entN xs k

/-- A sum, head first (the order list recursion visits). -/
def nsum : Nat → (Nat → Nat) → Nat
  | 0, _ => 0
  | n + 1, f => f 0 + nsum n (fun k => f (k + 1))

def isum : Nat → (Nat → Int) → Int
  | 0, _ => 0
  | n + 1, f => f 0 + isum n (fun k => f (k + 1))

theorem entN_replicate (v : Nat) : ∀ (n k : Nat), k < n → entN (List.replicate n v) k = v
  | 0, _, h => absurd h (Nat.not_lt_zero _)
  | _ + 1, 0, _ => rfl
  | n + 1, k + 1, h => entN_replicate v n k (by omega)

theorem length_replicate' (v : Nat) : ∀ n : Nat, (List.replicate n v).length = n
  | 0 => rfl
  | n + 1 => by simp only [List.replicate, List.length]; rw [length_replicate' v n]

theorem entN_map (g : Nat → Nat) : ∀ (l : List Nat) (k : Nat), k < l.length →
    entN (l.map g) k = g (entN l k)
  | [], _, h => absurd h (Nat.not_lt_zero _)
  | _ :: _, 0, _ => rfl
  | _ :: l, k + 1, h => entN_map g l k (by simp only [List.length] at h; omega)

theorem length_map' (g : Nat → Nat) : ∀ l : List Nat, (l.map g).length = l.length
  | [] => rfl
  | _ :: l => by simp only [List.map, List.length]; rw [length_map' g l]

theorem nsum_cast : ∀ (n : Nat) (f : Nat → Nat), ((nsum n f : Nat) : Int) = isum n (fun k => (f k : Int))
  | 0, _ => rfl
  | n + 1, f => by
    simp only [nsum, isum]
    push_cast
    rw [nsum_cast n (fun k => f (k + 1))]

theorem isum_congr : ∀ (n : Nat) (f g : Nat → Int), (∀ k, k < n → f k = g k) → isum n f = isum n g
  | 0, _, _, _ => rfl
  | n + 1, f, g, h => by
    simp only [isum]
    rw [h 0 (by omega), isum_congr n (fun k => f (k + 1)) (fun k => g (k + 1)) (fun k hk => h (k + 1) (by omega))]

theorem isum_add : ∀ (n : Nat) (f g : Nat → Int), isum n (fun k => f k + g k) = isum n f + isum n g
  | 0, _, _ => rfl
  | n + 1, f, g => by
    simp only [isum]
    rw [isum_add n (fun k => f (k + 1)) (fun k => g (k + 1))]
    omega

theorem isum_mul : ∀ (n : Nat) (c : Int) (f : Nat → Int), isum n (fun k => c * f k) = c * isum n f
  | 0, _, _ => by simp [isum]
  | n + 1, c, f => by
    simp only [isum]
    rw [isum_mul n c (fun k => f (k + 1)), Int.mul_add]

/-! ### Numbers as sums of slots -/

-- `ev w n f = Σ_{i < n} f i * 2 ^ (w * i)`.
def ev (w : Nat) : Nat → (Nat → Nat) → Nat
  | 0, _ => 0
  | n + 1, f => ev w n f + f n * 2 ^ (w * n)

theorem ev_congr (w : Nat) : ∀ (n : Nat) (f g : Nat → Nat), (∀ i, i < n → f i = g i) →
    ev w n f = ev w n g
  | 0, _, _, _ => rfl
  | n + 1, f, g, h => by
    simp only [ev]
    rw [ev_congr w n f g (fun i hi => h i (by omega)), h n (by omega)]

theorem ev_zero_fn (w : Nat) : ∀ n : Nat, ev w n (fun _ => 0) = 0
  | 0 => rfl
  | n + 1 => by simp only [ev]; rw [ev_zero_fn w n, Nat.zero_mul]

theorem ev_add (w : Nat) : ∀ (n : Nat) (f g : Nat → Nat),
    ev w n f + ev w n g = ev w n (fun i => f i + g i)
  | 0, _, _ => rfl
  | n + 1, f, g => by
    simp only [ev]
    rw [← ev_add w n f g, Nat.add_mul]
    omega

theorem ev_mul_left (w c : Nat) : ∀ (n : Nat) (f : Nat → Nat), c * ev w n f = ev w n (fun i => c * f i)
  | 0, _ => by simp [ev]
  | n + 1, f => by
    simp only [ev]
    rw [Nat.mul_add, ev_mul_left w c n f, Nat.mul_assoc c (f n)]

theorem ev_le (w : Nat) : ∀ (n : Nat) (f g : Nat → Nat), (∀ i, i < n → g i ≤ f i) → ev w n g ≤ ev w n f
  | 0, _, _, _ => Nat.le_refl 0
  | n + 1, f, g, h => by
    simp only [ev]
    have h1 := ev_le w n f g (fun i hi => h i (by omega))
    have h2 : g n * 2 ^ (w * n) ≤ f n * 2 ^ (w * n) := Nat.mul_le_mul (h n (by omega)) (Nat.le_refl _)
    omega

theorem ev_sub (w : Nat) : ∀ (n : Nat) (f g : Nat → Nat), (∀ i, i < n → g i ≤ f i) →
    ev w n f - ev w n g = ev w n (fun i => f i - g i)
  | 0, _, _, _ => rfl
  | n + 1, f, g, h => by
    simp only [ev]
    have h1 := ev_le w n f g (fun i hi => h i (by omega))
    have h2 : g n * 2 ^ (w * n) ≤ f n * 2 ^ (w * n) := Nat.mul_le_mul (h n (by omega)) (Nat.le_refl _)
    rw [← ev_sub w n f g (fun i hi => h i (by omega)), Nat.sub_mul]
    omega

theorem ev_lt (w : Nat) : ∀ (n : Nat) (f : Nat → Nat), (∀ i, i < n → f i < 2 ^ w) →
    ev w n f < 2 ^ (w * n)
  | 0, _, _ => by simp [ev]
  | n + 1, f, h => by
    simp only [ev]
    have h1 := ev_lt w n f (fun i hi => h i (by omega))
    have h3 : (f n + 1) * 2 ^ (w * n) ≤ 2 ^ w * 2 ^ (w * n) :=
      Nat.mul_le_mul (h n (by omega)) (Nat.le_refl _)
    have h4 : 2 ^ (w * (n + 1)) = 2 ^ w * 2 ^ (w * n) := by
      rw [Nat.mul_add, Nat.mul_one, Nat.pow_add, Nat.mul_comm (2 ^ (w * n))]
    rw [Nat.add_mul, Nat.one_mul] at h3
    rw [h4]
    omega

theorem ev_append (w n : Nat) (f : Nat → Nat) : ∀ m : Nat,
    ev w (n + m) f = ev w n f + 2 ^ (w * n) * ev w m (fun j => f (n + j))
  | 0 => by simp [ev]
  | m + 1 => by
    rw [← Nat.add_assoc]
    simp only [ev]
    have e : f (n + m) * 2 ^ (w * (n + m)) = 2 ^ (w * n) * (f (n + m) * 2 ^ (w * m)) := by
      rw [Nat.mul_add w n m, Nat.pow_add, Nat.mul_left_comm]
    rw [ev_append w n f m, e, Nat.mul_add (2 ^ (w * n))]
    omega

theorem ev_one (w : Nat) (f : Nat → Nat) : ev w 1 f = f 0 := by simp [ev]

/-- The lowest slot first: the form `pack` builds. -/
theorem ev_cons (w n : Nat) (f : Nat → Nat) :
    ev w (n + 1) f = f 0 + 2 ^ w * ev w n (fun j => f (j + 1)) := by
  rw [Nat.add_comm n 1, ev_append w 1 f n, ev_one, Nat.mul_one]
  rw [ev_congr w n (fun j => f (1 + j)) (fun j => f (j + 1))
    (fun j _ => congrArg f (Nat.add_comm 1 j))]

/-- Slot `i` of a number whose slots are all below `2 ^ w` is `f i`. -/
theorem ev_digit (w n : Nat) (f : Nat → Nat) (hf : ∀ j, j < n → f j < 2 ^ w) (i : Nat) (hi : i < n) :
    ev w n f / 2 ^ (w * i) % 2 ^ w = f i := by
  obtain ⟨k, rfl⟩ : ∃ k, n = i + (1 + k) := ⟨n - i - 1, by omega⟩
  have hL : ev w i f < 2 ^ (w * i) := ev_lt w i f (fun j hj => hf j (by omega))
  rw [ev_append w i f (1 + k), ev_append w 1 (fun j => f (i + j)) k, ev_one, Nat.add_zero,
    Nat.add_comm (ev w i f), Nat.mul_add_div (Nat.two_pow_pos _), Nat.div_eq_of_lt hL, Nat.add_zero,
    Nat.mul_one, Nat.add_comm (f i), Nat.mul_add_mod, Nat.mod_eq_of_lt (hf i (by omega))]

theorem ev_eq_of_digits (w n : Nat) (f g : Nat → Nat) (hf : ∀ i, i < n → f i < 2 ^ w)
    (hg : ∀ i, i < n → g i < 2 ^ w) (h : ev w n f = ev w n g) (i : Nat) (hi : i < n) : f i = g i := by
  rw [← ev_digit w n f hf i hi, ← ev_digit w n g hg i hi, h]

/-- Empty slots past `n` change nothing. -/
theorem ev_zero_tail (w n m : Nat) (f : Nat → Nat) (h : ∀ j, j < m → f (n + j) = 0) :
    ev w (n + m) f = ev w n f := by
  rw [ev_append, ev_congr w m (fun j => f (n + j)) (fun _ => 0) h, ev_zero_fn, Nat.mul_zero, Nat.add_zero]

theorem land_low (x n : Nat) (h : x < 2 ^ n) : x &&& (2 ^ n - 1) = x := by
  apply Nat.eq_of_testBit_eq
  intro j
  rw [Nat.testBit_and, Nat.testBit_two_pow_sub_one]
  by_cases hj : j < n
  · simp [hj]
  · have hx : x < 2 ^ j := Nat.lt_of_lt_of_le h (Nat.pow_le_pow_right (by decide) (by omega))
    simp [hj, Nat.testBit_lt_two_pow hx]

theorem ev_land (w : Nat) : ∀ (n : Nat) (f g : Nat → Nat), (∀ i, i < n → f i < 2 ^ w) →
    (∀ i, i < n → g i < 2 ^ w) → ev w n f &&& ev w n g = ev w n (fun i => f i &&& g i)
  | 0, _, _, _, _ => by simp [ev]
  | n + 1, f, g, hf, hg => by
    have ih := ev_land w n f g (fun i hi => hf i (by omega)) (fun i hi => hg i (by omega))
    have lf := ev_lt w n f (fun i hi => hf i (by omega))
    have lg := ev_lt w n g (fun i hi => hg i (by omega))
    have lfg : (ev w n f &&& ev w n g) < 2 ^ (w * n) := Nat.and_lt_two_pow _ lg
    have e : ∀ h : Nat → Nat, ev w (n + 1) h = 2 ^ (w * n) * h n + ev w n h := fun h => by
      simp only [ev]; rw [Nat.mul_comm (h n), Nat.add_comm (ev w n h)]
    rw [e f, e g, e (fun i => f i &&& g i), ← ih]
    apply Nat.eq_of_testBit_eq
    intro j
    rw [Nat.testBit_and, Nat.testBit_two_pow_mul_add _ lf, Nat.testBit_two_pow_mul_add _ lg,
      Nat.testBit_two_pow_mul_add _ lfg]
    by_cases hj : j < w * n
    · simp [hj, Nat.testBit_and]
    · simp [hj, Nat.testBit_and]

/-- Blocks of `m` slots: one entry per block, times a number of `m` slots. -/
theorem ev_kron (w m : Nat) (hm : 0 < m) (g c : Nat → Nat) : ∀ n : Nat,
    ev w (m * n) (fun i => g (i / m) * c (i % m)) = ev (w * m) n g * ev w m c
  | 0 => by simp [ev]
  | n + 1 => by
    rw [Nat.mul_add, Nat.mul_one, ev_append w (m * n) _ m, ev_kron w m hm g c n]
    have hblock : ev w m (fun j => g ((m * n + j) / m) * c ((m * n + j) % m)) = g n * ev w m c := by
      rw [ev_mul_left]
      apply ev_congr
      intro j hj
      rw [Nat.mul_add_div hm, Nat.div_eq_of_lt hj, Nat.add_zero, Nat.mul_add_mod, Nat.mod_eq_of_lt hj]
    rw [hblock]
    simp only [ev]
    rw [show w * (m * n) = w * m * n from (Nat.mul_assoc w m n).symm, Nat.add_mul,
      Nat.mul_left_comm (2 ^ (w * m * n)) (g n), Nat.mul_assoc (g n)]

/-- `pack` is `ev` of the list's entries. -/
theorem pack_ev (w : Nat) : ∀ l : List Nat, pack w l = ev w l.length (fun i => entN l i)
  | [] => rfl
  | x :: xs => by
    simp only [pack, List.length]
    rw [ev_cons, pack_ev w xs, Nat.shiftLeft_eq, Nat.mul_comm (ev w xs.length _)]
    rfl

theorem pack_ones (w n : Nat) : pack w (List.replicate n 1) = ev w n (fun _ => 1) := by
  rw [pack_ev, length_replicate']
  exact ev_congr _ _ _ _ (fun i hi => entN_replicate 1 n i hi)

/-- A block whose slot 0 alone holds 1 is 1. -/
theorem ev_e0 (w m : Nat) : ev w (1 + m) (fun j => if j = 0 then 1 else 0) = 1 := by
  rw [ev_zero_tail w 1 m (fun j => if j = 0 then 1 else 0)
    (fun j _ => if_neg (show ¬(1 + j = 0) by omega))]
  simp [ev]

/-! ### Packing the tables -/

theorem addRow_spec (f : Nat → Nat) (sh : Nat) : ∀ (row : List Int) (accs : List Nat),
    row.length = accs.length →
    (addRow f sh row accs).length = accs.length ∧
    ∀ k, k < accs.length → entN (addRow f sh row accs) k = entN accs k + f (offNat (ent row k)) * 2 ^ sh
  | [], [], _ => ⟨rfl, fun _ hk => absurd hk (Nat.not_lt_zero _)⟩
  | [], _ :: _, h => by simp at h
  | _ :: _, [], h => by simp at h
  | x :: xs, acc :: accs, h => by
    have ih := addRow_spec f sh xs accs (by simp only [List.length] at h; omega)
    refine ⟨by simp only [addRow, List.length]; rw [ih.1], fun k hk => ?_⟩
    cases k with
    | zero => simp only [addRow, entN, ent]; rw [Nat.shiftLeft_eq]
    | succ k => exact ih.2 k (by simp only [List.length] at hk; omega)

theorem packCols_spec (f : Nat → Nat) (w : Nat) : ∀ (rows : List (List Int)) (b : Nat) (accs : List Nat),
    (∀ j, j < rows.length → (nth rows j).length = accs.length) →
    (packCols f w rows b accs).length = accs.length ∧
    ∀ k, k < accs.length → entN (packCols f w rows b accs) k =
      entN accs k + 2 ^ (w * b) * ev w rows.length (fun j => f (offNat (ent (nth rows j) k)))
  | [], _, _, _ => ⟨rfl, fun _ _ => by simp [packCols, ev]⟩
  | row :: rows, b, accs, h => by
    have hrow : row.length = accs.length := h 0 (by simp)
    have ar := addRow_spec f (w * b) row accs hrow
    have ih := packCols_spec f w rows (b + 1) (addRow f (w * b) row accs)
      (fun j hj => by rw [ar.1]; exact h (j + 1) (by simp only [List.length]; omega))
    refine ⟨by simp only [packCols]; rw [ih.1, ar.1], fun k hk => ?_⟩
    have e1 : 2 ^ (w * (b + 1)) = 2 ^ (w * b) * 2 ^ w := by rw [Nat.mul_add, Nat.mul_one, Nat.pow_add]
    simp only [packCols, List.length]
    rw [ih.2 k (by rw [ar.1]; exact hk), ar.2 k hk, ev_cons, e1, Nat.mul_add (2 ^ (w * b)),
      Nat.mul_assoc (2 ^ (w * b)) (2 ^ w)]
    simp only [nth]
    rw [Nat.mul_comm (f (offNat (ent row k)))]
    omega

/-! ### The tables' entries -/

-- `X a k`: row `a` of a table (Network.lean's `nth`), entry `k`; `Y`, `Wt` likewise.
def X (a k : Nat) : Int := ent (nth Net.E1 a) k
def Y (b k : Nat) : Int := ent (nth Net.E2 b) k
def Wt (c k : Nat) : Int := ent (nth Net.W2 c) k

def u (a k : Nat) : Nat := negOffNat (X a k)
def v (b k : Nat) : Nat := offNat (Y b k)
def wo (c k : Nat) : Nat := offNat (Wt c k)

/-- Hidden neuron `k` on (a, b) as the packed route computes it: (u - v)², which is (x + y)². -/
def hN (a b k : Nat) : Nat := u a k * u a k + v b k * v b k - 2 * u a k * v b k

/-- Class `c`'s score with the read-out offset: score + 127 · Σ hidden. -/
def sN (a b c : Nat) : Nat := nsum 14 (fun k => hN a b k * wo c k)

theorem rowBounded_spec : ∀ (r : List Int) (n : Nat), rowBounded r n = true →
    r.length = n ∧ ∀ k, k < n → -127 ≤ ent r k ∧ ent r k ≤ 127
  | [], n, h => by
    simp only [rowBounded, beq_iff_eq] at h
    subst h
    exact ⟨rfl, fun _ hk => absurd hk (Nat.not_lt_zero _)⟩
  | _ :: _, 0, h => by simp [rowBounded] at h
  | x :: xs, n + 1, h => by
    simp only [rowBounded, Bool.and_eq_true, decide_eq_true_eq] at h
    have ih := rowBounded_spec xs n h.2
    refine ⟨by simp only [List.length]; rw [ih.1], fun k hk => ?_⟩
    cases k with
    | zero => exact h.1
    | succ k => exact ih.2 k (by omega)

theorem tableOK_spec : ∀ (M : List (List Int)), tableOK M = true → ∀ a, a < M.length →
    rowBounded (nth M a) 14 = true
  | [], _, _, ha => absurd ha (Nat.not_lt_zero _)
  | r :: rs, h, a, ha => by
    simp only [tableOK, Bool.and_eq_true] at h
    cases a with
    | zero => exact h.1
    | succ a => exact tableOK_spec rs h.2 a (by simp only [List.length] at ha; omega)

/-- What `allOK = true` says, one fact per field. -/
structure Facts : Prop where
  e1 : ∀ a, a < 109 → (nth Net.E1 a).length = 14 ∧ ∀ k, k < 14 → -127 ≤ X a k ∧ X a k ≤ 127
  e2 : ∀ b, b < 109 → (nth Net.E2 b).length = 14 ∧ ∀ k, k < 14 → -127 ≤ Y b k ∧ Y b k ≤ 127
  w2 : ∀ c, c < 109 → (nth Net.W2 c).length = 14 ∧ ∀ k, k < 14 → -127 ≤ Wt c k ∧ Wt c k ≤ 127
  len1 : Net.E1.length = 109
  len2 : Net.E2.length = 109
  len3 : Net.W2.length = 109
  rows : allRows Net.E1 0 = true

theorem facts : Facts := by
  have h := allOK_eq
  simp only [allOK, Bool.and_eq_true, beq_iff_eq] at h
  obtain ⟨⟨⟨⟨t1, t2⟩, t3⟩, ⟨⟨l1, l2⟩, l3⟩⟩, hr⟩ := h
  exact {
    e1 := fun a ha => rowBounded_spec _ 14 (tableOK_spec _ t1 a (by omega))
    e2 := fun b hb => rowBounded_spec _ 14 (tableOK_spec _ t2 b (by omega))
    w2 := fun c hc => rowBounded_spec _ 14 (tableOK_spec _ t3 c (by omega))
    len1 := l1, len2 := l2, len3 := l3, rows := hr }

theorem X_bound (a k : Nat) (ha : a < 109) (hk : k < 14) : -127 ≤ X a k ∧ X a k ≤ 127 :=
  (facts.e1 a ha).2 k hk
theorem Y_bound (b k : Nat) (hb : b < 109) (hk : k < 14) : -127 ≤ Y b k ∧ Y b k ≤ 127 :=
  (facts.e2 b hb).2 k hk
theorem W_bound (c k : Nat) (hc : c < 109) (hk : k < 14) : -127 ≤ Wt c k ∧ Wt c k ≤ 127 :=
  (facts.w2 c hc).2 k hk

theorem offNat_cast (x : Int) (h : -127 ≤ x) : (offNat x : Int) = x + 127 := by
  unfold offNat; exact Int.toNat_of_nonneg (by omega)
theorem negOffNat_cast (x : Int) (h : x ≤ 127) : (negOffNat x : Int) = 127 - x := by
  unfold negOffNat; exact Int.toNat_of_nonneg (by omega)

theorem offNat_le (x : Int) (h1 : -127 ≤ x) (h2 : x ≤ 127) : offNat x ≤ 254 := by
  have := offNat_cast x h1; omega
theorem negOffNat_le (x : Int) (h1 : -127 ≤ x) (h2 : x ≤ 127) : negOffNat x ≤ 254 := by
  have := negOffNat_cast x h2; omega

/-! ### Squares without `ring` -/

theorem two_mul_le (p q : Nat) : 2 * p * q ≤ p * p + q * q := by
  rcases Nat.le_total p q with h | h
  · obtain ⟨d, rfl⟩ := Nat.exists_eq_add_of_le h
    have e1 : 2 * p * (p + d) = 2 * (p * p) + 2 * (p * d) := by
      rw [Nat.mul_add, Nat.mul_assoc, Nat.mul_assoc]
    have e2 : (p + d) * (p + d) = p * p + 2 * (p * d) + d * d := by
      rw [Nat.add_mul, Nat.mul_add, Nat.mul_add, Nat.mul_comm d p]; omega
    rw [e1, e2]; omega
  · obtain ⟨d, rfl⟩ := Nat.exists_eq_add_of_le h
    have e1 : 2 * (q + d) * q = 2 * (q * q) + 2 * (q * d) := by
      rw [Nat.mul_assoc, Nat.add_mul, Nat.mul_add, Nat.mul_comm d q]
    have e2 : (q + d) * (q + d) = q * q + 2 * (q * d) + d * d := by
      rw [Nat.add_mul, Nat.mul_add, Nat.mul_add, Nat.mul_comm d q]; omega
    rw [e1, e2]; omega

theorem sq_expand (p q : Int) : (p - q) * (p - q) = p * p + q * q - 2 * (p * q) := by
  rw [Int.sub_mul, Int.mul_sub, Int.mul_sub, Int.mul_comm q p]; omega

/-- The packed hidden neuron is the network's `(x + y) * (x + y)`. -/
theorem hN_cast (a b k : Nat) (ha : a < 109) (hb : b < 109) (hk : k < 14) :
    (hN a b k : Int) = (X a k + Y b k) * (X a k + Y b k) := by
  have hx := X_bound a k ha hk
  have hy := Y_bound b k hb hk
  have hu : (u a k : Int) = 127 - X a k := negOffNat_cast _ hx.2
  have hv : (v b k : Int) = Y b k + 127 := offNat_cast _ hy.1
  have hle := two_mul_le (u a k) (v b k)
  have e : ((u a k * u a k + v b k * v b k - 2 * u a k * v b k : Nat) : Int)
      = ((u a k : Int) - v b k) * ((u a k : Int) - v b k) := by
    rw [sq_expand, Int.ofNat_sub hle]
    push_cast
    rw [Int.mul_assoc]
  unfold hN
  rw [e, hu, hv]
  have h3 : (127 - X a k - (Y b k + 127)) = -(X a k + Y b k) := by omega
  rw [h3, Int.neg_mul_neg]

theorem hN_le (a b k : Nat) (ha : a < 109) (hb : b < 109) (hk : k < 14) : hN a b k ≤ 254 * 254 := by
  have hx := X_bound a k ha hk
  have hy := Y_bound b k hb hk
  have h := hN_cast a b k ha hb hk
  have hz : (X a k + Y b k).natAbs ≤ 254 := by omega
  have hsq : (X a k + Y b k).natAbs * (X a k + Y b k).natAbs ≤ 254 * 254 := Nat.mul_le_mul hz hz
  -- `Int.natAbs_mul_self : ↑(natAbs a * natAbs a) = a * a`: both sides' casts meet `h`.
  have e : (((X a k + Y b k).natAbs * (X a k + Y b k).natAbs : Nat) : Int) = (hN a b k : Int) := by
    rw [Int.natAbs_mul_self, h]
  have e' : (X a k + Y b k).natAbs * (X a k + Y b k).natAbs = hN a b k := Int.ofNat_inj.mp e
  omega

theorem nsum_le (M : Nat) : ∀ (n : Nat) (f : Nat → Nat), (∀ k, k < n → f k ≤ M) → nsum n f ≤ n * M
  | 0, _, _ => by simp [nsum]
  | n + 1, f, h => by
    simp only [nsum]
    have h1 := nsum_le M n (fun k => f (k + 1)) (fun k hk => h (k + 1) (by omega))
    have h2 := h 0 (by omega)
    rw [Nat.add_mul, Nat.one_mul]; omega

/-- Every slot value is below 2 ^ 31 (14 · 254² · 254 < 2 ^ 31). -/
theorem sN_lt (a b c : Nat) (ha : a < 109) (hb : b < 109) (hc : c < 109) : sN a b c < 2 ^ 31 := by
  have h : sN a b c ≤ 14 * (254 * 254 * 254) := by
    apply nsum_le
    intro k hk
    have h1 := hN_le a b k ha hb hk
    have h2 : wo c k ≤ 254 := offNat_le _ (W_bound c k hc hk).1 (W_bound c k hc hk).2
    exact Nat.mul_le_mul h1 h2
  have : 14 * (254 * 254 * 254) < 2 ^ 31 := by decide
  omega

/-! ### The packed constants, slot by slot -/

theorem entN_Ys (k : Nat) (hk : k < 14) : entN Ys k = ev blockW 109 (fun b => v b k) := by
  have sp := packCols_spec (fun x => x) blockW Net.E2 0 (List.replicate 14 0)
    (fun j hj => by rw [length_replicate']; exact (facts.e2 j (by rw [facts.len2] at hj; exact hj)).1)
  unfold Ys
  rw [sp.2 k (by rw [length_replicate']; exact hk), entN_replicate 0 14 k hk, facts.len2]
  simp only [Nat.mul_zero, Nat.pow_zero, Nat.one_mul, Nat.zero_add]
  rfl

theorem entN_Y2s (k : Nat) (hk : k < 14) : entN Y2s k = ev blockW 109 (fun b => v b k * v b k) := by
  have sp := packCols_spec (fun x => x * x) blockW Net.E2 0 (List.replicate 14 0)
    (fun j hj => by rw [length_replicate']; exact (facts.e2 j (by rw [facts.len2] at hj; exact hj)).1)
  unfold Y2s
  rw [sp.2 k (by rw [length_replicate']; exact hk), entN_replicate 0 14 k hk, facts.len2]
  simp only [Nat.mul_zero, Nat.pow_zero, Nat.one_mul, Nat.zero_add]
  rfl

theorem entN_Cs (k : Nat) (hk : k < 14) : entN Cs k = ev 32 109 (fun c => wo c k) := by
  have sp := packCols_spec (fun x => x) 32 Net.W2 0 (List.replicate 14 0)
    (fun j hj => by rw [length_replicate']; exact (facts.w2 j (by rw [facts.len3] at hj; exact hj)).1)
  unfold Cs
  rw [sp.2 k (by rw [length_replicate']; exact hk), entN_replicate 0 14 k hk, facts.len3]
  simp only [Nat.mul_zero, Nat.pow_zero, Nat.one_mul, Nat.zero_add]
  rfl

theorem length_Cs : Cs.length = 14 := by
  have sp := packCols_spec (fun x => x) 32 Net.W2 0 (List.replicate 14 0)
    (fun j hj => by rw [length_replicate']; exact (facts.w2 j (by rw [facts.len3] at hj; exact hj)).1)
  unfold Cs; rw [sp.1, length_replicate']

theorem wo_lt (c k : Nat) (hc : c < 109) (hk : k < 14) : wo c k < 2 ^ 32 := by
  have := offNat_le _ (W_bound c k hc hk).1 (W_bound c k hc hk).2
  unfold wo; omega

theorem alg3 (C A : Nat) : C + (C * A + C * (A * A)) = C + A * (C + A * C) := by
  rw [Nat.mul_add A C (A * C), Nat.mul_comm C A, Nat.mul_comm C (A * A), Nat.mul_assoc A A C]

/-- The read-out column three times over: slot `j` holds class `j % 109`. -/
theorem entN_C3s (k : Nat) (hk : k < 14) :
    entN C3s k = ev 32 (109 + (109 + 109)) (fun j => wo (j % 109) k) := by
  have c0 : ev 32 109 (fun j => wo (j % 109) k) = entN Cs k := by
    rw [entN_Cs k hk]; exact ev_congr _ _ _ _ (fun j hj => by rw [Nat.mod_eq_of_lt hj])
  have c1 : ev 32 109 (fun j => wo ((109 + j) % 109) k) = entN Cs k := by
    rw [entN_Cs k hk]
    exact ev_congr _ _ _ _ (fun j hj => by rw [show (109 + j) % 109 = j from by omega])
  have c2 : ev 32 109 (fun j => wo ((109 + (109 + j)) % 109) k) = entN Cs k := by
    rw [entN_Cs k hk]
    exact ev_congr _ _ _ _ (fun j hj => by rw [show (109 + (109 + j)) % 109 = j from by omega])
  rw [ev_append 32 109 _ (109 + 109), ev_append 32 109 _ 109, c0, c1, c2]
  unfold C3s
  rw [entN_map _ Cs k (by rw [length_Cs]; exact hk), Nat.shiftLeft_eq, Nat.shiftLeft_eq, Nat.pow_add]
  exact alg3 _ _

/-- Rotating the tripled column by `a` slots gives class `(a + j) % 109` in slot `j`. -/
theorem rot_C3 (a k : Nat) (ha : a < 109) (hk : k < 14) :
    (entN C3s k >>> (32 * a)) % BLOCKMOD = ev 32 218 (fun j => wo ((a + j) % 109) k) := by
  have hf : ∀ j, wo (j % 109) k < 2 ^ 32 := fun j => wo_lt _ k (Nat.mod_lt _ (by decide)) hk
  -- `length_Cs` is needed by `entN_C3s` only
  rw [entN_C3s k hk, Nat.shiftRight_eq_div_pow]
  obtain ⟨r, hr⟩ : ∃ r, 109 + (109 + 109) = a + (218 + r) := ⟨109 - a, by omega⟩
  rw [hr, ev_append 32 a _ (218 + r), Nat.add_comm (ev 32 a _),
    Nat.mul_add_div (Nat.two_pow_pos _), Nat.div_eq_of_lt (ev_lt 32 a _ (fun j _ => hf j)), Nat.add_zero,
    ev_append 32 218 _ r, Nat.add_comm (ev 32 218 _)]
  unfold BLOCKMOD blockW
  rw [Nat.mul_add_mod, Nat.mod_eq_of_lt (ev_lt 32 218 _ (fun j _ => hf (a + j)))]

/-- The hidden layer of row `a`, column `k`, one pair per block. -/
theorem H_ev (a k : Nat) (hk : k < 14) :
    u a k * u a k * ONE + entN Y2s k - 2 * u a k * entN Ys k = ev blockW 109 (fun b => hN a b k) := by
  have e1 : u a k * u a k * ONE = ev blockW 109 (fun _ => u a k * u a k) := by
    unfold ONE; rw [pack_ones, ev_mul_left]; exact ev_congr _ _ _ _ (fun _ _ => Nat.mul_one _)
  have e2 : 2 * u a k * entN Ys k = ev blockW 109 (fun b => 2 * u a k * v b k) := by
    rw [entN_Ys k hk, ev_mul_left]
  rw [e1, e2, entN_Y2s k hk, ev_add,
    ev_sub blockW 109 (fun b => u a k * u a k + v b k * v b k) (fun b => 2 * u a k * v b k)
      (fun b _ => two_mul_le (u a k) (v b k))]
  rfl

/-- Column `k`'s term of row `a`: slot `218 b + j` holds `hN a b k * wo ((a + j) % 109) k`. -/
theorem term_ev (a k : Nat) (ha : a < 109) (hk : k < 14) :
    term (32 * a) (X a k) (entN Ys k) (entN Y2s k) (entN C3s k) =
      ev 32 (218 * 109) (fun i => hN a (i / 218) k * wo ((a + i % 218) % 109) k) := by
  unfold term
  rw [show negOffNat (X a k) = u a k from rfl, H_ev a k hk, rot_C3 a k ha hk]
  exact (ev_kron 32 218 (by decide) (fun b => hN a b k) (fun j => wo ((a + j) % 109) k) 109).symm

/-- A row's number, all columns summed. -/
theorem rowSum_ev (rot N : Nat) (T : Nat → Nat → Nat) : ∀ (xs : List Int) (ys y2s cs : List Nat),
    xs.length ≤ ys.length → xs.length ≤ y2s.length → xs.length ≤ cs.length →
    (∀ k, k < xs.length → term rot (ent xs k) (entN ys k) (entN y2s k) (entN cs k) = ev 32 N (T k)) →
    rowSum rot xs ys y2s cs = ev 32 N (fun i => nsum xs.length (fun k => T k i))
  | [], _, _, _, _, _, _, _ => by
    show 0 = ev 32 N (fun _ => 0)
    rw [ev_zero_fn]
  | _ :: _, [], _, _, h1, _, _, _ => by simp at h1
  | _ :: _, _ :: _, [], _, _, h2, _, _ => by simp at h2
  | _ :: _, _ :: _, _ :: _, [], _, _, h3, _ => by simp at h3
  | x :: xs, y :: ys, y2 :: y2s, c :: cs, h1, h2, h3, h => by
    have h0 : term rot x y y2 c = ev 32 N (T 0) := h 0 (by simp)
    have ih := rowSum_ev rot N (fun k => T (k + 1)) xs ys y2s cs
      (by simp only [List.length] at h1; omega) (by simp only [List.length] at h2; omega)
      (by simp only [List.length] at h3; omega)
      (fun k hk => h (k + 1) (by simp only [List.length]; omega))
    simp only [rowSum, List.length]
    rw [h0, ih, ev_add]
    rfl

theorem length_Ys : Ys.length = 14 := by
  have sp := packCols_spec (fun x => x) blockW Net.E2 0 (List.replicate 14 0)
    (fun j hj => by rw [length_replicate']; exact (facts.e2 j (by rw [facts.len2] at hj; exact hj)).1)
  unfold Ys; rw [sp.1, length_replicate']

theorem length_Y2s : Y2s.length = 14 := by
  have sp := packCols_spec (fun x => x * x) blockW Net.E2 0 (List.replicate 14 0)
    (fun j hj => by rw [length_replicate']; exact (facts.e2 j (by rw [facts.len2] at hj; exact hj)).1)
  unfold Y2s; rw [sp.1, length_replicate']

/-- Row `a`'s number: slot `218 b + j` holds class `(a + j) % 109`'s score of the pair (a, b). -/
theorem S_ev (a : Nat) (ha : a < 109) :
    rowSum (32 * a) (nth Net.E1 a) Ys Y2s C3s = ev 32 (218 * 109) (fun i => sN a (i / 218) ((a + i % 218) % 109)) := by
  have hl := (facts.e1 a ha).1
  rw [rowSum_ev (32 * a) (218 * 109) (fun k i => hN a (i / 218) k * wo ((a + i % 218) % 109) k)
    (nth Net.E1 a) Ys Y2s C3s (Nat.le_of_eq (by rw [hl, length_Ys]))
    (Nat.le_of_eq (by rw [hl, length_Y2s])) (Nat.le_of_eq (by unfold C3s; rw [hl, length_map', length_Cs]))
    (fun k hk => term_ev a k ha (by rw [hl] at hk; exact hk)), hl]
  rfl

/-! ### The check, slot by slot

Slots are indexed in blocks of 219: slot `i` has block `i / 219` and offset `i % 219`. A window
slot (offset below 109) of block `b` is slot `218 b + (b + offset)` of the row's number, which
holds class `(a + b + offset) % 109` of the pair (a, b); the diagonal slot (offset 0) holds the
target `(a + b) % 109`. -/

def isDiag (i : Nat) : Nat := if i % 219 = 0 then 1 else 0
def isWin (i : Nat) : Nat := if i % 219 < 109 then 1 else 0
def onesP (j : Nat) : Nat := if j < 109 then 1 else 0

/-- Slot `i` of the row's number, extended by empty slots to 219 · 109. -/
def sE (a i : Nat) : Nat := if i < 218 * 109 then sN a (i / 218) ((a + i % 218) % 109) else 0

theorem sE_lt (a i : Nat) (ha : a < 109) : sE a i < 2 ^ 31 := by
  unfold sE
  split
  · exact sN_lt _ _ _ ha (Nat.div_lt_of_lt_mul (by assumption)) (Nat.mod_lt _ (by decide))
  · exact Nat.two_pow_pos _

theorem S_ev' (a : Nat) (ha : a < 109) :
    rowSum (32 * a) (nth Net.E1 a) Ys Y2s C3s = ev 32 (219 * 109) (sE a) := by
  rw [S_ev a ha, show 219 * 109 = 218 * 109 + 109 from by decide,
    ev_zero_tail 32 (218 * 109) 109 (sE a)
      (fun j _ => by unfold sE; rw [if_neg (show ¬(218 * 109 + j < 218 * 109) by omega)])]
  exact ev_congr _ _ _ _ (fun i hi => by unfold sE; rw [if_pos hi])

theorem e0_219 : ev 32 219 (fun j => if j = 0 then 1 else 0) = 1 := ev_e0 32 218

theorem DIAG_ev : DIAG = ev 32 (219 * 109) isDiag := by
  have k := ev_kron 32 219 (by decide) (fun _ => 1) (fun j => if j = 0 then 1 else 0) 109
  rw [e0_219, Nat.mul_one] at k
  unfold DIAG
  rw [pack_ones, ← k]
  exact ev_congr _ _ _ _ (fun i _ => by unfold isDiag; simp)

theorem ONEP_ev219 : ONEP = ev 32 219 onesP := by
  unfold ONEP
  rw [pack_ones, show (219 : Nat) = 109 + 110 from rfl,
    ev_zero_tail 32 109 110 onesP
      (fun j _ => by unfold onesP; rw [if_neg (show ¬(109 + j < 109) by omega)])]
  exact ev_congr _ _ _ _ (fun i hi => by unfold onesP; rw [if_pos hi])

theorem WIN_ev : WIN = ev 32 (219 * 109) isWin := by
  unfold WIN DIAG
  rw [pack_ones, ONEP_ev219, ← ev_kron 32 219 (by decide) (fun _ => 1) onesP 109]
  exact ev_congr _ _ _ _ (fun i _ => by unfold isWin onesP; simp)

theorem isDiag_le (i : Nat) : isDiag i ≤ 1 := by unfold isDiag; split <;> omega
theorem isWin_le (i : Nat) : isWin i ≤ 1 := by unfold isWin; split <;> omega

/-- `x &&& (2 ^ 32 - 1) · m` for `m` 0 or 1: `x` or 0. -/
theorem land_mask (x m : Nat) (hx : x < 2 ^ 32) (hm : m ≤ 1) : x &&& (2 ^ 32 - 1) * m = m * x := by
  rcases (show m = 0 ∨ m = 1 by omega) with h | h
  · subst h; rw [Nat.mul_zero, Nat.zero_mul, Nat.and_zero]
  · subst h; rw [Nat.mul_one, Nat.one_mul, land_low x 32 hx]

theorem mask_lt (m : Nat) (hm : m ≤ 1) : (2 ^ 32 - 1) * m < 2 ^ 32 := by
  have h : (2 ^ 32 - 1) * m ≤ (2 ^ 32 - 1) * 1 := Nat.mul_le_mul (Nat.le_refl _) hm
  have : (2 : Nat) ^ 32 = 4294967296 := by decide
  omega

theorem sE_lt32 (a i : Nat) (ha : a < 109) : sE a i < 2 ^ 32 := by
  have h := sE_lt a i ha
  have : (2 : Nat) ^ 32 = 2 * 2 ^ 31 := by decide
  omega

/-- The target of block `b`, broadcast over the block's window. -/
def tgt (a i : Nat) : Nat := sE a (219 * (i / 219)) * onesP (i % 219)

/-- The row's number masked to its diagonal: one entry per block of 219, the block's target. -/
theorem SD_ev (a : Nat) (ha : a < 109) :
    rowSum (32 * a) (nth Net.E1 a) Ys Y2s C3s &&& MASKD = ev (32 * 219) 109 (fun b => sE a (219 * b)) := by
  have hm : MASKD = ev 32 (219 * 109) (fun i => (2 ^ 32 - 1) * isDiag i) := by
    unfold MASKD FULL; rw [DIAG_ev, Nat.mul_comm (ev 32 (219 * 109) isDiag), ev_mul_left]
  rw [S_ev' a ha, hm,
    ev_land 32 _ _ _ (fun i _ => sE_lt32 a i ha) (fun i _ => mask_lt _ (isDiag_le i))]
  have k := ev_kron 32 219 (by decide) (fun b => sE a (219 * b)) (fun j => if j = 0 then 1 else 0) 109
  rw [e0_219, Nat.mul_one] at k
  rw [← k]
  apply ev_congr
  intro i _
  rw [land_mask _ _ (sE_lt32 a i ha) (isDiag_le i)]
  unfold isDiag
  by_cases h : i % 219 = 0
  · have e : 219 * (i / 219) = i := by have := Nat.div_add_mod i 219; omega
    simp [h, e]
  · simp [h]

theorem T_ONEP (a : Nat) (ha : a < 109) :
    (rowSum (32 * a) (nth Net.E1 a) Ys Y2s C3s &&& MASKD) * ONEP = ev 32 (219 * 109) (tgt a) := by
  rw [SD_ev a ha, ONEP_ev219]
  exact (ev_kron 32 219 (by decide) (fun b => sE a (219 * b)) onesP 109).symm

theorem KC_ev : KC = ev 32 (219 * 109) (fun i => (2 ^ 31 - 1) * isWin i + isDiag i) := by
  unfold KC HALF
  rw [WIN_ev, DIAG_ev, Nat.mul_comm (ev 32 (219 * 109) isWin), ev_mul_left, ev_add]

theorem SW_ev (a : Nat) (ha : a < 109) :
    rowSum (32 * a) (nth Net.E1 a) Ys Y2s C3s &&& MASKW = ev 32 (219 * 109) (fun i => isWin i * sE a i) := by
  have hm : MASKW = ev 32 (219 * 109) (fun i => (2 ^ 32 - 1) * isWin i) := by
    unfold MASKW FULL; rw [WIN_ev, Nat.mul_comm (ev 32 (219 * 109) isWin), ev_mul_left]
  rw [S_ev' a ha, hm,
    ev_land 32 _ _ _ (fun i _ => sE_lt32 a i ha) (fun i _ => mask_lt _ (isWin_le i))]
  exact ev_congr _ _ _ _ (fun i _ => land_mask _ _ (sE_lt32 a i ha) (isWin_le i))

theorem HI_ev : HI = ev 32 (219 * 109) (fun i => 2 ^ 31 * isWin i) := by
  unfold HI HALF
  rw [WIN_ev, Nat.mul_comm (ev 32 (219 * 109) isWin), ev_mul_left]

/-- Slot `i` of `Z`. -/
def zs (a i : Nat) : Nat := tgt a i + ((2 ^ 31 - 1) * isWin i + isDiag i) - isWin i * sE a i

theorem tgt_lt (a i : Nat) (ha : a < 109) : tgt a i < 2 ^ 31 := by
  unfold tgt onesP
  split
  · rw [Nat.mul_one]; exact sE_lt a _ ha
  · rw [Nat.mul_zero]; exact Nat.two_pow_pos _

theorem Z_ev (a : Nat) (ha : a < 109) :
    (rowSum (32 * a) (nth Net.E1 a) Ys Y2s C3s &&& MASKD) * ONEP + KC
      - (rowSum (32 * a) (nth Net.E1 a) Ys Y2s C3s &&& MASKW) = ev 32 (219 * 109) (zs a) := by
  rw [T_ONEP a ha, KC_ev, SW_ev a ha, ev_add, ev_sub]
  · rfl
  · intro i _
    show isWin i * sE a i ≤ tgt a i + ((2 ^ 31 - 1) * isWin i + isDiag i)
    have h1 := sE_lt a i ha
    rcases (show isWin i = 0 ∨ isWin i = 1 by have := isWin_le i; omega) with h | h
    · rw [h, Nat.zero_mul]; exact Nat.zero_le _
    · rw [h, Nat.one_mul, Nat.mul_one]; have := Nat.two_pow_pos 31; omega

theorem zs_lt (a i : Nat) (ha : a < 109) : zs a i < 2 ^ 32 := by
  have h1 := tgt_lt a i ha
  have h2 := isWin_le i
  have h3 := isDiag_le i
  have h4 : (2 ^ 31 - 1) * isWin i ≤ (2 ^ 31 - 1) * 1 := Nat.mul_le_mul (Nat.le_refl _) h2
  have h5 : (2 : Nat) ^ 32 = 2 * 2 ^ 31 := by decide
  unfold zs
  omega

theorem hi_lt (j : Nat) : 2 ^ 31 * isWin j < 2 ^ 32 := by
  have h := isWin_le j
  have h1 : 2 ^ 31 * isWin j ≤ 2 ^ 31 * 1 := Nat.mul_le_mul (Nat.le_refl _) h
  have h2 : (2 : Nat) ^ 32 = 2 * 2 ^ 31 := by decide
  have h3 := Nat.two_pow_pos 31
  omega

/-- What a passing row says: every window slot of `Z` has its top bit set. -/
theorem rowOK_spec (a : Nat) (ha : a < 109) (h : rowOK a (nth Net.E1 a) = true) (i : Nat)
    (hi : i < 219 * 109) (hw : i % 219 < 109) : 2 ^ 31 ≤ zs a i := by
  simp only [rowOK, beq_iff_eq] at h
  rw [Z_ev a ha, HI_ev, ev_land 32 _ _ _ (fun j _ => zs_lt a j ha) (fun j _ => hi_lt j)] at h
  have hd := ev_eq_of_digits 32 (219 * 109) (fun j => zs a j &&& 2 ^ 31 * isWin j)
    (fun j => 2 ^ 31 * isWin j) (fun j _ => Nat.and_lt_two_pow (zs a j) (hi_lt j)) (fun j _ => hi_lt j) h i hi
  have hd' : zs a i &&& 2 ^ 31 * isWin i = 2 ^ 31 * isWin i := hd
  have hwin : isWin i = 1 := by unfold isWin; rw [if_pos hw]
  rw [hwin, Nat.mul_one] at hd'
  apply Nat.ge_two_pow_of_testBit
  have hb : Nat.testBit (zs a i &&& 2 ^ 31) 31 = Nat.testBit (2 ^ 31) 31 := by rw [hd']
  rw [Nat.testBit_and, Nat.testBit_two_pow_self, Bool.and_true] at hb
  exact hb

/-- The passing row's meaning, in the network's terms. -/
theorem row_wins (a : Nat) (ha : a < 109) (h : rowOK a (nth Net.E1 a) = true) (b : Nat) (hb : b < 109)
    (c : Nat) (hc : c < 109) (hne : c ≠ (a + b) % 109) : sN a b c < sN a b ((a + b) % 109) := by
  -- the window slot of class c in block b
  obtain ⟨off, hoffd⟩ : ∃ off, off = (c + 109 - (a + b) % 109) % 109 := ⟨_, rfl⟩
  have hoff : off < 109 := by omega
  have hoff0 : off ≠ 0 := by omega
  have hcls : (a + (b + off)) % 109 = c := by omega
  have hz := rowOK_spec a ha h (219 * b + off) (by omega) (by omega)
  have hdiv : (219 * b + off) / 219 = b := by omega
  have hmod : (219 * b + off) % 219 = off := by omega
  have hS : sE a (219 * b + off) = sN a b c := by
    unfold sE
    rw [if_pos (show 219 * b + off < 218 * 109 by omega), show (219 * b + off) / 218 = b from by omega,
      show (219 * b + off) % 218 = b + off from by omega, hcls]
  have hT : tgt a (219 * b + off) = sN a b ((a + b) % 109) := by
    unfold tgt onesP
    rw [hdiv, hmod, if_pos hoff, Nat.mul_one]
    unfold sE
    rw [if_pos (show 219 * b < 218 * 109 by omega), show 219 * b / 218 = b from by omega,
      show 219 * b % 218 = b from by omega]
  have hW : isWin (219 * b + off) = 1 := by unfold isWin; rw [hmod, if_pos hoff]
  have hD : isDiag (219 * b + off) = 0 := by unfold isDiag; rw [hmod, if_neg hoff0]
  unfold zs at hz
  rw [hS, hT, hW, hD, Nat.mul_one, Nat.one_mul, Nat.add_zero] at hz
  have h1 := sN_lt a b c ha hb hc
  have h2 := Nat.two_pow_pos 31
  omega

theorem allRows_spec : ∀ (rows : List (List Int)) (a0 : Nat), allRows rows a0 = true →
    ∀ j, j < rows.length → rowOK (a0 + j) (nth rows j) = true
  | [], _, _, _, hj => absurd hj (Nat.not_lt_zero _)
  | row :: rows, a0, h, j, hj => by
    simp only [allRows, Bool.and_eq_true] at h
    cases j with
    | zero => exact h.1
    | succ j =>
      have := allRows_spec rows (a0 + 1) h.2 j (by simp only [List.length] at hj; omega)
      rw [show a0 + (j + 1) = a0 + 1 + j from by omega]
      exact this

theorem sN_wins (a : Nat) (ha : a < 109) (b : Nat) (hb : b < 109) (c : Nat) (hc : c < 109)
    (hne : c ≠ (a + b) % 109) : sN a b c < sN a b ((a + b) % 109) := by
  have h := allRows_spec Net.E1 0 facts.rows a (by rw [facts.len1]; exact ha)
  rw [Nat.zero_add] at h
  exact row_wins a ha h b hb c hc hne

/-! ### Back to the network -/

theorem ent_map (g : List Int → Int) : ∀ (l : List (List Int)) (c : Nat), c < l.length →
    ent (l.map g) c = g (nth l c)
  | [], _, h => absurd h (Nat.not_lt_zero _)
  | _ :: _, 0, _ => rfl
  | _ :: l, c + 1, h => ent_map g l c (by simp only [List.length] at h; omega)

theorem length_map_rows (g : List Int → Int) : ∀ l : List (List Int), (l.map g).length = l.length
  | [] => rfl
  | _ :: l => by simp only [List.map, List.length]; rw [length_map_rows g l]

theorem dot_sqSum : ∀ (n : Nat) (ws xs ys : List Int), ws.length = n → xs.length = n → ys.length = n →
    dot ws (sqSum xs ys) = isum n (fun k => ent ws k * ((ent xs k + ent ys k) * (ent xs k + ent ys k)))
  | 0, [], [], [], _, _, _ => rfl
  | n + 1, w :: ws, x :: xs, y :: ys, h1, h2, h3 => by
    simp only [sqSum, dot, isum]
    rw [dot_sqSum n ws xs ys (by simp only [List.length] at h1; omega)
      (by simp only [List.length] at h2; omega) (by simp only [List.length] at h3; omega)]
    rfl
  | 0, _ :: _, _, _, h1, _, _ => by simp at h1
  | 0, [], _ :: _, _, _, h2, _ => by simp at h2
  | 0, [], [], _ :: _, _, _, h3 => by simp at h3
  | _ + 1, [], _, _, h1, _, _ => by simp at h1
  | _ + 1, _ :: _, [], _, _, h2, _ => by simp at h2
  | _ + 1, _ :: _, _ :: _, [], _, _, h3 => by simp at h3

/-- The network's score of class `c` on (a, b). -/
def score (a b c : Nat) : Int := dot (nth Net.W2 c) (hidden Net.E1 Net.E2 a b)

/-- `sN` is the score plus a shift that is the same for every class. -/
theorem sN_cast (a b c : Nat) (ha : a < 109) (hb : b < 109) (hc : c < 109) :
    (sN a b c : Int) = score a b c + 127 * isum 14 (fun k => (X a k + Y b k) * (X a k + Y b k)) := by
  unfold score hidden sN
  rw [dot_sqSum 14 _ _ _ (facts.w2 c hc).1 (facts.e1 a ha).1 (facts.e2 b hb).1, nsum_cast,
    ← isum_mul, ← isum_add]
  apply isum_congr
  intro k hk
  show ((hN a b k * wo c k : Nat) : Int) =
    ent (nth Net.W2 c) k * ((ent (nth Net.E1 a) k + ent (nth Net.E2 b) k) *
      (ent (nth Net.E1 a) k + ent (nth Net.E2 b) k)) + 127 * ((X a k + Y b k) * (X a k + Y b k))
  have hw : (wo c k : Int) = Wt c k + 127 := offNat_cast _ (W_bound c k hc hk).1
  push_cast
  rw [hN_cast a b k ha hb hk, hw]
  show (X a k + Y b k) * (X a k + Y b k) * (Wt c k + 127) =
    Wt c k * ((X a k + Y b k) * (X a k + Y b k)) + 127 * ((X a k + Y b k) * (X a k + Y b k))
  rw [Int.mul_add ((X a k + Y b k) * (X a k + Y b k)) (Wt c k) 127,
    Int.mul_comm ((X a k + Y b k) * (X a k + Y b k)) (Wt c k),
    Int.mul_comm ((X a k + Y b k) * (X a k + Y b k)) 127]

theorem score_wins (a : Nat) (ha : a < 109) (b : Nat) (hb : b < 109) (c : Nat) (hc : c < 109)
    (hne : c ≠ (a + b) % 109) : score a b c < score a b ((a + b) % 109) := by
  have h := sN_wins a ha b hb c hc hne
  have e1 := sN_cast a b c ha hb hc
  have e2 := sN_cast a b ((a + b) % 109) ha hb (Nat.mod_lt _ (by decide))
  omega

/-- The first maximum is the unique largest entry. -/
theorem argmaxFrom_eq (L : List Int) (t : Nat) (ht : t < L.length)
    (hmax : ∀ c, c < L.length → c ≠ t → ent L c < ent L t) :
    ∀ (xs : List Int) (best : Int) (bi i : Nat),
      xs.length + i = L.length → (∀ j, j < xs.length → ent xs j = ent L (i + j)) →
      bi < i → best = ent L bi → (t < i → bi = t) →
      argmaxFrom xs best bi i = t
  | [], _, _, i, hlen, _, _, _, hti => by
    simp only [argmaxFrom]
    exact hti (by simp only [List.length] at hlen; omega)
  | x :: xs, best, bi, i, hlen, hent, hbi, hbest, hti => by
    have hlen' : xs.length + (i + 1) = L.length := by simp only [List.length] at hlen; omega
    have hx : x = ent L i := by
      have := hent 0 (by simp)
      rw [Nat.add_zero] at this
      exact this
    have hent' : ∀ j, j < xs.length → ent xs j = ent L (i + 1 + j) := fun j hj => by
      have := hent (j + 1) (by simp only [List.length]; omega)
      rw [show i + 1 + j = i + (j + 1) from by omega]
      exact this
    simp only [argmaxFrom]
    split
    · rename_i hlt
      apply argmaxFrom_eq L t ht hmax xs x i (i + 1) hlen' hent' (by omega) hx
      intro hti'
      by_cases hit : i = t
      · exact hit
      · have htlt : t < i := by omega
        have hbt := hti htlt
        have := hmax i (by omega) hit
        rw [← hx, ← hbt, ← hbest] at this
        omega
    · rename_i hnlt
      apply argmaxFrom_eq L t ht hmax xs best bi (i + 1) hlen' hent' (by omega) hbest
      intro hti'
      by_cases htlt : t < i
      · exact hti htlt
      · exfalso
        have hit : t = i := by omega
        have hbne : bi ≠ t := by omega
        have := hmax bi (by omega) hbne
        rw [← hbest, hit, ← hx] at this
        exact hnlt this

theorem argmax_eq (L : List Int) (t : Nat) (ht : t < L.length)
    (hmax : ∀ c, c < L.length → c ≠ t → ent L c < ent L t) : argmax L = t := by
  match L, ht, hmax with
  | [], ht, _ => exact absurd ht (Nat.not_lt_zero _)
  | x :: xs, ht, hmax =>
    simp only [argmax]
    apply argmaxFrom_eq (x :: xs) t ht hmax xs x 0 1 (by simp)
      (fun j _ => by rw [Nat.add_comm 1 j]; rfl) (by omega) rfl
    intro h; omega

end LeanCheckedNetwork.Packed

open LeanCheckedNetwork LeanCheckedNetwork.Packed in
theorem LeanCheckedNetwork.Net.adds_mod_109 :
    ∀ a, a < 109 → ∀ b, b < 109 → LeanCheckedNetwork.Net.answer a b = (a + b) % 109 := by
  intro a ha b hb
  show argmax (scores Net.E1 Net.E2 Net.W2 a b) = (a + b) % 109
  have hlen : (scores Net.E1 Net.E2 Net.W2 a b).length = 109 := by
    unfold scores; rw [length_map_rows, facts.len3]
  apply argmax_eq
  · rw [hlen]; exact Nat.mod_lt _ (by decide)
  · intro c hc hne
    rw [hlen] at hc
    unfold scores
    rw [ent_map _ _ c (by rw [facts.len3]; exact hc),
      ent_map _ _ _ (by rw [facts.len3]; exact Nat.mod_lt _ (by decide))]
    exact score_wins a ha b hb c hc hne
