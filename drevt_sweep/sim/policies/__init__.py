"""Scheduling policies, one module per concept, found by name in a registry.

* ``priority``: the order of the waiting queue (fcfs, sjf, ljf, smallest, largest), fixed at
  submission; ``literature`` adds F1-F4. Priorities that change while jobs wait (``dynamic``:
  ``multifactor`` for Slurm's, ``wfp3``, ``unicef``) register with ``register_dynamic_priority``.
* ``none``, ``easy`` (also ``easy_drevt``), ``conservative``: backfill policies, each a class
  with ``select(now, queue, cluster) -> jobs to start now`` (see ``base.BackfillPolicy``).

Adding a policy = one new module in this package that registers itself with
``registry.register_priority`` / ``registry.register_backfill`` (it is imported automatically
below), plus a ``conf/policy/<name>.yaml`` for the sweep. Built-in policies keep a fixed order
in ``PRIORITY_POLICIES`` / ``BACKFILL_POLICIES``; new ones follow in module-name order.
"""

from __future__ import annotations

import importlib
import pkgutil

from . import priority  # noqa: F401  (registers the built-in priorities first, in order)
from . import none, easy, conservative  # noqa: F401,E401  (built-in backfills)
from .registry import (
    BACKFILLS,
    DYNAMIC_PRIORITIES,
    PRIORITIES,
    check_backfill,
    check_priority,
    check_priority_params,
    is_dynamic,
    make_backfill,
    priority_rank,
)

_INTERNAL = {"base", "registry", "dynamic"}
for _mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _mod not in _INTERNAL:
        importlib.import_module(f"{__name__}.{_mod}")

_BUILTIN_BACKFILL_ORDER = ("none", "easy", "conservative", "easy_drevt")
STATIC_PRIORITY_POLICIES: tuple[str, ...] = tuple(PRIORITIES)
DYNAMIC_PRIORITY_POLICIES: tuple[str, ...] = tuple(DYNAMIC_PRIORITIES)
PRIORITY_POLICIES: tuple[str, ...] = STATIC_PRIORITY_POLICIES + DYNAMIC_PRIORITY_POLICIES
BACKFILL_POLICIES: tuple[str, ...] = tuple(
    [b for b in _BUILTIN_BACKFILL_ORDER if b in BACKFILLS]
    + [b for b in BACKFILLS if b not in _BUILTIN_BACKFILL_ORDER]
)

__all__ = [
    "PRIORITY_POLICIES",
    "STATIC_PRIORITY_POLICIES",
    "DYNAMIC_PRIORITY_POLICIES",
    "is_dynamic",
    "check_priority_params",
    "BACKFILL_POLICIES",
    "check_priority",
    "check_backfill",
    "make_backfill",
    "priority_rank",
]
