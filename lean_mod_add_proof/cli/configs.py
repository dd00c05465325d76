"""Sub-command `configs [DIR]`: write the run configs (`configs/` of the repository: the vf-eval
smoke eval, the prime-rl orchestrator, ...) into DIR (default `./configs`), so that a wheel user
can run `vf-eval @ configs/eval.toml` as a checkout does. The wheel carries them as package data
(`lean_mod_add_proof/configs/`); in a checkout they are read from the repository's `configs/`.
Existing files are left alone unless `--force` is given.

Exit 0: written (or already identical); 1: a file differs and --force was not given; 2: usage
error (no configs found, DIR unusable)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lean_mod_add_proof.cli.exits import EXIT_OK, EXIT_PROBLEM, EXIT_USAGE, print_error
from lean_mod_add_proof.cli.shipped import shipped_dir, shipped_places

#: Where the wheel puts them, and where a checkout keeps them.
PACKAGED_CONFIGS, CHECKOUT_CONFIGS = shipped_places("configs")


def configs_source() -> Path | None:
    """The directory holding the shipped configs: the package's own copy, else the checkout's."""
    return shipped_dir("configs", "*.toml")


def config_files(source: Path) -> list[Path]:
    """Every config under `source`, relative to it, in a stable order (pure apart from listing)."""
    return sorted(p.relative_to(source) for p in source.rglob("*.toml") if p.is_file())


def cmd_configs(args: argparse.Namespace) -> int:
    source = configs_source()
    if source is None:
        print_error(f"configs: no configs found in {PACKAGED_CONFIGS} or {CHECKOUT_CONFIGS}")
        return EXIT_USAGE
    files = config_files(source)
    if args.list:
        print(f"configs shipped with this package (in {source}):")
        for rel in files:
            print(f"  {rel}")
        return EXIT_OK
    out: Path = args.dir
    if out.resolve() == source.resolve():
        print(f"configs: {out} is where they are read from; nothing to write")
        return EXIT_OK
    kept = []
    try:
        for rel in files:
            target = out / rel
            data = (source / rel).read_bytes()
            if target.exists() and target.read_bytes() == data:
                print(f"{target} is up to date")
                continue
            if target.exists() and not args.force:
                kept.append(target)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            print(f"wrote {target}")
    except OSError as exc:
        print_error(f"configs: cannot write into {out}: {exc.strerror or exc}")
        return EXIT_USAGE
    for target in kept:
        print(
            f"configs: kept {target}, which differs from the shipped one (--force overwrites)",
            file=sys.stderr,
        )
    if (out / "eval.toml").is_file():
        serve = "lean-mod-add-proof serve-baseline --port 8765 &"
        print(f"Next: `{serve}` then `vf-eval @ {out / 'eval.toml'}`.")
    return EXIT_PROBLEM if kept else EXIT_OK


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "configs",
        help="write the shipped run configs (vf-eval eval.toml, prime-rl) into DIR (default ./configs)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("dir", nargs="?", type=Path, default=Path("configs"), help="where to write them")
    p.add_argument("--force", action="store_true", help="overwrite files that differ")
    p.add_argument("--list", action="store_true", help="only list the shipped configs and where they are")
    p.set_defaults(handler=cmd_configs)
