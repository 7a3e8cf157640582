"""Which code a config may make Hydra run: only drevt-sweep's own callbacks.

Hydra instantiates every ``hydra.callbacks.*._target_`` (and any ``_target_`` nested in the
launcher's or sweeper's settings) before the app starts, and Python's logging set-up
(``hydra.job_logging``, ``hydra.hydra_logging``) calls any ``()`` factory or handler ``class``:
a line in a preset would run any callable. drevt-sweep refuses every such target before Hydra
instantiates anything, with exit code 2.

A name is judged by what it *is*, not by how it is spelled: both resolvers (Hydra's ``_locate``
and logging's ``dictConfig``) follow attributes, so ``drevt_sweep.sweep.app.os.makedirs`` and
``logging.os.makedirs`` are ``os.makedirs`` under an innocent prefix. The name is resolved the
way they resolve it (importing only inside ``drevt_sweep`` or ``logging``, never a module whose
import runs a program, ``__main__``), and then a ``_target_`` must be a Hydra ``Callback``
subclass defined in ``drevt_sweep``, and a logging factory or class must be a handler,
formatter or filter class of the standard ``logging`` package (what Hydra's default logging
configs use); a logging stream given as ``ext://`` must be ``sys.stdout`` or ``sys.stderr``
(``ext://`` resolves any object the same way). A callback of your own is allowed by naming it in
the environment variable ``DREVT_ALLOW_CALLBACKS`` (comma-separated targets, ``*`` for all): a
switch that a config file cannot set for itself. Launchers and sweepers themselves are Hydra's
installed plugins (Hydra refuses any other class there).
"""

from __future__ import annotations

import importlib
import logging
import os
import types

ALLOW_ENV = "DREVT_ALLOW_CALLBACKS"
OWN_PACKAGE = "drevt_sweep."
# The one _target_ of each of these nodes is a Hydra plugin, checked by Hydra itself.
PLUGIN_NODES = ("launcher", "sweeper")
LOGGING_NODES = ("job_logging", "hydra_logging")  # logging.config.dictConfig's input
LOGGING_PACKAGE = "logging."  # the standard library's handlers and formatters
LOGGING_MODULES = ("logging", "logging.handlers")
# What a factory or class in each section of a dictConfig must build.
LOGGING_KINDS = {"formatters": (logging.Formatter,), "handlers": (logging.Handler,),
                 "filters": (logging.Filter,)}
ANY_LOGGING_KIND = (logging.Formatter, logging.Handler, logging.Filter)
ALLOWED_STREAMS = ("ext://sys.stdout", "ext://sys.stderr")


class CallbackRefused(Exception):
    """A config names code that drevt-sweep does not run without being told to."""


def allowed_targets() -> set[str]:
    return {t.strip() for t in os.environ.get(ALLOW_ENV, "").split(",") if t.strip()}


def check_hydra_targets(hydra_node) -> None:
    """Raise :class:`CallbackRefused` for the first ``_target_`` under ``hydra`` that is
    neither drevt-sweep's own callback nor allowed by ``DREVT_ALLOW_CALLBACKS``, and for the
    first logging factory, class or ``ext://`` object that is not the standard library's."""
    from omegaconf import OmegaConf

    tree = OmegaConf.to_container(hydra_node, resolve=False) if hydra_node is not None else {}
    _check_tree(tree, "hydra")


def check_logging_config(log_node, path: str) -> None:
    """The same check for one logging config (``path`` names it in the error), just before
    Hydra hands it to ``logging.config.dictConfig``."""
    from omegaconf import OmegaConf

    if log_node is not None:
        _check_tree(OmegaConf.to_container(log_node, resolve=True), path)


def _check_tree(tree, root: str) -> None:
    allowed = allowed_targets()
    for path, key, target in _targets(tree, root):
        parts = path.split(".")
        if len(parts) == 2 and parts[1] in PLUGIN_NODES and key == "_target_":
            continue  # hydra.launcher._target_ / hydra.sweeper._target_: a plugin
        if target in allowed or "*" in allowed:
            continue
        in_logging = parts[1:2] and parts[1] in LOGGING_NODES
        if in_logging and key != "_target_":
            if _is_logging_class(target, parts[2] if len(parts) > 2 else ""):
                continue
            what = ("the standard logging module's handler, formatter and filter classes "
                    f"({LOGGING_PACKAGE}*) and streams ({', '.join(ALLOWED_STREAMS)})")
        else:
            if _is_own_callback(target):
                continue
            what = f"drevt-sweep's own callbacks ({OWN_PACKAGE}*)"
        raise CallbackRefused(
            f"{path}.{key} is '{target}': a config may only name {what}, since Hydra would "
            f"run it as code; to allow it, set {ALLOW_ENV}={target} in the environment"
        )


