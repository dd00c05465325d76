"""Sub-commands: `tasks` (list a task set), `prompt TASK_ID`, `reference TASK_ID`."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lean_mod_add_proof.cli.exits import EXIT_USAGE, print_error
from lean_mod_add_proof.dataset.cost import (
    BRUTE_FORCE_MARGIN,
    CITED_RATE_SOURCE,
    PACKED_MARGIN,
    PACKED_OVERHEAD_S,
    PLAUSIBLE_RATES,
    brute_force_estimate_s,
    format_range,
    hard_estimate,
)
from lean_mod_add_proof.dataset.tasks import (
    DEFAULT_TASKS_DIR,
    HARD_EVAL_SEED,
    SPLIT_CHOICES,
    TaskRecord,
    TaskSetError,
    is_hard,
    load_tasks,
)

#: The split `vf-eval lean-mod-add-proof` loads when none is given (`LeanTasksetConfig.split`'s
#: default, spelt out here so the CLI does not import verifiers; a test keeps the two equal).
DEFAULT_SPLIT = "train"

#: `tasks --tokenizer`'s default when it is not given on the command line.
TOKENIZER_ENV = "LEAN_MOD_ADD_PROOF_TOKENIZER"
#: The tiktoken encoding `auto` uses when its vocabulary is already on disk.
AUTO_TIKTOKEN = "o200k_base"
#: The estimate: one token per digit plus one per ESTIMATE_CHARS_PER_TOKEN other characters.
ESTIMATE_CHARS_PER_TOKEN = 2.5
ESTIMATE_NAME = f"estimate (digits + other characters / {ESTIMATE_CHARS_PER_TOKEN:g})"


class TokenizerUnavailable(Exception):
    """The tokenizer asked for cannot be loaded (the message says which and why)."""


def _why(what: str, exc: Exception) -> TokenizerUnavailable:
    return TokenizerUnavailable(f"{what}: {type(exc).__name__}: {' '.join(str(exc).split())}")


@dataclass(frozen=True)
class Tokenizer:
    name: str
    count: Callable[[str], int]
    exact: bool
    """False for the estimate."""


def estimate_tokens(text: str) -> int:
    """An upper estimate of a prompt's token count without a tokenizer (pure): one token per
    digit (Qwen-family tokenizers split numbers into single digits, and the prompts are mostly
    weight tables) plus one per 2.5 other characters. On the 63 packaged prompts it came out 1 to
    25 % above the real count of Qwen2.5/Qwen3's and Qwen3.6's tokenizers and of tiktoken's
    cl100k_base, closest on the largest prompts, which are what fixes a sequence length."""
    digits = sum(ch.isdigit() for ch in text)
    return digits + -(-(len(text) - digits) * 2 // 5)  # ceil((chars - digits) / 2.5)


def _tiktoken(encoding: str, offline: bool) -> Tokenizer:
    try:
        import tiktoken
        import tiktoken.load as tiktoken_load
    except ImportError:
        raise TokenizerUnavailable("tiktoken is not installed (`pip install tiktoken`)") from None
    real_read = tiktoken_load.read_file

    def no_download(blobpath: str) -> bytes:
        if "://" in blobpath:
            raise OSError("not downloading in auto mode")
        return real_read(blobpath)

    if offline:  # use a vocabulary already on disk (tiktoken's cache), never download one
        tiktoken_load.read_file = no_download
    try:
        enc = tiktoken.get_encoding(encoding)
    except Exception as exc:
        raise _why(f"tiktoken encoding {encoding!r}", exc) from None
    finally:
        tiktoken_load.read_file = real_read
    return Tokenizer(f"tiktoken {encoding}", lambda text: len(enc.encode(text, disallowed_special=())), True)


#: How long `hf:` waits to learn whether the Hub can be reached before giving up on a download.
HUB_PROBE_TIMEOUT_S = 3.0


def _hub_reachable() -> bool:
    """Whether a TCP connection to the Hugging Face endpoint opens within HUB_PROBE_TIMEOUT_S.
    Checked before any download, because the Hub clients retry for about 48 s offline."""
    import socket
    from urllib.parse import urlsplit

    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return False
    url = urlsplit(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    try:
        port = url.port or (80 if url.scheme == "http" else 443)
        with socket.create_connection((url.hostname or "", port), timeout=HUB_PROBE_TIMEOUT_S):
            return True
    except (OSError, ValueError):
        return False


def _hub_cached_file(name: str, filename: str) -> str | None:
    """`filename` of model `name` from the Hugging Face cache, without any network access."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    try:
        found = try_to_load_from_cache(name, filename)
    except Exception:  # a malformed name: the download below says what is wrong with it
        return None
    return found if isinstance(found, str) else None


