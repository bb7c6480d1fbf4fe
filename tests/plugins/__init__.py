"""pytest plugins of the suite, one job each, registered from tests/conftest.py (``pytest_plugins``)."""
