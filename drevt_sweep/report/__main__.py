"""``python -m drevt_sweep.report SWEEP_DIR``: the same as ``drevt-sweep-report``."""

import sys

from .html import main

sys.exit(main())
