"""Mutation testing of the grader's pure modules (`make mutate`; a benchmark, not run in CI).

For each module, mutmut 3.8.1 mutates it in a scratch copy of the repository and runs only that
module's own tests against every mutant. A second, small pass makes the single-replacement
mutants mutmut leaves out (it skips module and class constants, `Literal[...]` choices, pydantic
field defaults and bounds, and decorated functions such as properties): one per dropped or added
list entry, changed number or string, flipped comparison or boolean. The table gives the score
per module; survivors are listed with their diff, the known equivalent ones once each with why
(`EQUIVALENT` below), so that a new survivor stands out.

    .venv/bin/python benchmarks/mutate.py [--modules judge,result,...] [--guard-sample N]
        [--seed S] [--max-children N] [--work DIR]

How it runs, and why:

- Each module gets its own scratch copy (`--work`, default a temp dir) with a `[tool.mutmut]`
  section, so the work tree is never touched and other work on it goes on.
- Wall-clock tests are left out (`-k`, `WALL_CLOCK`): every call is slower under mutmut's
  trampolines, so they would fail for the wrong reason and count as false kills. Hypothesis runs
  with a fixed seed, so a run is repeatable.
- mutmut puts a hard RLIMIT_CPU on each worker (soft limit + 1 s), and a hard limit cannot be
  raised again by an unprivileged process, which breaks the grader's own `prlimit` in any test
  that runs the pipeline. mutmut is started here with `resource.setrlimit` wrapped so that only
  the soft limit is set for RLIMIT_CPU (SIGXCPU still ends a runaway mutant) and the hard limit
  stays what it was.
- The guard's rule modules (guard_rules.py, guard_words.py; guard.py before issue 35 split it,
  921 mutants) have the slowest tests; `--guard-sample N` runs a seeded random sample of N of
  their mutants (the table says so; `make mutate` uses 150), and every supplement mutant. The
  recogniser of declared names (guard_names.py, issue 38) is always run whole.

Exit status 0 when every run completed (survivors do not fail it: this is a measurement).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "lean_mod_add_proof"
GRADING = f"{PACKAGE}/grading"

#: module -> its own tests (the first ones listed run first in the supplement pass, so put the
#: fastest killers first).
MODULES: dict[str, tuple[str, ...]] = {
    "kernels": ("tests/test_kernels_unit.py", "tests/test_kernels.py"),
    "signals": ("tests/test_signals.py",),
    "export_text": ("tests/test_export_text.py",),
    "judge": ("tests/test_judge_protocol.py", "tests/test_grading_layout.py"),
    "result": (
        "tests/test_result_flags.py",
        # KernelKind and KernelRun (issue 36) are tested with the table that uses them
        "tests/test_kernels_unit.py",
        # the bounds' and checked_setting's own tests (not the ones that run a grade)
        *(
            f"tests/test_setting_bounds.py::{name}"
            for name in (
                "test_each_bound_is_the_one_its_source_gives",
                "test_every_numeric_setting_has_an_upper_bound_and_past_it_is_named",
                "test_checked_setting_is_the_settings_own_check",
                "test_the_disk_cap_stays_below_what_an_unreadable_directory_costs",
            )
        ),
    ),
    "axioms": ("tests/test_axioms_reasons.py", "tests/test_axioms.py"),
    "messages": ("tests/test_messages.py",),
    "extract": ("tests/test_extract.py",),
    "guard": ("tests/test_guard.py", "tests/test_allowlists.py", "tests/test_guard_properties.py"),
    "guard_words": ("tests/test_allowlists.py", "tests/test_guard.py", "tests/test_guard_corpus.py"),
    "guard_rules": (
        "tests/test_allowlists.py",
        "tests/test_guard.py",
        "tests/test_guard_names.py",
        "tests/test_guard_redteam.py",
        "tests/test_guard_properties.py",
        "tests/test_guard_corpus.py",
    ),
    # The recogniser of declared names (issue 38): its own tests first, they are the fastest.
    "guard_names": ("tests/test_guard_names.py", "tests/test_allowlists.py", "tests/test_guard.py"),
    "lean_tokens": (
        "tests/test_guard_token_table.py",
        "tests/test_guard_names.py",
        "tests/test_guard_lexer.py",
    ),
    "lexer": ("tests/test_guard_lexer.py", "tests/test_guard_names.py", "tests/test_guard_corpus.py"),
    # The comparator route's verdict (pure), by its own tests only: the rest of test_comparator.py
    # runs the double's `lake`, far too slow per mutant.
    "routes/comparator/verdict": (
        "tests/test_comparator_verdict.py",
        *(
            f"tests/test_comparator.py::{name}"
            for name in (
                "test_verdict_mapping",
                "test_any_one_phase_mark_shows_the_solution_phase",
                "test_a_timeout_rejects_only_when_the_solution_had_its_full_time",
                "test_a_sigkilled_step_is_the_submissions_whatever_the_oom_counter",
                "test_the_phase_comes_from_whichever_sign_is_first",
            )
        ),
    ),
}

#: The slow guard modules `--guard-sample` samples (the recogniser, guard_names, is always run whole).
GUARD_SAMPLED = frozenset({"guard_rules", "guard_words"})

#: Tests that time the code (by name; tests/timing.py, CPU time): left out of mutation runs, whose
#: instrumented runs would only slow them.
WALL_CLOCK = "not time_is_linear"
PYTEST_ARGS = ["-p", "no:cacheprovider", "-k", WALL_CLOCK, "--hypothesis-seed=0"]


@dataclass(frozen=True)
class Equivalent:
    module: str
    before: str  # the changed source line, stripped, as in the mutant's diff
    after: str
    why: str


#: Survivors that no test can kill because they do not change what the module does.
EQUIVALENT: tuple[Equivalent, ...] = (
    Equivalent(
        "kernels",
        '_LEAN_IO_SOURCE = "LEAN-EXC + LEAN-IO (module docstring); a parse error of the export is no '
        'IO error"',
        "_LEAN_IO_SOURCE = 'XXLEAN-EXC + LEAN-IO (module docstring); a parse error of the export is no "
        "IO errorXX'",
        "a citation in the table, read by people, not by any verdict",
    ),
    Equivalent(
        "extract",
        'if fence[0] == "`" and "`" in info:',
        'if fence[1] == "`" and "`" in info:',
        "a fence is 3 or more of one character, so fence[1] == fence[0]",
    ),
    Equivalent(
        "extract",
        "close = _closing_re(fence[0], len(fence)).search(text, start)",
        "close = _closing_re(fence[1], len(fence)).search(text, start)",
        "a fence is 3 or more of one character, so fence[1] == fence[0]",
    ),
    Equivalent(
        "extract",
        "pos = end + 1  # not a fence opening (CommonMark)",
        "pos = end - 1  # not a fence opening (CommonMark)",
        "end - 1 is inside the same line, and a fence line only matches at a line start",
    ),
    Equivalent(
        "extract",
        "pos = close.end() + 1",
        "pos = close.end() - 1",
        "close.end() - 1 is inside the closing line, and a fence line only matches at a line start",
    ),
    Equivalent(
        "extract",
        'line = code.count("\\n", 0, code.index("\\x00")) + 1',
        'line = code.count("\\n", None, code.index("\\x00")) + 1',
        "str.count with start None starts at 0",
    ),
    Equivalent(
        "extract",
        'line = code.count("\\n", 0, bad.start()) + 1',
        'line = code.count("\\n", None, bad.start()) + 1',
        "str.count with start None starts at 0",
    ),
    Equivalent(
        "judge",
        'return line.replace(" ", "").find(\'"judge":\') != -1  # a broken verdict still counts as one',
        'return line.replace(" ", "").rfind(\'"judge":\') != -1  # a broken verdict still counts as one',
        "find and rfind are both -1 exactly when the substring is absent",
    ),
    Equivalent(
        "guard_rules",
        'if not (text.startswith("import", pos) and (pos + 6 >= len(text) or text[pos + 6] '
        "not in _WORD_SET)):",
        'if not (text.startswith("import", pos) and (pos + 7 >= len(text) or text[pos + 6] '
        "not in _WORD_SET)):",
        "the guard's text always ends in a newline (as_lean_file), so text[pos + 6] exists whenever "
        "pos + 7 >= len(text) and is that newline, not a word character",
    ),
    Equivalent(
        "guard_rules",
        'if not (text.startswith("import", pos) and (pos + 6 >= len(text) or text[pos + 6] '
        "not in _WORD_SET)):",
        'if not (text.startswith("import", pos) and (pos + 6 > len(text) or text[pos + 6] '
        "not in _WORD_SET)):",
        "the guard's text always ends in a newline (as_lean_file), so `import` never ends it",
    ),
    Equivalent(
        "guard_words",
        "run, word = next(iter(wanted.items()))  # unreachable: every key is a run of `text`",
        "run, word = next(None)  # unreachable: every key is a run of `text`",
        "unreachable: every key of `wanted` is a run of the text (were it reached, the guard fails closed)",
    ),
    Equivalent(
        "guard_words",
        "end = len(joined) if end < 0 else end",
        "end = len(joined) if end <= 0 else end",
        "the search for a newline starts after a non-empty match, so it never returns 0",
    ),
    Equivalent(
        "guard_rules",
        "return -1",
        "return -2",
        "_closing_bracket's caller only tests `close < 0`",
    ),
    Equivalent(
        "guard_rules",
        "if 0 <= opening < close:",
        "if 0 <= opening <= close:",
        "`/-` and `-/` cannot start at the same position",
    ),
    Equivalent(
        "guard_rules",
        "if 0 <= opening < pos:",
        "if 0 < opening < pos:",
        "openings are searched from 2 characters past a `/-`, so an opening is never at 0",
    ),
    Equivalent(
        "guard_rules",
        "or (ord(ch) > 0x7F and unicodedata.category(ch) in _BAD_CATEGORIES)",
        "or (ord(ch) >= 0x7F and unicodedata.category(ch) in _BAD_CATEGORIES)",
        "U+007F (DEL) is in _BAD_ASCII already, and its category Cc is a bad one too",
    ),
    Equivalent(
        "guard_words",
        '_WORD_CHARS = "A-Za-z0-9_"',
        "_WORD_CHARS = 'XXA-Za-z0-9_XX'",
        "it is a character class: the added X is in A-Z already",
    ),
    Equivalent(
        "guard_rules",
        '_WORD_CHARS = "A-Za-z0-9_"',
        "_WORD_CHARS = 'XXA-Za-z0-9_XX'",
        "it is a character class: the added X is in A-Z already",
    ),
    Equivalent(
        "guard_rules",
        "pos = n if end < 0 else end + 1",
        "pos = n if end < 1 else end + 1",
        "end is where a newline was found after `--` at pos >= 0, so end >= 2 whenever it is found",
    ),
    Equivalent(
        "judge",
        'verdict_from: VerdictFrom = "olean",',
        'verdict_from: VerdictFrom = "XXoleanXX",',
        'any value but "export" takes the olean branch, so the default\'s spelling does nothing at run time',
    ),
    Equivalent(
        "judge",
        'verdict_from: VerdictFrom = "olean",',
        'verdict_from: VerdictFrom = "OLEAN",',
        'any value but "export" takes the olean branch, so the default\'s spelling does nothing at run time',
    ),
    Equivalent(
        "export_text",
        "obj = json.loads(line) if line.strip() else None",
        "obj = json.loads(line) if (line.strip()) or True else None",
        "json.loads of an empty or blank line raises ValueError, which the except also turns into None",
    ),
    Equivalent(
        "export_text",
        "obj = None",
        'obj = ""',
        'every reader of _objects tests isinstance(obj, dict), which None and "" both fail',
    ),
    Equivalent(
        "export_text",
        'if by_index.get(body.get("name", -1)) == name:',
        'if by_index.get(body.get("name", None)) == name:',
        "an export's name indices are naturals (Parse.lean), so -1, -2 and None all miss and give None",
    ),
    Equivalent(
        "export_text",
        'if by_index.get(body.get("name", -1)) == name:',
        'if by_index.get(body.get("name", )) == name:',
        "an export's name indices are naturals (Parse.lean), so -1, -2 and None all miss and give None",
    ),
    Equivalent(
        "export_text",
        'if by_index.get(body.get("name", -1)) == name:',
        'if by_index.get(body.get("name", -2)) == name:',
        "an export's name indices are naturals (Parse.lean), so -1, -2 and None all miss and give None",
    ),
    Equivalent(
        "export_text",
        'CONSTANT_KEYS: tuple[str, ...] = ("thm", "def", "axiom", "opaque", "quot")',
        "CONSTANT_KEYS: tuple[str, ...] = ('thm', 'def', 'axiom', 'opaque', 'quot', 'XXmutantXX')",
        "no export line has that key (Parse.lean's kinds), so an extra kind is never matched",
    ),
    Equivalent(
        "lexer",
        "if end is None or pos + 3 > len(text):",
        "if end is None or pos - 3 > len(text):",
        "redundant clause: when pos + 3 >= len(text), finish_block(pos + 3) finds no `-/` and returns None",
    ),
    Equivalent(
        "lexer",
        "if end is None or pos + 3 > len(text):",
        "if end is None or pos + 4 > len(text):",
        "redundant clause: when pos + 3 >= len(text), finish_block(pos + 3) finds no `-/` and returns None",
    ),
    Equivalent(
        "lexer",
        "if end is None or pos + 3 > len(text):",
        "if end is None or pos + 3 >= len(text):",
        "redundant clause: when pos + 3 >= len(text), finish_block(pos + 3) finds no `-/` and returns None",
    ),
    Equivalent(
        "lexer",
        'before = text[pos - 1] if pos > 0 else "\\n"',
        'before = text[pos - 1] if pos > 0 else "XX\\nXX"',
        "`before` is only tested for membership in the operator, `!?` and `.`/backquote sets, "
        "which hold neither a newline nor XX\\nXX",
    ),
    Equivalent(
        "lexer",
        'elif ch in "-/":  # `--` or `/-`, by construction of the code pattern',
        'elif ch in "XX-/XX":  # `--` or `/-`, by construction of the code pattern',
        "the code pattern consumes every X as part of a name, so the stop character is never X",
    ),
    Equivalent(
        "lexer",
        "if end < 0:",
        "if end <= 0:",
        "find from pos (the `«`) returns -1 or a position > pos >= 0, never 0",
    ),
    Equivalent(
        "lexer",
        "if end < 0:",
        "if end < 1:",
        "find from pos (the `«`) returns -1 or a position > pos >= 0, never 0",
    ),
    Equivalent(
        "lexer",
        "if close < 0:",
        "if close <= 0:",
        "find from m.end() >= 2 returns -1 or a position >= 2, never 0 or 1",
    ),
    Equivalent(
        "lexer",
        "if close < 0:",
        "if close < 1:",
        "find from m.end() >= 2 returns -1 or a position >= 2, never 0 or 1",
    ),
    Equivalent(
        "lexer",
        'if before in ".`":',
        'if before in "XX.`XX":',
        'an X right before `r"` is part of a name that the code pattern consumes with the `r`',
    ),
    Equivalent(
        "lexer",
        'parts.append(_NOT_NEWLINE_RE.sub(" ", inner) if "\\n" in inner else " " * len(inner))',
        'parts.append(_NOT_NEWLINE_RE.sub(" ", inner) if ("\\n" in inner) or True else " " * len(inner))',
        "without a newline, blanking every non-newline character is the same as len(inner) spaces",
    ),
    *(
        Equivalent(
            "result",
            'problem = exc.errors()[0].get("msg", "invalid value")',
            after,
            "pydantic's errors always hold a msg: the default is never read",
        )
        for after in (
            'problem = exc.errors()[0].get("msg", None)',
            'problem = exc.errors()[0].get("msg", )',
            'problem = exc.errors()[0].get("msg", "XXinvalid valueXX")',
            'problem = exc.errors()[0].get("msg", "INVALID VALUE")',
        )
    ),
    Equivalent(
        "result",
        "timeout_s: float = Field(300.0, gt=0, le=TIMEOUT_S_MAX, allow_inf_nan=False)",
        "timeout_s: float = Field(300.0, gt=0, le=TIMEOUT_S_MAX, allow_inf_nan=True)",
        "le=TIMEOUT_S_MAX refuses inf, and every comparison with nan is false, so gt=0 refuses it",
    ),
    Equivalent(
        "routes/comparator/verdict",
        'first_seen: Mapping[bytes, float] | None, text: str = "", argv_seen_at: float | None = None',
        'first_seen: Mapping[bytes, float] | None, text: str = "XXXX", argv_seen_at: float | None = None',
        "the text is only searched for the phase marks, and neither default holds one",
    ),
    *(
        Equivalent(
            "routes/comparator/verdict",
            'axioms_mode: AxiomsMode = "subset",',
            f'axioms_mode: AxiomsMode = "{other}",',
            'the mode is only compared with "exact": any other default reads as subset',
        )
        for other in ("XXsubsetXX", "SUBSET")
    ),
)


# --- mutmut --------------------------------------------------------------------------------------


def _mutmut_config(module: str, tests: tuple[str, ...]) -> str:
    def toml_list(items: list[str] | tuple[str, ...]) -> str:
        return "[" + ", ".join(json.dumps(i) for i in items) + "]"

    return (
        "\n[tool.mutmut]\n"
        f'source_paths = ["{PACKAGE}"]\n'
        f'only_mutate = ["{GRADING}/{module}.py"]\n'
        f"pytest_add_cli_args_test_selection = {toml_list(tests)}\n"
        f"pytest_add_cli_args = {toml_list(PYTEST_ARGS)}\n"
        "use_git_change_detection = false\n"
        # A mutant that loops must not hold a worker for 15x the suite's time (mutmut's default).
        "timeout_multiplier = 4.0\n"
    )


def prepare_scratch(work: Path, module: str) -> Path:
    """A copy of the package, the tests and pyproject.toml with this module's mutmut config."""
    scratch = work / module
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    shutil.copytree(ROOT / PACKAGE, scratch / PACKAGE, ignore=ignore)
    shutil.copytree(ROOT / "tests", scratch / "tests", ignore=ignore)
    pyproject = (ROOT / "pyproject.toml").read_text()
    (scratch / "pyproject.toml").write_text(pyproject + _mutmut_config(module, MODULES[module]))
    return scratch


