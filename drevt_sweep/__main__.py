"""``python -m drevt_sweep`` runs the sweep app (same as the ``drevt-sweep`` command)."""

from .sweep.app import main

main()
