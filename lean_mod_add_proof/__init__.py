"""lean-mod-add-proof: a verifiers v1 taskset in which a model proves, in Lean 4, that a frozen
integer network computes (a + b) % p on every input pair."""
