"""drevt-sweep: an HPC batch-scheduling simulator and a tracked experiment-sweep orchestrator."""


def __getattr__(name: str):
    """``__version__`` is looked up on first use: ``importlib.metadata`` costs more at start-up
    than a small ``drevt-sim`` run spends simulating."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("drevt-sweep")
    except PackageNotFoundError:  # running from a source tree that is not installed
        found = "0.0.0+unknown"
    globals()["__version__"] = found
    return found
