"""Which code a config may make Hydra run: only drevt-sweep's own callbacks.

Hydra instantiates every ``hydra.callbacks.*._target_`` (and any ``_target_`` nested in the
launcher's or sweeper's settings) before the app starts, and Python's logging set-up
(``hydra.job_logging``, ``hydra.hydra_logging``) calls any ``()`` factory or handler ``class``:
a line in a preset would run any callable. drevt-sweep refuses every such target outside its own package, before Hydra
instantiates anything, with exit code 2. A callback of your own is allowed by naming it in the
environment variable ``DREVT_ALLOW_CALLBACKS`` (comma-separated targets, ``*`` for all): a
switch that a config file cannot set for itself. Launchers and sweepers themselves are
Hydra's installed plugins (Hydra refuses any other class there).
"""

from __future__ import annotations

import os

ALLOW_ENV = "DREVT_ALLOW_CALLBACKS"
OWN_PACKAGE = "drevt_sweep."
# The one _target_ of each of these nodes is a Hydra plugin, checked by Hydra itself.
PLUGIN_NODES = ("launcher", "sweeper")
LOGGING_NODES = ("job_logging", "hydra_logging")  # logging.config.dictConfig's input
LOGGING_PACKAGE = "logging."  # the standard library's handlers and formatters


class CallbackRefused(Exception):
    """A config names code that drevt-sweep does not run without being told to."""


def allowed_targets() -> set[str]:
    return {t.strip() for t in os.environ.get(ALLOW_ENV, "").split(",") if t.strip()}


def check_hydra_targets(hydra_node) -> None:
    """Raise :class:`CallbackRefused` for the first ``_target_`` under ``hydra`` that is
    neither drevt-sweep's own nor allowed by ``DREVT_ALLOW_CALLBACKS``."""
    from omegaconf import OmegaConf

    tree = OmegaConf.to_container(hydra_node, resolve=False) if hydra_node is not None else {}
    allowed = allowed_targets()
    for path, key, target in _targets(tree, "hydra"):
        parts = path.split(".")
        if len(parts) == 2 and parts[1] in PLUGIN_NODES and key == "_target_":
            continue  # hydra.launcher._target_ / hydra.sweeper._target_: a plugin
        if target.startswith(OWN_PACKAGE) or target in allowed or "*" in allowed:
            continue
        if parts[1:2] and parts[1] in LOGGING_NODES and target.startswith(LOGGING_PACKAGE):
            continue
        raise CallbackRefused(
            f"{path}.{key} is '{target}': a config may only name drevt-sweep's own "
            f"callbacks ({OWN_PACKAGE}*), since Hydra would run it as code; to allow it, set "
            f"{ALLOW_ENV}={target} in the environment"
        )


def _targets(node, path: str):
    """(path, key, target) of every ``_target_`` in a plain config tree, and of every
    ``()`` or ``class`` in its logging sections."""
    if isinstance(node, dict):
        keys = ["_target_"]
        if path.split(".")[1:2] and path.split(".")[1] in LOGGING_NODES:
            keys += ["()", "class"]
        for key in keys:
            if node.get(key) is not None:
                yield path, key, str(node[key])
        for key, value in node.items():
            yield from _targets(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _targets(value, f"{path}[{i}]")


def guard_hydra_callbacks() -> None:
    """Check the targets in Hydra's composed config before Hydra instantiates its callbacks
    (Hydra offers no hook before that: its ``Callbacks`` class is wrapped, once)."""
    from hydra._internal import hydra as hydra_internal

    original = hydra_internal.Callbacks
    if getattr(original, "_drevt_checked", False):
        return

    class CheckedCallbacks(original):
        _drevt_checked = True

        def __init__(self, config=None, *args, **kwargs) -> None:
            if config is not None and "hydra" in config:
                try:
                    check_hydra_targets(config.hydra)
                except CallbackRefused as exc:
                    raise SystemExit(f"drevt-sweep: error: {exc}") from None
            super().__init__(config, *args, **kwargs)

    hydra_internal.Callbacks = CheckedCallbacks
