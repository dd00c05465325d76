"""`lean-mod-add-proof docs [TOPIC]`: the project's docs, from the installed package (the wheel
carries README.md and docs/), so that a wheel or Hub user reads the same pages as a checkout."""

from __future__ import annotations

import argparse
from pathlib import Path

from lean_mod_add_proof.cli.exits import EXIT_OK, EXIT_USAGE, print_error
from lean_mod_add_proof.cli.shipped import shipped_dir, shipped_places

#: Where the docs are: in the wheel, else in a checkout.
PACKAGED_DOCS, CHECKOUT_DOCS = shipped_places("docs")


def docs_dir() -> Path | None:
    """The folder holding the docs' pages."""
    return shipped_dir("docs", "*.md")


def topics(folder: Path) -> dict[str, Path]:
    """topic name -> page: `README`, every docs/*.md and `container` (container/README.md, which
    the wheel carries as docs/container.md) (pure but for the listing)."""
    pages = {p.stem: p for p in sorted(folder.glob("*.md")) if p.name != "README.md"}
    readme = folder / "README.md" if (folder / "README.md").is_file() else folder.parent / "README.md"
    if readme.is_file():
        pages["README"] = readme
    container = folder.parent / "container" / "README.md"
    if "container" not in pages and container.is_file():
        pages["container"] = container
    return pages


def find_topic(pages: dict[str, Path], asked: str) -> Path | None:
    """The page `asked` names, in any case and with or without `.md` (pure)."""
    wanted = asked.removesuffix(".md").removesuffix(".MD").lower()
    return next((page for name, page in pages.items() if name.lower() == wanted), None)


def cmd_docs(args: argparse.Namespace) -> int:
    folder = docs_dir()
    if folder is None:
        print_error(f"docs: no docs found in {PACKAGED_DOCS} or {CHECKOUT_DOCS}")
        return EXIT_USAGE
    pages = topics(folder)
    if args.topic is None:
        print("topics (lean-mod-add-proof docs TOPIC):")
        for name, page in sorted(pages.items()):
            print(f"  {name:<14} {page}")
        return EXIT_OK
    page = find_topic(pages, args.topic)
    if page is None:
        print_error(f"docs: no topic {args.topic!r}; topics: {', '.join(sorted(pages))}")
        return EXIT_USAGE
    print(page.read_text(encoding="utf-8"), end="")
    return EXIT_OK


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("docs", help="list the docs, or print one (README, grading, trust-model, ...)")
    p.add_argument(
        "topic", nargs="?", default=None, help="the page to print, e.g. grading (any case); none: list them"
    )
    p.set_defaults(handler=cmd_docs)
