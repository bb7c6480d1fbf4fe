"""The assignments' sources and releases: ``make release`` (release.py), the hidden tests it
writes into the test cells (hidden_tests.py), and a throw-away nbgrader course for releasing,
grading and tests (nbgrader_course.py).
"""
