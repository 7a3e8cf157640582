"""The ``workload`` config group's schema, and its conversion to a ``WorkloadSpec``.

``conf/workload/*.yaml`` files are checked against :class:`WorkloadConf` when Hydra composes the
config (wired into ``SweepConfig.workload``); :func:`workload_spec` turns the composed section
into the engine-side :class:`~drevt_sweep.workload.WorkloadSpec`. Every default is the identity.
Times (``window_start``, ``window_end``, ``capacity[].time``) are strings so that both ISO
date-times and epoch seconds fit (YAML numbers are converted); ISO times without an offset are
wall clock in the trace's time zone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional

from omegaconf import MISSING

from ..sim.workload import DAY, Maintenance, WorkloadSpec


@dataclass
class CapacityStepConf:
    """The machine has ``total_nodes`` nodes from ``time`` on (until the next step)."""

    time: str = MISSING
    total_nodes: int = MISSING


@dataclass
class MaintenanceConf:
    """``nodes`` nodes lost every ``weekday`` (monday ... sunday, or daily) from ``start`` to
    ``end`` (HH:MM wall clock in the trace's zone; an end at or before the start is the next day)."""

    weekday: str = "tuesday"
    start: str = "08:00"
    end: str = "12:00"
    nodes: int = 100


@dataclass
class WorkloadConf:
    """Transforms of the job table between the reader and the engine (``drevt_sweep.workload``)."""

    name: str = "none"
    load_factor: float = 1.0  # offered load x f: inter-arrival gaps / f
    window_start: Optional[str] = None  # ISO (trace's zone) or epoch seconds; null = from the start
    window_end: Optional[str] = None  # exclusive; null = to the end
    max_jobs: Optional[int] = None  # the first N jobs (after the window)
    max_time: Optional[float] = None  # seconds after the window start / first submit
    warm_start: bool = False  # jobs running/queued at window_start occupy nodes / enter the queue
    capacity: List[CapacityStepConf] = field(default_factory=list)
    maintenance: List[MaintenanceConf] = field(default_factory=list)
    # maintenance windows generated up to this long after the last submit (at least two
    # periods); they recur after it (sim.capacity.CapacitySchedule.deadlines)
    maintenance_horizon_days: float = 28.0
    rescale_nodes: float = 1.0  # num_nodes x f, rounded half up, in [1, new machine size]
    rescale_machine_nodes: Optional[int] = None  # null = the trace's size x f
    shake: float = 0.0  # input shaking: submit += U(-shake, +shake) seconds, per seed


def _get(section: Any, key: str, default=None):
    if isinstance(section, dict):
        return section.get(key, default)
    return getattr(section, key, default)  # DictConfig (struct mode raises AttributeError) or dataclass


def _time(value):
    """Epoch seconds stay numbers; ISO strings stay strings (parsed with the trace's zone)."""
    if value is None or isinstance(value, (int, float)):
        return value
    text = str(value).strip()
    try:
        return float(text)
    except ValueError:
        return text


def workload_spec(cfg_section: Any, total_nodes: int | None = None) -> WorkloadSpec:
    """The ``WorkloadSpec`` of a composed ``workload`` section (DictConfig, dict or None).

    ``total_nodes``: the configured machine size (``system.total_nodes``), used as the cap of
    job-size rescaling when ``rescale_machine_nodes`` is not set.
    """
    if cfg_section is None:
        return WorkloadSpec()
    steps = tuple(
        (_time(_get(step, "time")), int(_get(step, "total_nodes")))
        for step in (_get(cfg_section, "capacity") or ())
    )
    maintenance = tuple(
        Maintenance(
            weekday=str(_get(m, "weekday", "tuesday")),
            start=str(_get(m, "start", "08:00")),
            end=str(_get(m, "end", "12:00")),
            nodes=int(_get(m, "nodes", 100)),
        )
        for m in (_get(cfg_section, "maintenance") or ())
    )
    max_time = _get(cfg_section, "max_time")
    rescale = float(_get(cfg_section, "rescale_nodes", 1.0))
    machine = _get(cfg_section, "rescale_machine_nodes")
    if machine is None and total_nodes is not None and rescale != 1:
        machine = int(total_nodes)
    return WorkloadSpec(
        load_factor=float(_get(cfg_section, "load_factor", 1.0)),
        window_start=_time(_get(cfg_section, "window_start")),
        window_end=_time(_get(cfg_section, "window_end")),
        max_jobs=_get(cfg_section, "max_jobs"),
        max_time=None if max_time is None else float(max_time),
        warm_start=bool(_get(cfg_section, "warm_start", False)),
        capacity=steps,
        maintenance=maintenance,
        maintenance_horizon=float(_get(cfg_section, "maintenance_horizon_days", 28.0)) * DAY,
        rescale_nodes=rescale,
        rescale_machine_nodes=machine,
        shake=float(_get(cfg_section, "shake", 0.0)),
    )
