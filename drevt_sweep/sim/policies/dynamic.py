"""Priorities that change while jobs wait (age, fair-share), as the engine asks for them.

A static priority (``priority.py``) is one rank per job, fixed at submission. A dynamic one is an
object the engine consults during the simulation:

* ``key(now, j)``: job ``j``'s sort key at time ``now``; lower keys are served first, ties go to
  FCFS order (submit time, then table row). The engine asks for it when ``j`` arrives, and
  ``keys(now, jobs)`` (a list: the same keys, in one call) for every waiting job whenever
  ``refresh_due()`` says so.
* ``period``: how often the keys are recomputed, in simulated seconds. ``0``: before every
  scheduling pass (the literature's WFP3/UNICEF); ``> 0``: at the *ticks* ``t0 + k * period``
  (``k >= 1``, ``t0`` the first submission), which are events of their own while jobs wait
  (Slurm's ``PriorityCalcPeriod``).
* ``advance(now)``, ``start(j, now)``, ``end(j, now)``: the engine reports time passing and jobs
  starting and ending (fair-share accounts usage with them). At each event time the engine
  calls ``advance(now)`` first (every tick ``<= now`` is processed), then ``end`` for the
  completions, computes the arrivals' keys, recomputes everyone's if due, runs the pass and
  calls ``start`` for the jobs it started.
* ``kernel_args()``: the same policy as arrays for the compiled kernel (``sim.kernel``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from operator import attrgetter
from typing import Protocol

import numpy as np

from ...errors import ConfigError


@dataclass(frozen=True)
class PriorityInputs:
    """What a dynamic priority may know of the jobs (arrays aligned with the job table)."""

    submit: np.ndarray  # float64
    time_limit: np.ndarray  # float64, the user's estimate (the limit)
    num_nodes: np.ndarray  # int64
    total_nodes: int
    queue_code: np.ndarray
    queue_names: tuple[str, ...]
    user_code: np.ndarray  # -1 unknown
    user_names: tuple[str, ...]
    group_code: np.ndarray  # the group or account, -1 unknown
    group_names: tuple[str, ...]
    t0: float  # the first submission of a job that runs (ticks count from it)
    qos_code: np.ndarray | None = None  # the job's QOS (sacct), -1 unknown; None: all unknown
    qos_names: tuple[str, ...] = ()
    # what a running job is charged per second for fair-share (Slurm's billing TRES); None: its
    # nodes (whole-node pools); shared-node pools pass the CPUs it holds (``sim.shared``)
    charge: np.ndarray | None = None
    # shared-node pools: the CPUs each job asks for and the pool's CPUs (multifactor's job-size
    # factor weighs them in beside the nodes, as Slurm does); None: whole nodes
    cpus: np.ndarray | None = None
    total_cpus: int = 0


class DynamicPriority(Protocol):
    period: float

    def key(self, now: float, j: int) -> float: ...

    def keys(self, now: float, jobs) -> list[float]: ...

    def refresh_due(self) -> bool: ...

    def advance(self, now: float) -> None: ...

    def start(self, j: int, now: float) -> None: ...

    def end(self, j: int, now: float) -> None: ...

    @property
    def next_tick(self) -> float: ...

    def kernel_args(self) -> tuple: ...


class EveryPass:
    """Base of the priorities recomputed before every pass that account nothing."""

    period = 0.0
    next_tick = math.inf

    def refresh_due(self) -> bool:
        return True

    def keys(self, now: float, jobs) -> list[float]:
        key = self.key
        return [key(now, j) for j in jobs]

    def advance(self, now: float) -> None:
        pass

    def start(self, j: int, now: float) -> None:
        pass

    def end(self, j: int, now: float) -> None:
        pass


def lazy_list(attr: str) -> cached_property:
    """A per-job array (the attribute path ``attr``) as a Python list, made at its first use: the
    reference engine reads it per event, the compiled kernels take the arrays (``kernel_args``),
    and a sweep's many short compiled runs would pay for the lists every time (~0.6 ms on
    KTH-SP2)."""
    get = attrgetter(attr)
    return cached_property(lambda self: get(self).tolist())


def take_params(name: str, params: dict, defaults: dict) -> dict:
    """``defaults`` updated with ``params``; an unknown key is a ConfigError naming the known ones."""
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise ConfigError(
            f"priority {name!r} has no parameter(s) {', '.join(unknown)}; "
            f"it takes: {', '.join(sorted(defaults))}"
        )
    return {**defaults, **params}


def number(name: str, value, *, positive: bool = False) -> float:
    """A finite number >= 0 (> 0 with ``positive``), else a ConfigError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{name} must be a finite number, got {value!r}")
    if value < 0 or (positive and value == 0):
        raise ConfigError(f"{name} must be {'> 0' if positive else '>= 0'}, got {value!r}")
    return float(value)
