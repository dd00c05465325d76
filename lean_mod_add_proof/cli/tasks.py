"""Sub-commands: TODO (being written)."""

from __future__ import annotations

import argparse


def register(commands: argparse._SubParsersAction) -> None:
    """Add this module's sub-commands."""
