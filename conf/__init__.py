"""Hydra configuration, shipped inside the package as ``drevt_sweep.conf``."""
