"""The grader: `make grade` (``python -m tools.grading``) runs nbgrader's autograde on every
submission in worker processes, verifies it outside its kernel, merges the private gradebooks and
writes grades.csv, integrity.csv and the feedback (run.py); it proves itself on the solutions first
(self_check.py).
"""