def _offline(name: str) -> TokenizerUnavailable:
    return TokenizerUnavailable(
        f"Hugging Face tokenizer {name!r} is not on disk and the Hub cannot be reached (offline?): "
        "run once online, or pass hf:<path to its tokenizer.json>"
    )


def _huggingface(name: str) -> Tokenizer:
    """A tokenizer.json file (with `tokenizers`), else a model name or directory (with
    `transformers` if installed, else `tokenizers`). A name not on disk is downloaded, but only
    after the Hub answers, so an offline machine gets a clear error at once instead of retries."""
    try:
        if Path(name).is_file() or importlib.util.find_spec("transformers") is None:
            from tokenizers import Tokenizer as RawTokenizer

            if Path(name).is_file():
                raw = RawTokenizer.from_file(name)
            elif cached := _hub_cached_file(name, "tokenizer.json"):
                raw = RawTokenizer.from_file(cached)
            elif not _hub_reachable():
                raise _offline(name)
            else:
                raw = RawTokenizer.from_pretrained(name)
            return Tokenizer(name, lambda text: len(raw.encode(text, add_special_tokens=False).ids), True)
        from transformers import AutoTokenizer

        try:
            tok = AutoTokenizer.from_pretrained(name, local_files_only=True)
        except Exception:
            if Path(name).is_dir():  # a local directory: its own error says what is missing
                raise
            if not _hub_reachable():
                raise _offline(name) from None
            tok = AutoTokenizer.from_pretrained(name)
        return Tokenizer(name, lambda text: len(tok.encode(text, add_special_tokens=False)), True)
    except TokenizerUnavailable:
        raise
    except ImportError:
        raise TokenizerUnavailable("neither transformers nor tokenizers is installed") from None
    except Exception as exc:
        raise _why(f"Hugging Face tokenizer {name!r}", exc) from None


def load_tokenizer(spec: str) -> Tokenizer:
    """`estimate`; `tiktoken:<encoding>`; `hf:<model name, directory or tokenizer.json>` (either
    may download); or `auto`: $LEAN_MOD_ADD_PROOF_TOKENIZER if set, else tiktoken's o200k_base
    if tiktoken is installed and that vocabulary is already on disk, else the estimate."""
    if spec == "auto":
        configured = os.environ.get(TOKENIZER_ENV, "").strip()
        if configured and configured != "auto":
            return load_tokenizer(configured)
        try:
            return _tiktoken(AUTO_TIKTOKEN, offline=True)
        except TokenizerUnavailable:
            spec = "estimate"
    if spec == "estimate":
        return Tokenizer(ESTIMATE_NAME, estimate_tokens, False)
    kind, sep, name = spec.partition(":")
    if sep and kind == "tiktoken" and name:
        return _tiktoken(name, offline=False)
    if sep and kind == "hf" and name:
        return _huggingface(name)
    raise TokenizerUnavailable(
        f"unknown tokenizer {spec!r}: use auto, estimate, tiktoken:<encoding> or hf:<model or path>"
    )


def prompt_text(record: TaskRecord, tasks_dir: Path) -> str:
    """What the model is sent for a task with the default settings (a hard task's own limit):
    system prompt, then the user prompt (the chat template's few tokens per message come on top)."""
    from lean_mod_add_proof.grading.result import GraderConfig
    from lean_mod_add_proof.prompt import SYSTEM_PROMPT, task_prompt

    defaults = GraderConfig()
    user = task_prompt(
        record,
        tasks_dir,
        timeout_s=defaults.timeout_s if record.timeout_s is None else record.timeout_s,
        lean_toolchain=defaults.lean_toolchain,
        memory_mb=defaults.memory_mb,
    )
    return SYSTEM_PROMPT + "\n" + user


#: The help of every command's task id argument (grade, prompt, reference).
TASK_ID_HELP = "the task's id, e.g. p05_h08_s0 (see `lean-mod-add-proof tasks`)"


def _tasks_dir_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tasks-dir",
        type=Path,
        default=DEFAULT_TASKS_DIR,
        help="a generated task set (tasks.jsonl + <id>/Weights.lean); default: the packaged one",
    )


