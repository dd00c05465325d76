"""The grader settings' command-line flags: every boolean setting can be switched both ways
(issue 29: `--native-judge` defaulted to true and had no `--no-native-judge`), and `settings.py`
does not import `tasks.py` (the two imported each other)."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

from lean_mod_add_proof.cli import settings
from lean_mod_add_proof.cli.settings import add_grader_flags, config_from_args
from lean_mod_add_proof.grading.result import GraderSettings, flag_name

BOOLEAN_SETTINGS = [
    name
    for name, field in GraderSettings.model_fields.items()
    if settings._base_type(field.annotation) is bool
]


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_grader_flags(parser)
    return parser.parse_args(argv)


def test_there_are_boolean_settings_and_native_judge_is_one() -> None:
    assert "native_judge" in BOOLEAN_SETTINGS


@pytest.mark.parametrize("name", BOOLEAN_SETTINGS)
def test_every_boolean_setting_switches_on_and_off(name: str) -> None:
    flag = flag_name(name)
    negative = "--no-" + flag.removeprefix("--")
    assert getattr(config_from_args(_parse([flag])), name) is True
    assert getattr(config_from_args(_parse([negative])), name) is False
    default = GraderSettings.model_fields[name].default
    assert getattr(config_from_args(_parse([])), name) is default


def test_no_native_judge_chooses_the_interpreted_judge() -> None:
    assert GraderSettings.model_fields["native_judge"].default is True
    assert config_from_args(_parse(["--no-native-judge"])).native_judge is False


def test_boolean_help_names_both_spellings_and_the_default() -> None:
    parser = argparse.ArgumentParser()
    add_grader_flags(parser)
    text = parser.format_help()
    assert "--native-judge, --no-native-judge" in text
    assert "(default: on)" in text


def test_settings_does_not_import_tasks() -> None:
    tree = ast.parse(Path(settings.__file__).read_text())
    imported = [
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module is not None
    ]
    assert "lean_mod_add_proof.cli.tasks" not in imported
    assert imported, "the walk found no imports at all: the check would pass vacuously"


def test_the_taskset_help_names_vf_validates_flags_too() -> None:
    """vf-validate takes `--taskset.*`, not `--env.taskset.*` (issue 29, stumble 14)."""
    pytest.importorskip("verifiers")
    from lean_mod_add_proof.taskset import LeanTaskConfig, LeanTasksetConfig

    assert "vf-validate `--taskset.*`" in (LeanTasksetConfig.__doc__ or "")
    assert "vf-validate `--taskset.task.*`" in (LeanTaskConfig.__doc__ or "")
