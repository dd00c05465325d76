import LeanCheckedNetwork.Network

/-!
Weights of the grader's self-test task: addition modulo 3 with 2 hidden neurons, found by search
and checked exactly (tests/test_selftest.py). Not a task of the data set: the self-test's
canaries grade against it because the kernel evaluates it in well under a second.
-/

namespace LeanCheckedNetwork.Net

/-- Embedding of the first input: row `a` is added for input `a`. -/
def E1 : List (List Int) := [
  [Int.ofNat 1, Int.ofNat 0],
  [Int.negSucc 2, Int.ofNat 0],
  [Int.ofNat 0, Int.negSucc 2]
]

/-- Embedding of the second input: row `b` is added for input `b`. -/
def E2 : List (List Int) := [
  [Int.negSucc 0, Int.ofNat 2],
  [Int.ofNat 2, Int.negSucc 0],
  [Int.ofNat 2, Int.ofNat 3]
]

/-- Read-out weights: row `c` scores class `c`. -/
def W2 : List (List Int) := [
  [Int.negSucc 2, Int.ofNat 4],
  [Int.ofNat 4, Int.negSucc 1],
  [Int.ofNat 1, Int.ofNat 2]
]

/-- The network's answer on inputs `a` and `b`. -/
def answer (a b : Nat) : Nat := _root_.LeanCheckedNetwork.answer E1 E2 W2 a b

/-- The proposition to prove: the network adds modulo 3 on every input pair. -/
def Spec : Prop := ∀ a, a < 3 → ∀ b, b < 3 → answer a b = (a + b) % 3

end LeanCheckedNetwork.Net