def _find(task_id: str, tasks_dir: Path) -> TaskRecord:
    for record in load_tasks(tasks_dir):
        if record.id == task_id:
            return record
    raise TaskSetError(f"unknown task id {task_id!r} in {tasks_dir} (see `lean-mod-add-proof tasks`)")


def hard_row(record: TaskRecord) -> dict[str, object]:
    """The cost model's figures for a hard task, as `tasks --json` prints them (pure)."""
    est = hard_estimate(record.p, record.hidden)
    return {
        "brute_force_estimate_s": list(est.brute_force_s),
        "packed_route_ops": est.packed_ops.operations,
        "packed_route_limb_work": est.packed_ops.limb_work,
        "packed_route_largest_bits": est.packed_ops.largest_bits,
        "packed_route_cache_mib": round(est.packed_ops.result_bits / 8 / 2**20),
        "packed_estimate_s": list(est.packed_s),
        "model_limit_s": est.limit_s,
        "brute_force_margin": est.margins(record.timeout_s)[0] if record.timeout_s else None,
        "packed_margin": est.margins(record.timeout_s)[1] if record.timeout_s else None,
    }


def hard_markdown(
    records: list[TaskRecord], hard: dict[str, dict[str, object]], tokens: dict[str, int], approx: str
) -> str:
    """The hard tasks as a Markdown table: both estimates, the shipped limit and its margins
    (docs/dataset.md quotes this output verbatim, and tests/test_docs.py compares them; pure)."""
    lines = [
        "| task | split | p | H | kernel mul-adds | brute force (est.) | packed ops | packed (est.) "
        "| limit | brute force ÷ limit | limit ÷ packed | prompt tokens |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in records:
        if r.id not in hard:
            continue
        row = hard[r.id]
        brute, packed = row["brute_force_estimate_s"], row["packed_estimate_s"]
        margins = (
            ("-", "-")
            if r.timeout_s is None
            else (f"{row['brute_force_margin']:.2f}×", f"{row['packed_margin']:.2f}×")
        )
        lines.append(
            f"| {r.id} | {r.split} | {r.p} | {r.hidden} | {r.kernel_mul_adds:,} | {format_range(*brute)} "
            f"| {row['packed_route_ops']:,} | {format_range(*packed)} "
            f"| {'-' if r.timeout_s is None else f'{r.timeout_s:g} s'} | {margins[0]} | {margins[1]} "
            f"| {approx}{tokens[r.id]:,} |"
        )
    return "\n".join(lines)


def cmd_tasks(args: argparse.Namespace) -> int:
    from lean_mod_add_proof.cli.settings import select_tasks
    from lean_mod_add_proof.grading.result import GraderConfig

    records = select_tasks(load_tasks(args.tasks_dir), args.split, args.max_p)
    try:
        tokenizer = load_tokenizer(args.tokenizer)
    except TokenizerUnavailable as exc:
        print_error(f"tasks: --tokenizer: {exc}")
        return EXIT_USAGE
    tokens = {r.id: tokenizer.count(prompt_text(r, args.tasks_dir)) for r in records}
    hard = {r.id: hard_row(r) for r in records if is_hard(r.split)}
    if args.sort == "kernel-mul-adds":
        records = sorted(records, key=lambda r: (r.kernel_mul_adds, r.id))
    elif args.sort == "prompt-tokens":
        records = sorted(records, key=lambda r: (tokens[r.id], r.id))
    default_limit = GraderConfig().timeout_s
    if args.json:
        rows = [
            {
                **r.to_json(),
                "prompt_tokens": tokens[r.id],
                "tokenizer": tokenizer.name,
                "brute_force_estimate_s": list(brute_force_estimate_s(r.kernel_mul_adds)),
                **hard.get(r.id, {}),
                "limit_s": default_limit if r.timeout_s is None else r.timeout_s,
                "rates": PLAUSIBLE_RATES.source,
                "rates_source": CITED_RATE_SOURCE,
            }
            for r in records
        ]
        print(json.dumps(rows, indent=2))
        return 0
    if args.markdown:
        print(hard_markdown(records, hard, tokens, approx="" if tokenizer.exact else "≈"))
        return 0
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from lean_mod_add_proof.cli.output import console, is_terminal

    approx = "" if tokenizer.exact else "≈"
    notes = [
        f"prompt tokens: system + user prompt, by {tokenizer.name}"
        + ("" if tokenizer.exact else "; `--tokenizer hf:<your model>` counts exactly")
        + "; the chat template adds a few per message",
    ]
    if records:
        notes.append(
            f"largest prompt {approx}{max(tokens.values()):,} tokens: a sequence length must hold it "
            "plus the completion budget"
        )
    fast_us, slow_us = PLAUSIBLE_RATES.fastest_s * 1e6, PLAUSIBLE_RATES.slowest_s * 1e6
    notes.append(
        f"brute force (est.): kernel mul-adds × {fast_us:g}–{slow_us:g} µs each, the fastest and slowest "
        f"rate planned for ({CITED_RATE_SOURCE}); `calibrate` measures yours"
    )
    if hard:
        notes.append(
            f"packed (est.): the packed route's kernel operations (`packed_route_ops` in --json) at the same "
            f"rates, the slowest plus GMP's limb work and {PACKED_OVERHEAD_S:g} s of build and start-up; "
            f"limit: shipped with the task, keeping brute force ≥ {BRUTE_FORCE_MARGIN:g}× over it at the "
            f"fastest rate and the packed route ≤ 1/{PACKED_MARGIN:g} of it at the slowest "
            "(docs/dataset.md, The hard split)"
        )
        notes.append(
            f"hard-eval (seed {HARD_EVAL_SEED}) is held out: train on hard-train, evaluate on hard-eval"
        )
    if args.split not in ("all", "hard"):
        notes.append(
            f"showing the {args.split} split; `--split all` lists train + eval, `--split hard` the rest"
        )
    where = f"split={args.split}" + ("" if args.max_p is None else f", max_p={args.max_p}")
    # A light box and short headers so that the rows fit 80 columns (`tasks | cat`); no cell wraps
    # or shortens, the ids least of all: other commands take them (`prompt ID`, `--task ID`). The
    # title and the notes are lines of their own, never wrapped off a terminal (issue 41: as the
    # table's caption, rich's 80-column wrap lost a letter at each break, and broke the path).
    table = Table(
        box=box.SIMPLE_HEAD,
        padding=(0, 0, 0, 1),
        pad_edge=False,
    )
    # No seed column: the id ends with it (`_s<seed>`), and --json has it. With hard tasks the
    # training columns give way to the packed route's estimate and the shipped limit.
    if hard:
        headers: tuple[str, ...] = (
            "id",
            "p",
            "H",
            "split",
            "kernel mul-adds",
            "brute force (est.)",
            "packed (est.)",
            "limit",
            "prompt tokens",
        )
    else:
        headers = (
            "id",
            "p",
            "H",
            "split",
            "train frac",
            "margin",
            "kernel mul-adds",
            "brute force (est.)",
            "prompt tokens",
        )
    rows = []
    for r in records:
        low, high = brute_force_estimate_s(r.kernel_mul_adds)
        cells = {
            "id": r.id,
            "p": str(r.p),
            "H": str(r.hidden),
            "split": r.split,
            "train frac": f"{r.train_fraction:g}",
            "margin": f"{r.min_margin:,}",
            "kernel mul-adds": f"{r.kernel_mul_adds:,}",
            "brute force (est.)": format_range(low, high),
            "packed (est.)": format_range(*hard[r.id]["packed_estimate_s"]) if r.id in hard else "-",
            "limit": f"{default_limit if r.timeout_s is None else r.timeout_s:g} s",
            "prompt tokens": f"{approx}{tokens[r.id]:,}",
        }
        rows.append(tuple(cells[h] for h in headers))
    for i, header in enumerate(headers):  # a header may wrap; a cell never does
        widest = max((len(row[i]) for row in rows), default=1)
        table.add_column(header, justify="left" if header in ("id", "split") else "right", min_width=widest)
    for row in rows:
        table.add_row(*row)
    from lean_mod_add_proof.grading.kernels import CHECKERS  # issue 36: what `kernels = all` costs

    factors = ", ".join(f"{c.name} {c.time_factor:g}x" for c in CHECKERS)
    notes.append(
        f"kernels=all adds, after the judge, one CPU budget per checker of its factor x the official "
        f"replay's CPU seconds ({factors}; never under timeout_s): at worst "
        f"{sum(c.time_factor for c in CHECKERS):g} x timeout_s CPU seconds more per grade, about as "
        "many seconds on a free core (docs/grading.md)"
    )
    out = console()
    out.print(f"{len(records)} task(s) in {args.tasks_dir} ({where})", markup=False, highlight=False)
    # Off a terminal the rows keep rich's own width ($COLUMNS, else 80: a header wraps first).
    rows_out = out if is_terminal() else Console(no_color=True, highlight=False)
    rows_out.print(table)
    for note in notes:
        out.print(note, markup=False, highlight=False)
    return 0


def cmd_prompt(args: argparse.Namespace) -> int:
    from lean_mod_add_proof.grading.result import GraderConfig
    from lean_mod_add_proof.prompt import SYSTEM_PROMPT, task_prompt

    defaults = GraderConfig()
    record = _find(args.task_id, args.tasks_dir)
    shipped = record.timeout_s if record.timeout_s is not None else defaults.timeout_s
    timeout_s = args.timeout_s if args.timeout_s is not None else shipped  # as the taskset states it
    prompt = task_prompt(
        record,
        args.tasks_dir,
        timeout_s=timeout_s,
        lean_toolchain=defaults.lean_toolchain,
        axioms_mode=args.axioms_mode,
        memory_mb=defaults.memory_mb,
    )
    if args.system:
        print(f"[system]\n{SYSTEM_PROMPT}\n\n[user]")
    sys.stdout.write(prompt)
    return 0


def cmd_reference(args: argparse.Namespace) -> int:
    from lean_mod_add_proof.constants import reference_submission

    record = _find(args.task_id, args.tasks_dir)
    sys.stdout.write(reference_submission(record.p))
    return 0


def _guarded(handler):
    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except TaskSetError as exc:
            print_error(f"{args.command}: {exc}")
            return EXIT_USAGE

    return run


def register(commands: argparse._SubParsersAction) -> None:
    """Add this module's sub-commands."""
    p = commands.add_parser("tasks", help="list the tasks of a task set")
    p.add_argument(
        "--split",
        choices=SPLIT_CHOICES,
        default=DEFAULT_SPLIT,
        help=f"which split (default: {DEFAULT_SPLIT}, as in vf-eval; `all` is train + eval, the seed's "
        "grid; `hard` is p > 23, beyond brute force within its limit by the estimate: `hard-train` "
        f"and the held-out `hard-eval` (seed {HARD_EVAL_SEED}))",
    )
    p.add_argument("--max-p", type=int, default=None, help="only tasks with p <= N")
    _tasks_dir_arg(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="print the rows of tasks.jsonl as a JSON list, each with its prompt_tokens and tokenizer "
        "(hard tasks: both estimates, the packed route's operation count and the limit's margins)",
    )
    p.add_argument(
        "--markdown",
        action="store_true",
        help="print the hard tasks listed as a Markdown table (the one docs/dataset.md quotes)",
    )
    p.add_argument(
        "--sort",
        choices=("id", "kernel-mul-adds", "prompt-tokens"),
        default="id",
        help="row order: by task id, by the kernel's work (Int multiply-adds of the brute force), "
        "or by prompt size",
    )
    p.add_argument(
        "--tokenizer",
        default="auto",
        metavar="SPEC",
        help="how prompt tokens are counted: auto (default: $LEAN_MOD_ADD_PROOF_TOKENIZER, else "
        "tiktoken o200k_base if its vocabulary is on disk, else an estimate), estimate, "
        "tiktoken:<encoding>, or hf:<model name or path> (transformers/tokenizers)",
    )
    p.set_defaults(handler=_guarded(cmd_tasks))

    p = commands.add_parser("prompt", help="print the user prompt of one task, as the model sees it")
    p.add_argument("task_id", help=TASK_ID_HELP)
    _tasks_dir_arg(p)
    p.add_argument(
        "--timeout-s",
        type=float,
        default=None,
        help="time limit stated in the rules (default: the task's shipped limit, else the grader's)",
    )
    p.add_argument(
        "--axioms-mode",
        choices=("subset", "exact"),
        default="subset",
        help="the axiom rule stated in the prompt: any subset of the allowed three, or exactly them "
        "(default: subset; the grader's axioms_mode setting)",
    )
    p.add_argument("--system", action="store_true", help="also print the system prompt")
    p.set_defaults(handler=_guarded(cmd_prompt))

    p = commands.add_parser("reference", help="print the reference proof (the whole Submission.lean)")
    p.add_argument("task_id", help=TASK_ID_HELP)
    _tasks_dir_arg(p)
    p.set_defaults(handler=_guarded(cmd_reference))
