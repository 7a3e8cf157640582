"""drevt-sweep: an HPC batch-scheduling simulator and a tracked experiment-sweep orchestrator."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("drevt-sweep")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"
