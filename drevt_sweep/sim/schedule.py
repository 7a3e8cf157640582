"""What the engine returns: when each job ran, aligned row for row with the job table."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, eq=False)
class Schedule:
    """A simulated or replayed schedule.

    Arrays have one entry per row of the input ``JobTable`` (same order). Rejected jobs (asking
    for more nodes than the machine has) never run: their begin/end/run_time are NaN and they
    are left out of every metric.
    """

    mode: str  # "replay" or "simulation"
    total_nodes: int
    begin: np.ndarray  # float64
    end: np.ndarray  # float64, == begin + run_time exactly
    run_time: np.ndarray  # float64, the time the job actually held its nodes
    killed: np.ndarray  # bool, stopped at its time limit
    rejected: np.ndarray  # bool, could never run on this machine
    warnings: dict[str, int] = field(default_factory=dict)  # e.g. replay over-commit instants
    # On a machine with partitions (drevt_sweep.sim.partitioned): the machine, each job's
    # partition (int32 index into machine.partitions, -1 rejected) and resolved per-node
    # request (``machine.Placement``). None on a single pool of whole nodes.
    machine: object | None = None
    placement: object | None = None

    @property
    def ran(self) -> np.ndarray:
        return ~self.rejected

    def __len__(self) -> int:
        return int(self.begin.shape[0])
