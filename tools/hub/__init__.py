"""The course on a local JupyterHub (local.py, ``make hub``, ``python -m tools.hub``), and the
guards nbgrader_config.py puts in front of nbgrader's formgrader and collect
(formgrader_guard.py, guarded_collect.py).
"""
