"""The checks behind tools/verify.py: one module per assignment.

``<assignment>.py`` builds one check per graded test cell (``CHECKS``);
``probes.py`` is how checks are written and how the sandbox's results are read
back; ``harness.py`` is the program that runs inside the sandbox next to a
submission's code, and holds nothing a student may not see.
"""
