"""pytest configuration. Shared helpers live in `helpers.py` (importable because this file puts
the tests directory on sys.path)."""

import pytest


@pytest.fixture
def comparator_host() -> None:
    """Skips the test where the comparator cannot run (`helpers.needs_comparator`)."""
    from helpers import require_comparator

    require_comparator()