def _launch_mutmut(args: list[str]) -> None:
    """Run mutmut's command line in this process, with RLIMIT_CPU's hard limit left alone."""
    real_setrlimit = resource.setrlimit

    def setrlimit(which: int, limits: tuple[int, int]) -> None:
        if which == resource.RLIMIT_CPU:
            limits = (limits[0], resource.getrlimit(which)[1])
        real_setrlimit(which, limits)

    resource.setrlimit = setrlimit  # type: ignore[assignment]
    from mutmut.__main__ import cli

    cli.main(args=args, prog_name="mutmut")


def _generate_mutants() -> None:
    """mutmut's mutant generation alone (the first step of `mutmut run`), for sampling."""
    from mutmut import __main__ as mm

    os.makedirs("mutants", exist_ok=True)
    mm.copy_src_dir()
    mm.copy_also_copy_files()
    mm.setup_source_paths()
    mm.create_mutants(os.cpu_count() or 2)


def _report() -> None:
    """Every mutant of this scratch copy as JSON lines: name, status, changed lines."""
    from mutmut.mutation.data import SourceFileMutationData
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    from mutmut.stats import status_by_exit_code
    from mutmut.utils.file_utils import walk_mutatable_files

    for path in walk_mutatable_files():
        data = SourceFileMutationData(path=path)
        data.load()
        for name, code in data.exit_code_by_key.items():
            status = status_by_exit_code[code]
            entry = {"name": name, "status": status}
            if status not in ("killed", "timeout", "not checked"):
                diff = get_diff_for_mutant(name, path=path)
                entry["diff"] = diff
            print(json.dumps(entry))


