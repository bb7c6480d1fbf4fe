"""``python -m tools.hub``: what ``make hub`` and ``make hub-clean`` run (local.py)."""

import sys

from .local import main

sys.exit(main())
