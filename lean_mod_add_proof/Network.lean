/-!
# The network, in plain integer arithmetic

A two-layer network for addition modulo `p`. Inputs `a` and `b` are looked up in two embedding
tables `E1` and `E2` (`p` rows of `H` integers each), the two rows are added and squared
elementwise, and each row `c` of the read-out table `W2` scores class `c` with a dot product.
The answer is the index of the first maximum score.

Everything is structural recursion on `List` and `Nat` over `Int`, so the kernel can evaluate
the network by unfolding definitions.
-/

namespace LeanCheckedNetwork

/-- Row `i` of a table, or `[]` past its end. -/
def nth : List (List Int) → Nat → List Int
  | [], _ => []
  | row :: _, 0 => row
  | _ :: rows, i + 1 => nth rows i

/-- The dot product of two rows; extra entries of the longer row are ignored. -/
def dot : List Int → List Int → Int
  | x :: xs, y :: ys => x * y + dot xs ys
  | _, _ => 0

/-- Elementwise `(x + y)^2` of two rows, written as a product. -/
def sqSum : List Int → List Int → List Int
  | x :: xs, y :: ys => (x + y) * (x + y) :: sqSum xs ys
  | _, _ => []

/-- The hidden layer on inputs `a` and `b`: `(E1[a] + E2[b])^2`, elementwise. -/
def hidden (E1 E2 : List (List Int)) (a b : Nat) : List Int :=
  sqSum (nth E1 a) (nth E2 b)

/-- One score per row `c` of `W2`: `dot W2[c] (hidden E1 E2 a b)`. -/
def scores (E1 E2 W2 : List (List Int)) (a b : Nat) : List Int :=
  W2.map (fun w => dot w (hidden E1 E2 a b))

/-- Scan for the first maximum: `best` is the largest value seen so far, `bestIdx` its index,
and `i` the index of the next element. A later value must be strictly larger to win. -/
def argmaxFrom : List Int → Int → Nat → Nat → Nat
  | [], _, bestIdx, _ => bestIdx
  | x :: xs, best, bestIdx, i =>
    if best < x then argmaxFrom xs x i (i + 1) else argmaxFrom xs best bestIdx (i + 1)

/-- The index of the first maximum of a list, and `0` for the empty list. -/
def argmax : List Int → Nat
  | [] => 0
  | x :: xs => argmaxFrom xs x 0 1

/-- The network's answer on inputs `a` and `b`: the class with the highest score. -/
def answer (E1 E2 W2 : List (List Int)) (a b : Nat) : Nat :=
  argmax (scores E1 E2 W2 a b)

end LeanCheckedNetwork
