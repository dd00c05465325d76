"""Command-line flags for the grader settings, built from `GraderSettings` (each setting is defined
once: name, type, default, bounds and help all come from there), and one clear error for a bad
value that names the flag."""

from __future__ import annotations

import argparse
import types
import typing
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from lean_mod_add_proof.dataset.tasks import ANY_SPLIT, TaskRecord, TaskSetError, in_split
from lean_mod_add_proof.grading.result import GraderConfig, GraderSettings, flag_name

#: The smallest `--max-p` vf-eval accepts (`LeanTasksetConfig.max_p`'s bound).
MIN_MAX_P = 2


def _base_type(annotation: Any) -> Any:
    """`X | None` -> X (pure)."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else str
    return annotation


#: What `--grade-in` means for `grade`, the one command that can run inside a rollout's box.
GRADE_IN_HELP = (
    "`runtime` only where this grade runs inside a rollout's runtime box (the taskset passes it "
    "with grade_in=runtime): the toolchain's bin/ is then re-hashed before every grade; `host` "
    "otherwise (default: host)"
)


def add_grader_flags(
    parser: argparse.ArgumentParser, skip: tuple[str, ...] = (), *, in_runtime_box: bool = False
) -> None:
    """One flag per grader setting. Values are validated by GraderConfig, not by argparse, so a
    bad value gets the same message here as everywhere else (see `config_from_args`). `grade_in`
    only for a command that may itself be the grader in a rollout's box (`in_runtime_box`:
    `grade`); every other command grades here, and a flag it would ignore is refused (issue 41)."""
    group = parser.add_argument_group("grader settings")
    for name, field in GraderSettings.model_fields.items():
        if name in skip or (name == "grade_in" and not in_runtime_box):
            continue
        kind = _base_type(field.annotation)
        default = field.default
        help_text = (field.description or "").replace("%", "%%")
        if kind is bool:
            # Both `--x` and `--no-x`: a setting that defaults to true must be switchable off, and
            # default=None keeps "not given" apart from either choice (`config_from_args`).
            help_text += f" (default: {'on' if default else 'off'})"
            group.add_argument(
                flag_name(name),
                dest=name,
                action=argparse.BooleanOptionalAction,
                default=None,
                help=help_text,
            )
            continue
        if typing.get_origin(kind) is Literal:
            choices = typing.get_args(kind)
            help_text = GRADE_IN_HELP if name == "grade_in" else help_text + f" (default: {default})"
            group.add_argument(flag_name(name), dest=name, choices=choices, default=None, help=help_text)
            continue
        metavar = {int: "N", float: "SECONDS" if name.endswith("_s") else "X", Path: "DIR"}.get(kind, "VALUE")
        if default is not None:
            help_text += f" (default: {default})"
        group.add_argument(flag_name(name), dest=name, metavar=metavar, default=None, help=help_text)


def config_error(exc: ValidationError) -> str:
    """A one-line message per bad setting, naming its flag, without pydantic's boilerplate."""
    parts = []
    for error in exc.errors():
        loc = error.get("loc") or ()
        field = str(loc[0]) if loc else "?"
        message = str(error.get("msg", "invalid value"))
        given = error.get("input")
        parts.append(f"{flag_name(field)} {given!r}: {message[0].lower() + message[1:]}")
    return "; ".join(parts)


def config_from_args(args: argparse.Namespace, **fixed: Any) -> GraderConfig:
    """The GraderConfig the flags describe; ValueError with `config_error`'s message if a value
    is out of bounds or of the wrong kind."""
    values = {
        name: getattr(args, name)
        for name in GraderSettings.model_fields
        if getattr(args, name, None) is not None
    }
    values.update(fixed)
    try:
        return GraderConfig(**values)
    except ValidationError as exc:
        raise ValueError(config_error(exc)) from None


def select(records: list[TaskRecord], split: str, max_p: int | None) -> list[TaskRecord]:
    """The same filter the taskset applies (`--env.taskset.split`, `--env.taskset.max-p`). It lives
    here, not in `tasks.py`, so that `tasks.py` imports this module and not the other way (pure)."""
    return [r for r in records if in_split(r.split, split) and (max_p is None or r.p <= max_p)]


def select_tasks(records: list[TaskRecord], split: str, max_p: int | None) -> list[TaskRecord]:
    """The tasks of `split` with p <= `max_p`, refusing a `--max-p` exactly where vf-eval refuses
    it (`LeanTasksetConfig.max_p`: at least 2, and some task of the split must remain), with the
    same message. Raises TaskSetError, which every command reports as a usage error (pure)."""
    if max_p is not None:
        if max_p < MIN_MAX_P:
            raise TaskSetError(f"--max-p {max_p}: must be at least {MIN_MAX_P}")
        ps = sorted({r.p for r in records if in_split(r.split, split)})
        if ps and not any(p <= max_p for p in ps):
            which = "" if split in ("all", ANY_SPLIT) else f"{split} "
            raise TaskSetError(
                f"--max-p {max_p}: no {which}task has p <= {max_p} (the smallest p is {ps[0]})"
            )
    return select(records, split, max_p)
