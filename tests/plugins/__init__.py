"""The suite's pytest plugins, one job each, registered by tests/conftest.py (``pytest_plugins``)."""
