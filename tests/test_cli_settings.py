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


def cli_import_graph() -> dict[str, set[str]]:
    """Which cli/ modules each cli/ module imports, counting every import statement, also those
    inside functions (a lazy import still closes a circle) and `from lean_mod_add_proof.cli import
    tasks` (pure reading of the sources)."""
    cli = Path(settings.__file__).parent
    names = {p.stem for p in cli.glob("*.py")}
    package = "lean_mod_add_proof.cli"
    graph: dict[str, set[str]] = {}
    for path in cli.glob("*.py"):
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == package:
                deps |= {a.name if a.name in names else "__init__" for a in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "lean_mod_add_proof.cli."
            ):
                deps.add((node.module or "").split(".")[2])
            elif isinstance(node, ast.Import):
                deps |= {
                    a.name.split(".")[2] for a in node.names if a.name.startswith("lean_mod_add_proof.cli.")
                }
        graph[path.stem] = deps - {path.stem}
    return graph


def test_cli_modules_import_each_other_in_one_direction() -> None:
    """Issue 29, stumble 17: settings.py imported tasks.py and tasks.py imported settings.py. No
    circle of any length is left among the cli/ modules."""
    graph = cli_import_graph()
    assert "settings" in graph["tasks"] and graph["settings"].isdisjoint({"tasks", "__init__"})

    def circle_from(start: str, path: tuple[str, ...]) -> tuple[str, ...] | None:
        for dep in sorted(graph.get(path[-1], ())):
            if dep == start:
                return (*path, dep)
            if dep not in path and (found := circle_from(start, (*path, dep))):
                return found
        return None

    circles = [c for m in sorted(graph) if (c := circle_from(m, (m,)))]
    assert circles == []


def test_the_taskset_help_names_vf_validates_flags_too() -> None:
    """vf-validate takes `--taskset.*`, not `--env.taskset.*` (issue 29, stumble 14)."""
    pytest.importorskip("verifiers")
    from lean_mod_add_proof.taskset import LeanTaskConfig, LeanTasksetConfig

    assert "vf-validate `--taskset.*`" in (LeanTasksetConfig.__doc__ or "")
    assert "vf-validate `--taskset.task.*`" in (LeanTaskConfig.__doc__ or "")
