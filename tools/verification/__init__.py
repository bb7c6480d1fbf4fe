"""Verification outside the kernel (verify.py says how it works, and which module does what).

Each assignment's checks are in its own folder,
``solutions/<assignment>/checks/verification.py``: one check per graded test
cell (``CHECKS``). Here, ``probes.py`` is how checks are written and how the sandbox's results are read
back; ``harness.py`` is the program that runs inside the sandbox next to a
submission's code, and holds nothing a student may not see.
"""
