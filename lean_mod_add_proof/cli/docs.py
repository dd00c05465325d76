"""`lean-mod-add-proof docs [TOPIC]`: the project's docs, from the installed package (the wheel
carries README.md and docs/), so that a wheel or Hub user reads the same pages as a checkout."""

from __future__ import annotations

import argparse
from pathlib import Path

from lean_mod_add_proof.cli.exits import EXIT_OK, EXIT_USAGE, print_error

#: Where the docs are: in the wheel (pyproject's force-include), else in a checkout.
PACKAGED_DOCS = Path(__file__).resolve().parent.parent / "docs"
CHECKOUT_DOCS = Path(__file__).resolve().parent.parent.parent / "docs"


def docs_dir() -> Path | None:
    for candidate in (PACKAGED_DOCS, CHECKOUT_DOCS):
        if candidate.is_dir():
            return candidate
    return None


def topics(folder: Path) -> dict[str, Path]:
    """topic name -> page: `README` and every docs/*.md (pure but for the listing)."""
    pages = {p.stem: p for p in sorted(folder.glob("*.md"))}
    readme = folder / "README.md" if (folder / "README.md").is_file() else folder.parent / "README.md"
    if readme.is_file():
        pages["README"] = readme
    return pages


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
    page = pages.get(args.topic.removesuffix(".md"))
    if page is None:
        print_error(f"docs: no topic {args.topic!r}; topics: {', '.join(sorted(pages))}")
        return EXIT_USAGE
    print(page.read_text(encoding="utf-8"), end="")
    return EXIT_OK


def register(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("docs", help="list the docs, or print one (README, grading, trust-model, ...)")
    p.add_argument("topic", nargs="?", default=None, help="the page to print, e.g. grading; none: list them")
    p.set_defaults(handler=cmd_docs)