def _python(scratch: Path, *args: str, capture: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), *args],
        cwd=scratch,
        text=True,
        capture_output=capture,
        check=False,
    )


def mutmut_names(scratch: Path) -> list[str]:
    _python(scratch, "--internal", "generate", capture=True)
    names = []
    for meta in (scratch / "mutants").rglob("*.py.meta"):
        names += list(json.loads(meta.read_text())["exit_code_by_key"])
    return sorted(names)


def run_mutmut(scratch: Path, max_children: int, names: list[str] | None, log: Path) -> list[dict]:
    args = ["--internal", "mutmut", "run", "--max-children", str(max_children), *(names or [])]
    with log.open("w") as out:
        subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), *args],
            cwd=scratch,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
    report = _python(scratch, "--internal", "report", capture=True)
    entries = [json.loads(line) for line in report.stdout.splitlines() if line.startswith("{")]
    if names is not None:
        wanted = set(names)
        entries = [e for e in entries if e["name"] in wanted]
    return entries


# --- the supplement: what mutmut leaves out ------------------------------------------------------


@dataclass
class Mutant:
    before: str
    after: str
    source: str  # the whole mutated module
    status: str = "not checked"


def _skipped_by_mutmut(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    names = [d.id if isinstance(d, ast.Name) else None for d in node.decorator_list]
    return bool(node.decorator_list) and names not in (["staticmethod"], ["classmethod"])


_COMPARE_SWAP: dict[type, type] = {
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE,
    ast.GtE: ast.Gt, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}  # fmt: skip


def _constant_variants(node: ast.Constant) -> Iterator[ast.expr]:
    value = node.value
    if isinstance(value, bool):
        yield ast.Constant(not value)
    elif isinstance(value, int | float):
        yield ast.Constant(value + 1)
        if value:
            yield ast.Constant(value - 1)
    elif isinstance(value, str):
        yield ast.Constant(f"XX{value}XX")


def _expression_variants(node: ast.AST) -> Iterator[tuple[ast.AST, ast.AST]]:
    """(node, replacement) pairs inside an expression or statement mutmut does not mutate."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Compare):
            for i, op in enumerate(sub.ops):
                if type(op) in _COMPARE_SWAP:
                    ops = list(sub.ops)
                    ops[i] = _COMPARE_SWAP[type(op)]()
                    yield sub, ast.Compare(sub.left, ops, sub.comparators)
        elif isinstance(sub, ast.BoolOp):
            yield sub, ast.BoolOp(ast.Or() if isinstance(sub.op, ast.And) else ast.And(), sub.values)
        elif isinstance(sub, ast.UnaryOp) and isinstance(sub.op, ast.Not):
            yield sub, sub.operand
        elif isinstance(sub, ast.Constant) and sub.value is not None and sub.value is not Ellipsis:
            for variant in _constant_variants(sub):
                yield sub, variant


def _sequence_variants(node: ast.Tuple | ast.List) -> Iterator[ast.AST]:
    """Each entry dropped, and one entry added."""
    for i in range(len(node.elts)):
        yield type(node)([*node.elts[:i], *node.elts[i + 1 :]], ast.Load())
    if node.elts and all(isinstance(e, ast.Constant) for e in node.elts):
        example = node.elts[0].value  # type: ignore[attr-defined]
        extra = "XXmutantXX" if isinstance(example, str) else 12345
        yield type(node)([*node.elts, ast.Constant(extra)], ast.Load())


def _literal_targets(tree: ast.Module) -> Iterator[ast.AST]:
    """Module and class level statements mutmut does not mutate."""
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign | ast.AnnAssign):
            yield stmt
        elif isinstance(stmt, ast.ClassDef):
            for inner in stmt.body:
                if isinstance(inner, ast.Assign | ast.AnnAssign):
                    yield inner


def supplement_mutants(source: str) -> list[Mutant]:
    tree = ast.parse(source)
    lines = source.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)

    def span(node: ast.AST) -> tuple[int, int]:
        return (
            offsets[node.lineno - 1] + node.col_offset,  # type: ignore[attr-defined]
            offsets[node.end_lineno - 1] + node.end_col_offset,  # type: ignore[attr-defined]
        )

    pairs: list[tuple[ast.AST, ast.AST]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _skipped_by_mutmut(node):
            for stmt in node.body:
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                    continue  # the docstring
                pairs += list(_expression_variants(stmt))
    for stmt in _literal_targets(tree):
        value = stmt.value
        if value is None:
            parts: list[ast.AST] = []
        elif isinstance(value, ast.Tuple | ast.List) and all(
            isinstance(e, ast.Constant | ast.JoinedStr) for e in value.elts
        ):
            pairs += [(value, variant) for variant in _sequence_variants(value)]
            parts = []
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "Field":
            parts = [*value.args, *(k.value for k in value.keywords)]
        elif (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "ConfigDict"
        ):
            parts = [k.value for k in value.keywords]
        elif isinstance(value, ast.Constant | ast.BinOp | ast.UnaryOp):
            parts = [value]
        else:
            parts = []
        annotation = getattr(stmt, "annotation", None)
        for candidate in [value, annotation]:
            if (
                isinstance(candidate, ast.Subscript)
                and isinstance(candidate.value, ast.Name)
                and candidate.value.id == "Literal"
            ):
                choices = candidate.slice
                if isinstance(choices, ast.Tuple):
                    pairs += [(choices, variant) for variant in _sequence_variants(choices)]
                else:
                    parts.append(choices)
        for part in parts:
            if isinstance(part, ast.Constant):
                pairs += [(part, variant) for variant in _constant_variants(part)]
            elif isinstance(part, ast.BinOp | ast.UnaryOp):
                pairs += [
                    (c, v)
                    for c in ast.walk(part)
                    if isinstance(c, ast.Constant)
                    for v in _constant_variants(c)
                ]

    mutants = []
    seen: set[str] = set()
    for node, replacement in pairs:
        start, end = span(node)
        new_text = ast.unparse(replacement)
        if isinstance(node, ast.Tuple) and not new_text.startswith("("):
            new_text = f"({new_text})" if "," in new_text or not new_text else new_text
        mutated = source[:start] + new_text + source[end:]
        if mutated in seen or mutated == source:
            continue
        try:
            ast.parse(mutated)
        except SyntaxError:
            continue
        seen.add(mutated)
        line_start = source.rfind("\n", 0, start) + 1
        line_end = source.find("\n", end)
        before = source[line_start:line_end].strip()
        after = mutated[line_start : line_end + len(mutated) - len(source)].strip()
        mutants.append(Mutant(before[:200], after[:200], mutated))
    return mutants


def _run_pytest_forked(scratch: Path, tests: tuple[str, ...], timeout: float) -> str:
    """Run the module's tests in a forked child (pytest imported once by the parent)."""
    import pytest

    pid = os.fork()
    if pid == 0:  # the child
        try:
            os.chdir(scratch)
            sys.path.insert(0, str(scratch))
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            code = pytest.main(["-x", "-q", "--rootdir=.", *PYTEST_ARGS, *tests])
            os._exit(int(code))
        except BaseException:
            os._exit(70)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            return "survived" if code == 0 else "killed"
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout"
        time.sleep(0.05)


def run_supplement(scratch: Path, module: str) -> list[Mutant]:
    path = scratch / GRADING / f"{module}.py"
    original = path.read_text()
    tests = MODULES[module]
    started = time.monotonic()
    if _run_pytest_forked(scratch, tests, timeout=600) != "survived":
        raise SystemExit(f"{module}: the tests fail on the unmutated copy in {scratch}")
    timeout = 10 * (time.monotonic() - started) + 10
    mutants = supplement_mutants(original)
    print(f"   supplement: {len(mutants)} mutants", flush=True)
    try:
        for mutant in mutants:
            path.write_text(mutant.source)
            for test_file in tests:  # one file at a time: most mutants die in the first one
                mutant.status = _run_pytest_forked(scratch, (test_file,), timeout)
                if mutant.status != "survived":
                    break
    finally:
        path.write_text(original)
    return mutants


# --- the report ----------------------------------------------------------------------------------


def changed_lines(diff: str) -> tuple[str, str]:
    removed = [ln[1:].strip() for ln in diff.split("\n") if ln.startswith("-") and not ln.startswith("---")]
    added = [ln[1:].strip() for ln in diff.split("\n") if ln.startswith("+") and not ln.startswith("+++")]
    return " / ".join(removed), " / ".join(added)


def equivalent_for(module: str, before: str, after: str) -> Equivalent | None:
    for eq in EQUIVALENT:
        if eq.module == module and eq.before == before and eq.after == after:
            return eq
    return None


@dataclass
class ModuleScore:
    module: str
    note: str = ""
    killed: int = 0
    survived: list[tuple[str, str, str]] = field(default_factory=list)  # (name, before, after)
    equivalent: list[tuple[str, Equivalent]] = field(default_factory=list)
    no_tests: int = 0
    seconds: float = 0.0

    @property
    def tried(self) -> int:
        return self.killed + len(self.survived) + len(self.equivalent) + self.no_tests

    def score(self, *, without_equivalent: bool) -> float:
        total = self.tried - (len(self.equivalent) if without_equivalent else 0)
        return 100.0 * self.killed / total if total else 100.0

    def add(self, name: str, status: str, before: str, after: str) -> None:
        if status in ("killed", "timeout", "caught by type check", "segfault"):
            self.killed += 1
            return
        if status == "no tests":
            self.no_tests += 1
        eq = equivalent_for(self.module, before, after)
        if eq is not None:
            self.equivalent.append((name, eq))
        elif status != "no tests":
            self.survived.append((name, before, after))
        else:
            self.survived.append((name + " (no tests)", before, after))
            self.no_tests -= 1


def measure(module: str, args: argparse.Namespace, work: Path) -> ModuleScore:
    started = time.monotonic()
    scratch = prepare_scratch(work, module)
    score = ModuleScore(module)
    names = None
    if module in GUARD_SAMPLED and args.guard_sample:
        everything = mutmut_names(scratch)
        names = sorted(random.Random(args.seed).sample(everything, min(args.guard_sample, len(everything))))
        score.note = f"sample of {len(names)} of {len(everything)} mutants (seed {args.seed})"
    print(f"   mutmut: {len(names) if names else 'all'} mutants", flush=True)
    for entry in run_mutmut(scratch, args.max_children, names, work / f"{module}.mutmut.log"):
        before, after = changed_lines(entry.get("diff", ""))
        score.add(entry["name"], entry["status"], before, after)
    for i, mutant in enumerate(run_supplement(scratch, module)):
        score.add(f"supplement_{i}", mutant.status, mutant.before, mutant.after)
    score.seconds = time.monotonic() - started
    return score


def print_report(scores: list[ModuleScore]) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    table = Table(title="Mutation score per module (mutmut 3.8.1 + supplement)")
    for column in (
        "module",
        "tried",
        "killed",
        "survived",
        "equivalent",
        "score",
        "score w/o equiv.",
        "time",
    ):
        table.add_column(column, justify="left" if column == "module" else "right")
    for s in scores:
        table.add_row(
            s.module + (" *" if s.note else ""),
            str(s.tried),
            str(s.killed),
            str(len(s.survived)),
            str(len(s.equivalent)),
            f"{s.score(without_equivalent=False):.1f}%",
            f"{s.score(without_equivalent=True):.1f}%",
            f"{s.seconds:.0f}s",
        )
    console.print(table)
    for s in scores:
        if s.note:
            console.print(f"* {s.module}: mutmut {s.note}, plus every supplement mutant")
    console.print(
        "score = killed / tried (a timeout counts as killed); w/o equiv. leaves the listed equivalent "
        "survivors out of tried"
    )
    shown: set[tuple[str, str, str]] = set()
    console.print("\n[bold]Equivalent survivors[/bold] (each once)")
    for s in scores:
        for _, eq in s.equivalent:
            key = (eq.module, eq.before, eq.after)
            if key not in shown:
                shown.add(key)
                console.print(f"  {eq.module}: [red]- {escape(eq.before)}[/red]")
                console.print(f"    [green]+ {escape(eq.after)}[/green]\n    why: {escape(eq.why)}")
    console.print("\n[bold]Other survivors[/bold] (a test is missing, or add it to EQUIVALENT with why)")
    for s in scores:
        for name, before, after in s.survived:
            console.print(f"  {name}:\n    [red]- {escape(before)}[/red]")
            console.print(f"    [green]+ {escape(after)}[/green]")


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--internal":
        step, rest = sys.argv[2], sys.argv[3:]
        if step == "mutmut":
            _launch_mutmut(rest)
        elif step == "generate":
            _generate_mutants()
        elif step == "report":
            _report()
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--modules", default=",".join(MODULES), help="comma-separated, from: " + ", ".join(MODULES)
    )
    parser.add_argument("--guard-sample", type=int, default=0, help="run N sampled guard mutants (0: all)")
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--work", type=Path, default=None, help="scratch directory (kept)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="lean-mod-add-proof-mutate-"))
    work.mkdir(parents=True, exist_ok=True)
    modules = [m.strip() for m in args.modules.split(",") if m.strip()]
    unknown = [m for m in modules if m not in MODULES]
    if unknown:
        parser.error(f"unknown modules: {', '.join(unknown)}")
    scores = []
    for module in modules:
        print(f"== {module} (scratch {work / module})", flush=True)
        scores.append(measure(module, args, work))
    print_report(scores)
    (work / "scores.json").write_text(
        json.dumps(
            {
                s.module: {
                    "tried": s.tried,
                    "killed": s.killed,
                    "survived": [list(x) for x in s.survived],
                    "equivalent": [[n, e.before, e.after] for n, e in s.equivalent],
                    "score": round(s.score(without_equivalent=False), 1),
                    "score_without_equivalent": round(s.score(without_equivalent=True), 1),
                    "note": s.note,
                }
                for s in scores
            },
            indent=1,
        )
    )
    print(f"scores and logs in {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
