"""Where a submission's code runs: bubblewrap (bubblewrap.py), the sandboxed kernel nbgrader starts
(kernel.py), the warm templates that give each submission a pristine Python (warm.py,
warm_template.py, warm_client.py), and the bounds on everything a submission leaves behind
(limits.py).

The hidden tests import ``tools.sandbox.limits`` inside the kernel (through
``tools.verification.probes``): this file imports nothing.
"""
