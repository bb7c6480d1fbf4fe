"""The hub: the course on a local JupyterHub (``make hub``, ``python -m tools.hub``), one module a job:
the program (local.py), its users and their folders (users.py), each user's view of the machine (views.py), what
the machine must provide (machine.py), the configuration files it writes (config.py), the instructor's course
folder (course.py) and the term's clean-up (cleanup.py); and the guards nbgrader_config.py puts in front of
nbgrader's formgrader and collect (formgrader_guard.py, guarded_collect.py).
"""
