"""The grader: a text guard, then Lean in a fresh sandboxed package (build, kernel replay,
statement check, axiom allow-list). Nothing here imports verifiers."""
