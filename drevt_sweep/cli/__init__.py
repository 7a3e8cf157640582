"""Command-line programs that are not the Hydra app: ``drevt-sim`` (``sim``)."""