def _targets(node, path: str):
    """(path, key, target) of every ``_target_`` in a plain config tree, and of every
    ``()``, ``class`` or ``ext://`` value in its logging sections."""
    in_logging = path.split(".")[1:2] and path.split(".")[1] in LOGGING_NODES
    if isinstance(node, dict):
        keys = ["_target_"] + (["()", "class"] if in_logging else [])
        for key in keys:
            if node.get(key) is not None:
                yield path, key, str(node[key])
        for key, value in node.items():
            if in_logging and isinstance(value, str) and value.startswith("ext://"):
                yield path, str(key), value
            else:
                yield from _targets(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            if in_logging and isinstance(value, str) and value.startswith("ext://"):
                yield path, f"[{i}]", value
            else:
                yield from _targets(value, f"{path}[{i}]")


def _is_own_callback(target: str) -> bool:
    """Whether ``target``, resolved as Hydra resolves it, is a Hydra ``Callback`` subclass
    defined in drevt-sweep."""
    from hydra.experimental.callback import Callback

    found = _resolve(target, OWN_PACKAGE.rstrip("."))
    return (isinstance(found, type) and issubclass(found, Callback)
            and found.__module__.startswith(OWN_PACKAGE))


def _is_logging_class(target: str, section: str) -> bool:
    """Whether a dictConfig ``()``/``class`` names the standard library's own handler,
    formatter or filter class (of the kind its section builds), or ``ext://`` a standard
    stream."""
    if target.startswith("ext://"):
        return target in ALLOWED_STREAMS
    found = _resolve(target, "logging")
    return (isinstance(found, type) and issubclass(found, LOGGING_KINDS.get(section, ANY_LOGGING_KIND))
            and found.__module__ in LOGGING_MODULES)


def _resolve(name: str, package: str):
    """The object a dotted name stands for, found the way Hydra's ``_locate`` and logging's
    ``resolve`` find it (import the first part, then an attribute, else a submodule), or
    ``None`` when it is not inside ``package``, names a private part or ``__main__``, or
    does not resolve."""
    parts = name.split(".")
    if parts[0] != package or any(not p or p.startswith("_") for p in parts):
        return None
    try:
        found = importlib.import_module(parts[0])
        for i, part in enumerate(parts[1:], start=1):
            if hasattr(found, part):
                found = getattr(found, part)
            elif isinstance(found, types.ModuleType):
                found = importlib.import_module(".".join(parts[:i + 1]))
            else:
                return None
    except Exception:  # noqa: BLE001 - a name that does not resolve is refused, not a crash
        return None
    return found


def guard_hydra_callbacks() -> None:
    """Check the targets in Hydra's composed config before Hydra instantiates its callbacks,
    and each logging config before Hydra applies it (Hydra configures ``hydra_logging`` while
    composing, before its callbacks exist). Hydra offers no hook before either: its
    ``Callbacks`` class and its ``configure_log`` are wrapped, once."""
    from hydra._internal import hydra as hydra_internal
    from hydra.core import utils as hydra_utils

    original = hydra_internal.Callbacks
    if getattr(original, "_drevt_checked", False):
        return

    class CheckedCallbacks(original):
        _drevt_checked = True

        def __init__(self, config=None, *args, **kwargs) -> None:
            if config is not None and "hydra" in config:
                _refuse(check_hydra_targets, config.hydra)
            super().__init__(config, *args, **kwargs)

    hydra_internal.Callbacks = CheckedCallbacks
    hydra_internal.configure_log = _checked(hydra_internal.configure_log, "hydra.hydra_logging")
    hydra_utils.configure_log = _checked(hydra_utils.configure_log, "hydra.job_logging")


def _checked(configure_log, name: str):
    """``configure_log`` that first checks its logging config: Hydra's compose step applies
    ``hydra_logging`` (from ``hydra._internal.hydra``), a job applies ``job_logging`` (from
    ``hydra.core.utils``)."""

    def checked_configure_log(log_config, *args, **kwargs):
        _refuse(check_logging_config, log_config, name)
        return configure_log(log_config, *args, **kwargs)

    return checked_configure_log


def _refuse(check, *args) -> None:
    try:
        check(*args)
    except CallbackRefused as exc:
        raise SystemExit(f"drevt-sweep: error: {exc}") from None
