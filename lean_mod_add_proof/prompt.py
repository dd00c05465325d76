"""The prompt a model sees, built from the same constants the grader enforces.

Everything here is a pure function of its arguments (texts in, text out) except
`task_prompt`, which only reads the two Lean files of a task and hands them on. Nothing
imports verifiers, so the CLI can print a prompt cheaply.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from lean_mod_add_proof.constants import (
    ALLOWED_AXIOMS,
    ALLOWED_IMPORTS,
    NETWORK_MODULE,
    REQUIRED_IMPORT,
    SPEC_CONSTANT,
    SUBMISSION_PATH,
    WEIGHTS_MODULE,
    theorem_name,
    theorem_signature,
)
from lean_mod_add_proof.dataset.tasks import NETWORK_LEAN_PATH, TaskRecord, weights_path
from lean_mod_add_proof.grading.guard import CODE_BANNED_WORDS, GUARD_RULES, SEED_BANNED_WORDS
from lean_mod_add_proof.grading.result import AxiomsMode

SYSTEM_PROMPT = (
    "You are an expert in Lean 4 and its kernel. You write complete Lean files that compile on "
    "the first try, and you follow the stated rules exactly: a file that breaks a rule scores "
    "zero however good the proof is."
)

NETWORK_FILE = "LeanCheckedNetwork/Network.lean"
WEIGHTS_FILE = "LeanCheckedNetwork/Weights.lean"


def read_verbatim(path: Path) -> str:
    """A file's text exactly as stored (no newline translation)."""
    return path.read_bytes().decode("utf-8")


def fence(text: str, lang: str = "lean") -> str:
    """`text` in a Markdown code fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{ticks}{lang}\n{body}{ticks}"


def statement_section(p: int) -> str:
    return (
        f"Prove in Lean 4 that a frozen integer neural network computes addition modulo {p}.\n\n"
        f"The network reads two numbers a, b < {p}, looks up one row of each of two embedding "
        f"tables, adds the rows, squares them elementwise, scores each class c = 0..{p - 1} "
        "with a dot product against a read-out table, and answers with the index of the first "
        "maximal score. Its definition and this network's frozen integer weights are the two "
        "Lean files below, verbatim. They are compiled exactly as shown; you cannot change "
        f"them. `{WEIGHTS_FILE}` also defines `{SPEC_CONSTANT}`, the proposition your theorem "
        f"must prove: for every pair a, b < {p} the network's answer is (a + b) % {p}."
    )


def files_section(network_lean: str, weights_lean: str) -> str:
    return (
        f"## `{NETWORK_FILE}` (module `{NETWORK_MODULE}`)\n\n{fence(network_lean)}\n\n"
        f"## `{WEIGHTS_FILE}` (module `{WEIGHTS_MODULE}`)\n\n{fence(weights_lean)}"
    )


def theorem_section(p: int) -> str:
    return (
        "## The theorem\n\n"
        f"Name: `{theorem_name(p)}`. State it with exactly this signature, at the top level of "
        "your file (fully qualified name, no surrounding namespace needed):\n\n"
        f"{fence(theorem_signature(p))}\n\n"
        f"After your file is built, the grader checks that `_root_.{theorem_name(p)}` proves "
        f"`_root_.{SPEC_CONSTANT}` as defined in `{WEIGHTS_FILE}`, so a theorem with the right "
        "name but a different or weaker statement scores zero."
    )


def _code_list(items: Sequence[str]) -> str:
    return ", ".join(f"`{item}`" for item in items)


def rules_section(
    *,
    timeout_s: float,
    lean_toolchain: str,
    banned_words: Sequence[str] = SEED_BANNED_WORDS,
    code_banned_words: Sequence[str] = CODE_BANNED_WORDS,
    guard_rules: Sequence[str] = GUARD_RULES,
    axioms_mode: AxiomsMode = "subset",
    memory_mb: int | None = None,
) -> str:
    """The rules, each one enforced by the grader (the guard's own words for its rules).
    `lean_toolchain` is the configured setting (GraderSettings.lean_toolchain), never a constant:
    the grader refuses any other toolchain, so the prompt must name the one it grades with."""
    if axioms_mode == "exact":
        axioms_rule = (
            f"Axioms: your theorem must depend on exactly {_code_list(ALLOWED_AXIOMS)} "
            "(all three, nothing else)."
        )
    else:
        axioms_rule = (
            f"Axioms: your theorem may depend only on {_code_list(ALLOWED_AXIOMS)} (any subset; "
            "computed from the kernel's own environment)."
        )
    limit = f"{timeout_s:g} seconds"
    memory = f", using at most {memory_mb} MiB of memory at any time" if memory_mb else ""
    rules = [
        f"Toolchain: `{lean_toolchain}`, in a fresh Lake package with no dependencies (no Mathlib, "
        "no Batteries; only Lean core).",
        f"Imports: only {_code_list(ALLOWED_IMPORTS)}; the file must import `{REQUIRED_IMPORT}`.",
        f"Forbidden words (anywhere in the file, comments and strings included): {_code_list(banned_words)}.",
        f"Forbidden words in code (comments and strings may mention them): {_code_list(code_banned_words)}.",
        *guard_rules,
        f"Time limit: compiling your file and the grader's kernel replay of every declaration in it "
        f"(the kernel checks your proof once, in the replay), with the statement and axiom checks, "
        f"must finish within {limit} together{memory}.",
        axioms_rule,
        f"Answer with exactly one ```lean code block holding the whole file `{SUBMISSION_PATH}` "
        "(module `LeanCheckedNetwork.Submission`). Only a ```lean block is read (the last one if "
        "there are several); a block left unclosed scores zero.",
        "The reward is 1 only if Lean's kernel accepts the proof and every check passes; otherwise 0.",
    ]
    return "## Rules\n\n" + "\n".join(f"- {rule}" for rule in rules)


def build_prompt(
    *,
    p: int,
    network_lean: str,
    weights_lean: str,
    timeout_s: float,
    lean_toolchain: str,
    banned_words: Sequence[str] = SEED_BANNED_WORDS,
    axioms_mode: AxiomsMode = "subset",
    memory_mb: int | None = None,
) -> str:
    """The user prompt: statement, Network.lean, Weights.lean, theorem, rules (in that order)."""
    sections = [
        statement_section(p),
        files_section(network_lean, weights_lean),
        theorem_section(p),
        rules_section(
            timeout_s=timeout_s,
            lean_toolchain=lean_toolchain,
            banned_words=banned_words,
            axioms_mode=axioms_mode,
            memory_mb=memory_mb,
        ),
    ]
    return "\n\n".join(sections) + "\n"


def task_prompt(
    record: TaskRecord,
    tasks_dir: Path,
    *,
    timeout_s: float,
    lean_toolchain: str,
    axioms_mode: AxiomsMode = "subset",
    memory_mb: int | None = None,
    network_lean: str | None = None,
) -> str:
    """The prompt for one task of a generated set (reads its Weights.lean and Network.lean)."""
    network = network_lean if network_lean is not None else read_verbatim(NETWORK_LEAN_PATH)
    weights = read_verbatim(weights_path(tasks_dir, record.id))
    return build_prompt(
        p=record.p,
        network_lean=network,
        weights_lean=weights,
        timeout_s=timeout_s,
        lean_toolchain=lean_toolchain,
        axioms_mode=axioms_mode,
        memory_mb=memory_mb,
    )
