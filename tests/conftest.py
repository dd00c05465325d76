"""pytest configuration. Shared helpers live in `helpers.py` (importable because this file puts
the tests directory on sys.path)."""
