"""Name -> implementation tables for priority and backfill policies.

A policy module registers itself with a decorator when it is imported; ``drevt_sweep.policies``
imports every module of the package, so adding a policy is one new module (plus its
``conf/policy/*.yaml`` entry for the sweep).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ...errors import ConfigError
from .base import BackfillPolicy, PolicyContext

# key(submit, time_limit, num_nodes) -> sort keys, most significant first. Ties are always
# broken by FCFS order (submit time, then table row), so the order is total and deterministic.
PriorityKey = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, ...]]
BackfillFactory = Callable[[PolicyContext], BackfillPolicy]

PRIORITIES: dict[str, PriorityKey] = {}
BACKFILLS: dict[str, BackfillFactory] = {}
# Priorities that change while jobs wait (age, fair-share): name -> class taking
# (PriorityInputs, **params); see ``dynamic.DynamicPriority``.
DYNAMIC_PRIORITIES: dict[str, Callable[..., object]] = {}


def register_priority(name: str) -> Callable[[PriorityKey], PriorityKey]:
    def deco(fn: PriorityKey) -> PriorityKey:
        if name in PRIORITIES:
            raise ValueError(f"priority policy {name!r} registered twice")
        PRIORITIES[name] = fn
        return fn

    return deco


def register_dynamic_priority(name: str):
    """Register a class implementing ``dynamic.DynamicPriority`` under ``name``."""

    def deco(cls):
        if name in PRIORITIES or name in DYNAMIC_PRIORITIES:
            raise ValueError(f"priority policy {name!r} registered twice")
        DYNAMIC_PRIORITIES[name] = cls
        return cls

    return deco


def is_dynamic(name: str) -> bool:
    return name in DYNAMIC_PRIORITIES


def check_priority_params(name: str, params: dict | None) -> dict:
    """A dynamic priority's parameters, checked (static priorities take none)."""
    check_priority(name)
    params = dict(params or {})
    if name in DYNAMIC_PRIORITIES:
        return DYNAMIC_PRIORITIES[name].check_params(params)
    if params:
        raise ConfigError(f"priority {name!r} takes no parameters, got {', '.join(map(str, params))}")
    return params


def register_backfill(name: str, **params) -> Callable[[Callable[..., BackfillPolicy]], Callable[..., BackfillPolicy]]:
    """Register ``cls`` under ``name``; ``params`` are passed to it after the context, so one
    class can serve several named variants (``easy`` and ``easy_drevt``)."""

    def deco(cls):
        if name in BACKFILLS:
            raise ValueError(f"backfill policy {name!r} registered twice")
        BACKFILLS[name] = lambda ctx: cls(ctx, **params)
        return cls

    return deco


def check_priority(name: str) -> str:
    if name not in PRIORITIES and name not in DYNAMIC_PRIORITIES:
        raise ConfigError(
            f"unknown priority policy {name!r}; choose one of: "
            f"{', '.join([*PRIORITIES, *DYNAMIC_PRIORITIES])}"
        )
    return name


def check_backfill(name: str) -> str:
    if name not in BACKFILLS:
        raise ConfigError(
            f"unknown backfill policy {name!r}; choose one of: {', '.join(BACKFILLS)}"
        )
    return name


def priority_rank(name: str, submit: np.ndarray, time_limit: np.ndarray, num_nodes: np.ndarray) -> np.ndarray:
    """Each job's position (0 = served first) in the total order of priority policy ``name``
    (a dynamic priority's order changes as jobs wait: its rank is the FCFS order, its tie-break)."""
    keys = PRIORITIES[check_priority(name)](submit, time_limit, num_nodes) if name in PRIORITIES else ()
    n = submit.shape[0]
    row = np.arange(n, dtype=np.int64)
    # np.lexsort sorts by its *last* key first.
    order = np.lexsort((row, submit) + tuple(reversed(keys)))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = row
    return rank


def make_backfill(name: str, ctx: PolicyContext) -> BackfillPolicy:
    return BACKFILLS[check_backfill(name)](ctx)
