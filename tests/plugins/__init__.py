"""The suite's pytest plugins, one job each, registered by tests/conftest.py (``pytest_plugins``);
``colab_outcome`` alone is loaded only into one background run (tests/test_every_cpu.py, IN_COLAB)."""
