"""The assignments' sources and releases: ``make release`` (release.py), the hidden tests it
writes into the test cells (hidden_tests.py), the shared helpers it copies into each helper cell
(helper_cells.py); a throw-away nbgrader course for releasing, grading and tests
(nbgrader_course.py); a notebook's answers (answers.py); the wrong implementations' and attacks'
format (wrong_implementations.py); what students must never see (leak_checks.py).
"""
